package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/dumbodb/dumbodb/internal/durablefile"
	"github.com/dumbodb/dumbodb/internal/formatversion"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Retryable writes: each database remembers, per logical session, the
// outcome of every statement of the session's latest txnNumber that
// changed something, so that a retried statement answers from it instead
// of running again. Outcomes travel in the log record of their write and
// are saved to the retry file before a checkpoint (docs/format/retry.md).

// SessionKey names a logical session: its lsid's id and uid.
type SessionKey struct {
	ID  [16]byte
	UID [32]byte
}

// RetryTTL is how long a session's outcomes are kept after its last write
// (logicalSessionTimeoutMinutes).
const RetryTTL = 30 * time.Minute

// retryLog is the outcomes one transaction adds: one session, one
// txnNumber, the statements it executed.
type retryLog struct {
	session  SessionKey
	txn      int64
	at       time.Time
	stmts    []int32
	outcomes []bsoncore.Document
}

// retryEntry is what the table holds for one session.
type retryEntry struct {
	txn   int64
	at    time.Time
	stmts map[int32]retryStmt
}

type retryStmt struct {
	lsn     uint64
	outcome bsoncore.Document
}

// retryTable is a database's outcomes, shared by its branches.
type retryTable struct {
	mu       sync.Mutex
	sessions map[SessionKey]*retryEntry
	dirty    bool // changed since the file was written
}

func newRetryTable() *retryTable { return &retryTable{sessions: map[SessionKey]*retryEntry{}} }

// lookup returns the outcome of statement stmt of txn, if it ran. A txn
// below the session's latest gets ErrTransactionTooOld.
func (t *retryTable) lookup(s SessionKey, txn int64, stmt int32) (bsoncore.Document, bool, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.sessions[s]
	switch {
	case e == nil || txn > e.txn:
		return nil, false, nil
	case txn < e.txn:
		return nil, false, fmt.Errorf("%w: retryable write with txnNumber %d is prohibited on this session "+
			"because a newer retryable write with txnNumber %d has already started", ErrTransactionTooOld, txn, e.txn)
	}
	st, ok := e.stmts[stmt]
	return st.outcome, ok, nil
}

// add merges one record's outcomes, logged at lsn.
func (t *retryTable) add(lsn uint64, r *retryLog) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.sessions[r.session]
	if e != nil && r.txn < e.txn {
		return // a replayed record older than the file's entry
	}
	switch {
	case e == nil:
		e = &retryEntry{txn: r.txn, stmts: make(map[int32]retryStmt, len(r.stmts))}
		t.sessions[r.session] = e
	case r.txn > e.txn:
		e.txn = r.txn
		clear(e.stmts) // a session's next write: reuse the map
	}
	e.at = r.at
	for i, s := range r.stmts {
		if _, ok := e.stmts[s]; !ok {
			e.stmts[s] = retryStmt{lsn: lsn, outcome: r.outcomes[i]}
		}
	}
	t.dirty = true
}

// rollBack forgets outcomes whose records the log lost (above durable).
func (t *retryTable) rollBack(durable uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for k, e := range t.sessions {
		for s, st := range e.stmts {
			if st.lsn > durable {
				delete(e.stmts, s)
			}
		}
		if len(e.stmts) == 0 {
			delete(t.sessions, k)
		}
	}
}

// save writes the table to dir/retry if it changed, leaving out sessions
// idle for longer than RetryTTL and the outcomes logged after upTo: a
// checkpoint at upTo lets replay skip the records up to it, whose outcomes
// the file must keep, while later records may still be lost by the log
// (writers go on beside a checkpoint's fold), and the file must not
// answer a retry of a write a crash undid.
func (t *retryTable) save(dir string, now time.Time, upTo uint64) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.dirty {
		return nil
	}
	for k, e := range t.sessions {
		if now.Sub(e.at) > RetryTTL {
			delete(t.sessions, k)
		}
	}
	file, later := t.encode(upTo)
	if err := durablefile.Replace(filepath.Join(dir, "retry"), file, 0o644); err != nil {
		return fmt.Errorf("write retry table: %w", err)
	}
	t.dirty = later // the next checkpoint writes them
	return nil
}

// encode is the file of the outcomes logged up to upTo; later reports
// whether outcomes logged after it were left out.
func (t *retryTable) encode(upTo uint64) (file []byte, later bool) {
	idx, body := bsoncore.AppendDocumentStart(nil)
	aidx, body := bsoncore.AppendArrayElementStart(body, "sessions")
	i := 0
	for k, e := range t.sessions {
		r := &retryLog{session: k, txn: e.txn, at: e.at}
		for s, st := range e.stmts {
			if st.lsn > upTo {
				later = true
				continue
			}
			r.stmts = append(r.stmts, s)
			r.outcomes = append(r.outcomes, st.outcome)
		}
		if len(r.stmts) == 0 {
			continue
		}
		body = appendRetryLog(body, strconv.Itoa(i), r)
		i++
	}
	body, _ = bsoncore.AppendArrayEnd(body, aidx)
	body, _ = bsoncore.AppendDocumentEnd(body, idx)
	out := make([]byte, 20, 20+len(body))
	h := formatversion.RetryFile.Header()
	copy(out, h[:])
	binary.LittleEndian.PutUint32(out[12:], crc32.Checksum(body, crcTable))
	binary.LittleEndian.PutUint32(out[16:], uint32(len(body)))
	return append(out, body...), later
}

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// loadRetryTable reads dir/retry (a missing file is an empty table).
func loadRetryTable(dir string) (*retryTable, error) {
	t := newRetryTable()
	path := filepath.Join(dir, "retry")
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return t, nil
	}
	if err != nil {
		return nil, err
	}
	if _, err := formatversion.RetryFile.ReadHeader(data); err != nil {
		if errors.Is(err, formatversion.ErrNoHeader) {
			err = errBadRetryFile
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(data) < 20 || int(binary.LittleEndian.Uint32(data[16:])) != len(data)-20 ||
		crc32.Checksum(data[20:], crcTable) != binary.LittleEndian.Uint32(data[12:]) {
		return nil, fmt.Errorf("%w %s", errBadRetryFile, path)
	}
	arr, ok := bsoncore.Document(data[20:]).Lookup("sessions").ArrayOK()
	if !ok {
		return nil, fmt.Errorf("%w %s: no sessions", errBadRetryFile, path)
	}
	vals, _ := arr.Values()
	for _, v := range vals {
		r, err := decodeRetryLog(v)
		if err != nil {
			return nil, fmt.Errorf("%w %s: %v", errBadRetryFile, path, err)
		}
		t.add(0, r)
	}
	t.dirty = false
	return t, nil
}

// appendRetryLog writes r as the log record's (and the file's) entry.
func appendRetryLog(dst []byte, key string, r *retryLog) []byte {
	idx, dst := bsoncore.AppendDocumentElementStart(dst, key)
	dst = bsoncore.AppendBinaryElement(dst, "id", 4, r.session.ID[:])
	dst = bsoncore.AppendBinaryElement(dst, "u", 0, r.session.UID[:])
	dst = bsoncore.AppendInt64Element(dst, "n", r.txn)
	dst = bsoncore.AppendDateTimeElement(dst, "t", r.at.UnixMilli())
	sidx, dst := bsoncore.AppendArrayElementStart(dst, "s")
	for i, s := range r.stmts {
		dst = bsoncore.AppendInt32Element(dst, strconv.Itoa(i), s)
	}
	dst, _ = bsoncore.AppendArrayEnd(dst, sidx)
	oidx, dst := bsoncore.AppendArrayElementStart(dst, "o")
	for i, o := range r.outcomes {
		dst = bsoncore.AppendDocumentElement(dst, strconv.Itoa(i), o)
	}
	dst, _ = bsoncore.AppendArrayEnd(dst, oidx)
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return dst
}

func decodeRetryLog(v bsoncore.Value) (*retryLog, error) {
	d, ok := v.DocumentOK()
	if !ok {
		return nil, errors.New("retry entry is not a document")
	}
	r := &retryLog{}
	_, id, ok1 := d.Lookup("id").BinaryOK()
	_, uid, ok2 := d.Lookup("u").BinaryOK()
	txn, ok3 := d.Lookup("n").Int64OK()
	at, ok4 := d.Lookup("t").DateTimeOK()
	stmts, ok5 := d.Lookup("s").ArrayOK()
	outs, ok6 := d.Lookup("o").ArrayOK()
	if !ok1 || !ok2 || !ok3 || !ok4 || !ok5 || !ok6 || len(id) != 16 || len(uid) != 32 {
		return nil, errors.New("retry entry lacks a field")
	}
	copy(r.session.ID[:], id)
	copy(r.session.UID[:], uid)
	r.txn, r.at = txn, time.UnixMilli(at)
	sv, _ := stmts.Values()
	ov, _ := outs.Values()
	if len(sv) != len(ov) {
		return nil, errors.New("retry entry: statements and outcomes differ in number")
	}
	for i := range sv {
		s, ok := sv[i].Int32OK()
		o, ok2 := ov[i].DocumentOK()
		if !ok || !ok2 {
			return nil, errors.New("retry entry: bad statement or outcome")
		}
		r.stmts = append(r.stmts, s)
		r.outcomes = append(r.outcomes, bytes.Clone(o))
	}
	return r, nil
}

// RetryOutcome returns the outcome of statement stmt of a retryable write,
// if an earlier try executed it. It is read under the branch's writer
// lock, so the try that ran before this one is either in it or not begun.
func (tx *Tx) RetryOutcome(s SessionKey, txn int64, stmt int32) (bsoncore.Document, bool, error) {
	if tx.retries == nil {
		return nil, false, nil
	}
	return tx.retries.lookup(s, txn, stmt)
}

// RecordOutcome notes that statement stmt of a retryable write ran with
// this outcome; it is logged with the transaction's changes. Statements
// that changed nothing need not be recorded (nothing would be logged).
func (tx *Tx) RecordOutcome(s SessionKey, txn int64, stmt int32, outcome bsoncore.Document) {
	if tx.retry == nil {
		tx.retry = &retryLog{session: s, txn: txn, at: time.Now()}
	}
	tx.retry.stmts = append(tx.retry.stmts, stmt)
	tx.retry.outcomes = append(tx.retry.outcomes, outcome)
}
