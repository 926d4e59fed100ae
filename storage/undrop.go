package storage

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/dumbodb/dumbodb/internal/durablefile"
	"github.com/dumbodb/dumbodb/internal/formatversion"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Dropped databases kept for undrop (docs/format/undrop.md): dropDatabase
// renames the directory to .undrop-<t>-<db>, undrop renames it back.

const (
	undropPrefix      = ".undrop-"
	droppedRecordName = "dropped"
	droppedHeaderSize = 16
)

// DefaultUndropRetention is how long a dropped database stays restorable
// by default (the server's --undropRetentionHours).
const DefaultUndropRetention = 168 * time.Hour

// undropExpiryEvery is how often a running engine removes the drops past
// their retention.
const undropExpiryEvery = time.Hour

// DroppedDatabase is a dropped database kept for undrop.
type DroppedDatabase struct {
	Name      string
	DroppedAt time.Time
	By        string // who dropped it, "" when unknown
	Bytes     int64
	dir       string
}

// ErrNotDropped: no dropped database of that name is kept.
var ErrNotDropped = errors.New("no dropped database of that name is kept")

// dropKeeping renames a database's directory to a kept one and records
// who dropped it. Called with e.mu held.
func (e *Engine) dropKeeping(name, by string) error {
	now := time.Now()
	dir := filepath.Join(e.dir, fmt.Sprintf("%s%d-%s", undropPrefix, now.UnixNano(), name))
	size := e.SizeOnDisk(name)
	if err := os.Rename(e.dbDir(name), dir); err != nil {
		return fmt.Errorf("drop database: %w", err)
	}
	if err := durablefile.SyncDir(e.dir); err != nil {
		return fmt.Errorf("drop database: %w", err)
	}
	body := bsoncore.NewDocumentBuilder().AppendString("by", by).AppendInt64("bytes", size).Build()
	out := make([]byte, droppedHeaderSize, droppedHeaderSize+len(body))
	h := formatversion.Dropped.Header()
	copy(out, h[:])
	binary.LittleEndian.PutUint32(out[12:], crc32.Checksum(body, castagnoli))
	if err := durablefile.Replace(filepath.Join(dir, droppedRecordName), append(out, body...), 0o644); err != nil {
		e.log.Warn().Str("c", "STORAGE").Err(err).Str("db", name).Msg("recording who dropped a database")
	}
	return nil
}

// DroppedDatabases lists the dropped databases kept, newest first.
func (e *Engine) DroppedDatabases() ([]DroppedDatabase, error) {
	entries, err := os.ReadDir(e.dir)
	if err != nil {
		return nil, err
	}
	var out []DroppedDatabase
	for _, ent := range entries {
		if dd, ok := parseUndropDir(ent.Name()); ok && ent.IsDir() {
			dd.dir = filepath.Join(e.dir, ent.Name())
			dd.By, dd.Bytes = readDroppedRecord(dd.dir)
			out = append(out, dd)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].DroppedAt.After(out[j].DroppedAt) })
	return out, nil
}

// parseUndropDir reads .undrop-<t>-<db>.
func parseUndropDir(entry string) (DroppedDatabase, bool) {
	rest, ok := strings.CutPrefix(entry, undropPrefix)
	if !ok {
		return DroppedDatabase{}, false
	}
	ts, name, ok := strings.Cut(rest, "-")
	n, err := strconv.ParseInt(ts, 10, 64)
	if !ok || err != nil || name == "" {
		return DroppedDatabase{}, false
	}
	return DroppedDatabase{Name: name, DroppedAt: time.Unix(0, n)}, true
}

// readDroppedRecord reads who dropped a database and its size; a missing
// or damaged record reads as unknown.
func readDroppedRecord(dir string) (string, int64) {
	data, err := os.ReadFile(filepath.Join(dir, droppedRecordName))
	if err != nil {
		return "", 0
	}
	if _, err := formatversion.Dropped.ReadHeader(data); err != nil || len(data) < droppedHeaderSize {
		return "", 0
	}
	body := bsoncore.Document(data[droppedHeaderSize:])
	if crc32.Checksum(body, castagnoli) != binary.LittleEndian.Uint32(data[12:]) || body.Validate() != nil {
		return "", 0
	}
	by, _ := body.Lookup("by").StringValueOK()
	n, _ := body.Lookup("bytes").Int64OK()
	return by, n
}

// Undrop restores the newest kept drop of name as database to (name when
// empty), which must not exist.
func (e *Engine) Undrop(name, to string) (DroppedDatabase, error) {
	_, leave, _ := e.gate.enter(context.Background()) // waits while frozen
	defer leave()
	if to == "" {
		to = name
	}
	if err := e.checkDatabaseName(to); err != nil {
		return DroppedDatabase{}, err
	}
	dropped, err := e.DroppedDatabases()
	if err != nil {
		return DroppedDatabase{}, err
	}
	for _, dd := range dropped {
		if dd.Name == name {
			return dd, e.restoreDropped(dd, to)
		}
	}
	return DroppedDatabase{}, fmt.Errorf("%w: %s", ErrNotDropped, name)
}

func (e *Engine) restoreDropped(dd DroppedDatabase, to string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.dbs[to]; ok || isDatabaseDir(e.dbDir(to)) {
		return fmt.Errorf("%w: %s", ErrDatabaseExists, to)
	}
	if other := e.caseConflict(to); other != "" {
		return fmt.Errorf("%w: %q and %q", ErrDatabaseDiffersInCase, to, other)
	}
	if err := os.Remove(filepath.Join(dd.dir, droppedRecordName)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if err := os.Rename(dd.dir, e.dbDir(to)); err != nil {
		return err
	}
	if err := durablefile.SyncDir(e.dir); err != nil {
		return err
	}
	if e.onDisk != nil {
		e.onDisk[to] = true
	}
	return nil
}

// PurgeDropped removes every kept drop of name for good and reports how
// many there were.
func (e *Engine) PurgeDropped(name string) (int, error) {
	_, leave, _ := e.gate.enter(context.Background()) // waits while frozen
	defer leave()
	dropped, err := e.DroppedDatabases()
	if err != nil {
		return 0, err
	}
	n := 0
	for _, dd := range dropped {
		if dd.Name == name {
			if err := os.RemoveAll(dd.dir); err != nil {
				return n, err
			}
			n++
		}
	}
	if n == 0 {
		return 0, fmt.Errorf("%w: %s", ErrNotDropped, name)
	}
	return n, nil
}

// expireDropped removes the kept drops older than the retention: the
// dropped databases, and the collections dropped in open databases.
func (e *Engine) expireDropped(now time.Time) error {
	for _, d := range e.handles() {
		if d.holdIfOpen() {
			_, err := d.DroppedCollections(context.Background())
			d.release()
			if err != nil {
				e.log.Warn().Str("c", "STORAGE").Err(err).Str("db", d.name).Msg("removing dropped collections past their retention")
			}
		}
	}
	dropped, err := e.DroppedDatabases()
	if err != nil {
		return err
	}
	for _, dd := range dropped {
		if now.Sub(dd.DroppedAt) > e.opts.UndropRetention {
			if err := os.RemoveAll(dd.dir); err != nil {
				return err
			}
		}
	}
	return nil
}

// DroppedBytes is the disk space the kept drops hold.
func (e *Engine) DroppedBytes() int64 {
	dropped, _ := e.DroppedDatabases()
	var n int64
	for _, dd := range dropped {
		n += dirSize(dd.dir)
	}
	return n
}
