package storage

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/dumbodb/dumbodb/internal/formatversion"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// The decision log (docs/format/txnlog.md): the commit point of
// transactions that write to several databases.

const (
	decisionLogName   = "transactions.log"
	decisionLogHeader = 16
	// decisionLogCut is the size past which the file is cut back to its
	// header once no decision is outstanding.
	decisionLogCut = 1 << 20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// txnID names a transaction over several databases.
type txnID [16]byte

// decision is one decision read back: a committed transaction and the
// participants ("db@branch") whose recovery may need it.
type decision struct {
	id  txnID
	dbs []string
}

// decisionLog appends decisions and remembers, until start-up recovery is
// over, those it read at open.
type decisionLog struct {
	mu          sync.Mutex
	path        string
	f           *os.File // nil until the first decision (a descriptor less for most servers)
	size        int64
	outstanding int            // decisions whose commit marks are not durable yet
	readBack    map[txnID]bool // the decisions found at open
	failed      error          // a failed append leaves the file unusable
}

// openDecisionLog reads the file's decisions, if there is a file; it is
// opened for appending by the first decision.
func openDecisionLog(dir string) (*decisionLog, []decision, error) {
	l := &decisionLog{path: filepath.Join(dir, decisionLogName), readBack: map[txnID]bool{}}
	data, err := os.ReadFile(l.path)
	if errors.Is(err, os.ErrNotExist) || (err == nil && len(data) < decisionLogHeader) {
		return l, nil, nil // none, or a header torn at creation: no decision
	}
	if err != nil {
		return nil, nil, err
	}
	if _, err := formatversion.DecisionLog.ReadHeader(data); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", decisionLogName, err)
	}
	decisions := readDecisions(data[decisionLogHeader:])
	for _, d := range decisions {
		l.readBack[d.id] = true
	}
	l.size = int64(len(data))
	return l, decisions, nil
}

// openForAppend opens the file at the first decision, starting it with
// a header if it has none. Called with mu held.
func (l *decisionLog) openForAppend() error {
	if l.f != nil {
		return nil
	}
	f, err := os.OpenFile(l.path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	l.f = f
	if l.size < decisionLogHeader {
		return l.cut()
	}
	return nil
}

// readDecisions decodes decisions up to the first torn or corrupt one.
func readDecisions(b []byte) []decision {
	var out []decision
	for len(b) >= 8 {
		n := int(binary.LittleEndian.Uint32(b))
		if n == 0 || 8+n > len(b) || crc32.Checksum(b[8:8+n], castagnoli) != binary.LittleEndian.Uint32(b[4:]) {
			break
		}
		doc := bsoncore.Document(b[8 : 8+n])
		_, id, ok := doc.Lookup("x").BinaryOK()
		if doc.Validate() != nil || !ok || len(id) != len(txnID{}) {
			break
		}
		d := decision{id: txnID(id)}
		if arr, ok := doc.Lookup("dbs").ArrayOK(); ok {
			vals, _ := arr.Values()
			for _, v := range vals {
				if s, ok := v.StringValueOK(); ok {
					d.dbs = append(d.dbs, s)
				}
			}
		}
		out = append(out, d)
		b = b[8+n:]
	}
	return out
}

// decide appends a commit decision and makes it durable: the commit point.
// done must follow once the participants' commit marks are durable.
func (l *decisionLog) decide(id txnID, dbs []string) error {
	arr := bsoncore.NewArrayBuilder()
	for _, d := range dbs {
		arr.AppendString(d)
	}
	payload := bsoncore.NewDocumentBuilder().AppendBinary("x", 0, id[:]).AppendArray("dbs", arr.Build()).
		AppendDateTime("t", time.Now().UnixMilli()).Build()
	rec := make([]byte, 8, 8+len(payload))
	binary.LittleEndian.PutUint32(rec, uint32(len(payload)))
	binary.LittleEndian.PutUint32(rec[4:], crc32.Checksum(payload, castagnoli))
	rec = append(rec, payload...)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.failed != nil {
		return l.failed
	}
	if err := l.openForAppend(); err != nil {
		return l.fail(err)
	}
	if _, err := l.f.WriteAt(rec, l.size); err != nil {
		return l.fail(err)
	}
	if err := l.f.Sync(); err != nil {
		return l.fail(err)
	}
	l.size += int64(len(rec))
	l.outstanding++
	return nil
}

// fail makes a failed append final: its bytes may or may not be on disk,
// so nothing may be appended after them (a torn decision in the middle
// would hide every later one). Called with mu held.
func (l *decisionLog) fail(err error) error {
	l.failed = fmt.Errorf("decision log %s: %w", decisionLogName, err)
	return l.failed
}

// done ends a decision's need: its commit marks are durable.
func (l *decisionLog) done() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.outstanding--
	if l.outstanding == 0 && l.size > decisionLogCut && l.readBack == nil {
		l.cut()
	}
}

// decided reports whether the file held a decision for id at open.
func (l *decisionLog) decided(id txnID) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.readBack[id]
}

// finishRecovery cuts the file back once every database its decisions
// name has been recovered. Called with no commit outstanding (start-up).
func (l *decisionLog) finishRecovery() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.readBack = nil
	if l.size <= decisionLogHeader {
		return nil // no decision to drop
	}
	if err := l.openForAppend(); err != nil {
		return err
	}
	return l.cut()
}

// cut rewrites the open file as a bare header. Called with mu held.
func (l *decisionLog) cut() error {
	hdr := make([]byte, decisionLogHeader)
	fh := formatversion.DecisionLog.Header()
	copy(hdr, fh[:])
	if _, err := l.f.WriteAt(hdr, 0); err != nil {
		return err
	}
	if err := l.f.Truncate(decisionLogHeader); err != nil {
		return err
	}
	l.size = decisionLogHeader
	return l.f.Sync()
}

func (l *decisionLog) close() error {
	if l.f == nil {
		return nil
	}
	return l.f.Close()
}

// resolveDecisions opens every database a decision read at start-up
// names, so that their recovery applies what those decisions committed,
// then empties the file. A database that fails to open keeps the file.
func (e *Engine) resolveDecisions(decisions []decision) error {
	seen := map[string]bool{}
	for _, dec := range decisions {
		for _, p := range dec.dbs {
			name, _, _ := strings.Cut(p, "@")
			if seen[name] {
				continue
			}
			seen[name] = true
			err := e.Visit(context.Background(), name, func(d *Database) error {
				if err := d.hold(context.Background()); err != nil {
					return err
				}
				d.release()
				return nil
			})
			if err != nil && !errors.Is(err, ErrClosed) {
				return fmt.Errorf("recover database %s for the transactions it took part in: %w", name, err)
			}
		}
	}
	return e.decisions.finishRecovery()
}
