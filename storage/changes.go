package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"golang.org/x/sys/unix"

	"github.com/dumbodb/dumbodb/internal/durablefile"
	"github.com/dumbodb/dumbodb/internal/formatversion"
)

// The change log (docs/format/changes.md): the server's change events, in
// the order they became durable, for change streams to read.

// Change-log defaults and limits.
const (
	changeSegmentSize = 16 << 20
	changeHeaderSize  = 16
	changeEntryHeader = 16
	// changeWritebackBytes is how much of the active segment may be
	// written and not yet handed to the disk: past it, an append starts
	// the disk writing (without waiting), so that the sync when the
	// segment is full waits for little. Syncing a whole 16 MiB segment at
	// once held the log's writer for 26-45 ms: one insertMany of 1,000
	// documents in 80 (BenchmarkInsertMany1000Raw).
	changeWritebackBytes = 1 << 20
	// DefaultChangeRetention and DefaultChangeRetentionBytes are the
	// defaults of changeStreamRetentionSeconds and changeStreamRetentionMB.
	DefaultChangeRetention      = 24 * time.Hour
	DefaultChangeRetentionBytes = 1 << 30
)

var changeCRC = crc32.MakeTable(crc32.Castagnoli)

// ChangeLog is the server's change log. Its methods are safe for
// concurrent use.
type ChangeLog struct {
	dir     string
	segSize int64

	mu        sync.Mutex
	segs      []*changeSeg // ascending; the last is the one appended to
	wbuf      []byte       // append's write buffer, kept for the next one
	next      uint64       // the sequence number of the next entry
	lastLSN   map[string]uint64
	notify    chan struct{} // closed (and replaced) at each append
	syncedSeq uint64
	dirty     bool

	retention      atomic.Int64 // time.Duration
	retentionBytes atomic.Int64
}

// changeSeg is one segment file.
type changeSeg struct {
	first    uint64
	f        *os.File
	size     int64
	written  int64     // bytes handed to the disk's writeback (startWriteback)
	firstAt  uint64    // cluster time of its first entry
	lastWall time.Time // wall time of its newest entry
}

// ChangeEntry is the events of one write on one branch.
type ChangeEntry struct {
	Seq    uint64
	At     uint64 // cluster time, seconds<<32 | increment
	Wall   time.Time
	DB     string
	Branch string
	LSN    uint64     // 0: not from the write-ahead log
	Txn    *ChangeTxn // the transaction that wrote it; nil: none
	Events []ChangeEvent
}

// ChangeTxn names the transaction of an entry's events.
type ChangeTxn struct {
	Session SessionKey
	Number  int64
}

// ChangeEvent is one change event as stored (docs/format/changes.md).
type ChangeEvent struct {
	Op     string
	Coll   string
	UUID   [16]byte
	Key    bsoncore.Document // documentKey
	Doc    bsoncore.Document // the document after the change
	Pre    bsoncore.Document // the document before the change
	Update bsoncore.Document // updateDescription
	To     string            // rename target
	Desc   bsoncore.Document // operationDescription
	Before bsoncore.Document // stateBeforeChange (modify)

	// While queued (changes_capture.go): whether the collection keeps
	// images, and a document event's key (nil once finished).
	images bool
	key    []byte
}

// openChangeLog opens (or creates) the change log in dir.
func openChangeLog(dir string) (*ChangeLog, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("change log: %w", err)
	}
	l := &ChangeLog{dir: dir, segSize: changeSegmentSize, next: 1, lastLSN: map[string]uint64{},
		notify: make(chan struct{})}
	l.retention.Store(int64(DefaultChangeRetention))
	l.retentionBytes.Store(DefaultChangeRetentionBytes)
	if err := l.readMark(); err != nil {
		return nil, err
	}
	if err := l.openSegments(); err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}

func (l *ChangeLog) markPath() string { return filepath.Join(l.dir, "synced") }

func (l *ChangeLog) readMark() error {
	data, err := os.ReadFile(l.markPath())
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("change log: %w", err)
	}
	doc := bsoncore.Document(data)
	if doc.Validate() != nil {
		return fmt.Errorf("change log: %s is damaged", l.markPath())
	}
	if s, ok := doc.Lookup("s").AsInt64OK(); ok {
		l.syncedSeq = uint64(s)
	}
	dbs, _ := doc.Lookup("dbs").DocumentOK()
	els, _ := dbs.Elements()
	for _, el := range els {
		if n, ok := el.Value().AsInt64OK(); ok {
			l.lastLSN[el.Key()] = uint64(n)
		}
	}
	return nil
}

// openSegments opens the segment files, reads the entries after the sync
// mark (raising lastLSN) and cuts a torn tail.
func (l *ChangeLog) openSegments() error {
	names, err := os.ReadDir(l.dir)
	if err != nil {
		return fmt.Errorf("change log: %w", err)
	}
	var firsts []uint64
	for _, n := range names {
		base, ok := strings.CutSuffix(n.Name(), ".chg")
		if first, err := strconv.ParseUint(base, 10, 64); ok && err == nil {
			firsts = append(firsts, first)
		}
	}
	sort.Slice(firsts, func(i, j int) bool { return firsts[i] < firsts[j] })
	for i, first := range firsts {
		f, err := os.OpenFile(l.segPath(first), os.O_RDWR, 0o644)
		if err != nil {
			return fmt.Errorf("change log: %w", err)
		}
		seg := &changeSeg{first: first, f: f}
		l.segs = append(l.segs, seg)
		if err := l.scanSegment(seg, i == len(firsts)-1); err != nil {
			return err
		}
	}
	if l.next <= l.syncedSeq && len(l.segs) == 0 {
		l.next = l.syncedSeq // the log's segments all expired
	}
	// The mark does not cover the entries after it yet.
	l.dirty = len(l.segs) > 0 && l.syncedSeq < l.next
	return nil
}

func (l *ChangeLog) segPath(first uint64) string {
	return filepath.Join(l.dir, fmt.Sprintf("%020d.chg", first))
}

// scanSegment finds a segment's end and its entries' times; the entries
// from the sync mark on raise lastLSN. The last segment is cut at its
// first invalid entry.
func (l *ChangeLog) scanSegment(seg *changeSeg, last bool) error {
	st, err := seg.f.Stat()
	if err != nil {
		return err
	}
	data := make([]byte, st.Size())
	if _, err := seg.f.ReadAt(data, 0); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	_, herr := formatversion.ChangeLog.ReadHeader(data)
	if herr != nil && !errors.Is(herr, formatversion.ErrNoHeader) {
		return fmt.Errorf("change log: segment %s: %w", seg.f.Name(), herr)
	}
	if herr != nil || len(data) < changeHeaderSize {
		if !last || len(data) >= changeHeaderSize {
			return fmt.Errorf("change log: segment %s has no valid header", seg.f.Name())
		}
		// Started just before a crash, its header never reached the
		// disk: it is empty, and starts again.
		l.next = seg.first
		return writeChangeHeader(seg)
	}
	off, seq := int64(changeHeaderSize), seg.first
	for {
		payload, ok := readChangeEntry(data, off, seq)
		if !ok {
			break
		}
		e, err := decodeChangeEntry(seq, payload)
		if err != nil {
			return err
		}
		if seq == seg.first {
			seg.firstAt = e.At
		}
		seg.lastWall = e.Wall
		if seq >= l.syncedSeq {
			l.noteLSN(e)
		}
		off += changeEntryHeader + int64(len(payload))
		seq++
	}
	seg.size = off
	l.next = seq
	if last && off < int64(len(data)) {
		return seg.f.Truncate(off)
	}
	return nil
}

func (l *ChangeLog) noteLSN(e ChangeEntry) {
	switch {
	case len(e.Events) == 1 && e.Events[0].Op == "dropDatabase":
		delete(l.lastLSN, e.DB)
	case e.LSN > l.lastLSN[e.DB]:
		l.lastLSN[e.DB] = e.LSN
	}
}

// readChangeEntry returns the payload of the entry at off if it is valid
// and has sequence number seq.
func readChangeEntry(data []byte, off int64, seq uint64) ([]byte, bool) {
	if off+changeEntryHeader > int64(len(data)) {
		return nil, false
	}
	h := data[off:]
	n := int64(binary.LittleEndian.Uint32(h))
	if n == 0 || off+changeEntryHeader+n > int64(len(data)) || binary.LittleEndian.Uint64(h[8:]) != seq {
		return nil, false
	}
	if crc32.Checksum(h[8:changeEntryHeader+n], changeCRC) != binary.LittleEndian.Uint32(h[4:]) {
		return nil, false
	}
	return h[changeEntryHeader : changeEntryHeader+n], true
}

// LastLSN is the highest write-ahead-log LSN of db whose entry the change
// log holds (0: none since the database was created).
func (l *ChangeLog) LastLSN(db string) uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lastLSN[db]
}

// append adds entries, assigning their sequence numbers, and wakes the
// readers. It does not sync (see the format doc).
func (l *ChangeLog) append(entries []ChangeEntry) error {
	if len(entries) == 0 {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	buf := l.wbuf[:0] // records for the active segment, not yet written
	for i := range entries {
		e := &entries[i]
		e.Seq = l.next
		at := len(buf)
		buf = appendChangeRecord(buf, *e)
		if l.needsRotation(int64(at), int64(len(buf)-at)) {
			if err := l.writeActive(buf[:at]); err != nil {
				return err
			}
			buf, at = append(buf[:0], buf[at:]...), 0
			if err := l.rotate(e.Seq); err != nil {
				return err
			}
		}
		seg := l.segs[len(l.segs)-1]
		if seg.size+int64(at) == changeHeaderSize { // the segment's first entry
			seg.firstAt = e.At
		}
		seg.lastWall = e.Wall
		l.next++
		l.noteLSN(*e)
	}
	err := l.writeActive(buf)
	if cap(buf) <= maxKeptChangeBuffer {
		l.wbuf = buf[:0]
	}
	if err != nil {
		return err
	}
	close(l.notify)
	l.notify = make(chan struct{})
	return nil
}

// maxKeptChangeBuffer is the largest write buffer the change log keeps
// for its next append: every write's events pass through it, and a
// buffer made per append was a tenth of an insert's allocations.
const maxKeptChangeBuffer = 1 << 20

// appendChangeRecord appends an entry with its header to dst.
func appendChangeRecord(dst []byte, e ChangeEntry) []byte {
	at := len(dst)
	dst = slices.Grow(dst, changeEntryHeader+entrySizeHint(e))
	dst = append(dst, make([]byte, changeEntryHeader)...)
	dst = appendChangeEntry(dst, e)
	rec := dst[at:]
	binary.LittleEndian.PutUint32(rec, uint32(len(rec)-changeEntryHeader))
	binary.LittleEndian.PutUint64(rec[8:], e.Seq)
	binary.LittleEndian.PutUint32(rec[4:], crc32.Checksum(rec[8:], changeCRC))
	return dst
}

// entrySizeHint is about the encoded size of an entry.
func entrySizeHint(e ChangeEntry) int {
	n := 160 + len(e.DB) + len(e.Branch)
	for _, ev := range e.Events {
		n += 96 + len(ev.Coll) + len(ev.To) + len(ev.Key) + len(ev.Doc) + len(ev.Pre) + len(ev.Update) + len(ev.Desc) + len(ev.Before)
	}
	return n
}

// needsRotation reports whether n more bytes, after buffered bytes not
// yet written, need a new segment. Called with l.mu held.
func (l *ChangeLog) needsRotation(buffered, n int64) bool {
	if len(l.segs) == 0 {
		return true
	}
	used := l.segs[len(l.segs)-1].size + buffered
	return used > changeHeaderSize && used+n > l.segSize
}

// writeActive writes buf at the end of the active segment.
func (l *ChangeLog) writeActive(buf []byte) error {
	if len(buf) == 0 {
		return nil
	}
	seg := l.segs[len(l.segs)-1]
	if _, err := seg.f.WriteAt(buf, seg.size); err != nil {
		return fmt.Errorf("change log: %w", err)
	}
	seg.size += int64(len(buf))
	l.dirty = true
	if seg.size-seg.written >= changeWritebackBytes {
		seg.startWriteback()
	}
	return nil
}

// startWriteback asks the kernel to start writing the segment's bytes
// appended since the last call, without waiting for them; a later sync
// then finds them written or on their way. Only a hint: an error leaves
// the bytes for that sync, which reports any failure.
func (seg *changeSeg) startWriteback() {
	unix.SyncFileRange(int(seg.f.Fd()), seg.written, seg.size-seg.written, unix.SYNC_FILE_RANGE_WRITE)
	seg.written = seg.size
}

// rotate starts a segment whose first entry is first; the previous one is
// synced first, so that only the active segment is ever unsynced.
func (l *ChangeLog) rotate(first uint64) error {
	if n := len(l.segs); n > 0 {
		if err := l.segs[n-1].f.Sync(); err != nil {
			return fmt.Errorf("change log: %w", err)
		}
	}
	f, err := os.OpenFile(l.segPath(first), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("change log: %w", err)
	}
	seg := &changeSeg{first: first, f: f}
	if err := writeChangeHeader(seg); err != nil {
		f.Close()
		return err
	}
	l.segs = append(l.segs, seg)
	l.trimLocked(time.Now())
	return nil
}

// writeChangeHeader makes seg an empty segment: its header alone.
func writeChangeHeader(seg *changeSeg) error {
	var h [changeHeaderSize]byte
	fh := formatversion.ChangeLog.Header()
	copy(h[:], fh[:])
	if err := seg.f.Truncate(0); err != nil {
		return fmt.Errorf("change log: %w", err)
	}
	if _, err := seg.f.WriteAt(h[:], 0); err != nil {
		return fmt.Errorf("change log: %w", err)
	}
	seg.size = changeHeaderSize
	return nil
}

// Sync makes every appended entry durable and rewrites the sync mark.
func (l *ChangeLog) Sync() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.syncLocked()
}

func (l *ChangeLog) syncLocked() error {
	if !l.dirty {
		return nil
	}
	if err := l.segs[len(l.segs)-1].f.Sync(); err != nil {
		return fmt.Errorf("change log: %w", err)
	}
	dbs := bsoncore.NewDocumentBuilder()
	names := make([]string, 0, len(l.lastLSN))
	for db := range l.lastLSN {
		names = append(names, db)
	}
	sort.Strings(names)
	for _, db := range names {
		dbs.AppendInt64(db, int64(l.lastLSN[db]))
	}
	mark := bsoncore.NewDocumentBuilder().AppendInt64("s", int64(l.next)).AppendDocument("dbs", dbs.Build()).Build()
	if err := durablefile.Replace(l.markPath(), mark, 0o644); err != nil {
		return fmt.Errorf("change log: %w", err)
	}
	l.syncedSeq, l.dirty = l.next, false
	return nil
}

// Close syncs and closes the log.
func (l *ChangeLog) Close() error {
	err := l.Sync()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.segs {
		s.f.Close()
	}
	l.segs = nil
	return err
}

// SetRetention changes how long and how much the log keeps.
func (l *ChangeLog) SetRetention(d time.Duration, bytes int64) {
	l.retention.Store(int64(d))
	l.retentionBytes.Store(bytes)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.trimLocked(time.Now())
}

// Retention is how long and how much the log keeps.
func (l *ChangeLog) Retention() (time.Duration, int64) {
	return time.Duration(l.retention.Load()), l.retentionBytes.Load()
}

// trimLocked removes the oldest segments beyond the retention bounds,
// never the active one.
func (l *ChangeLog) trimLocked(now time.Time) {
	var total int64
	for _, s := range l.segs {
		total += s.size
	}
	window, limit := time.Duration(l.retention.Load()), l.retentionBytes.Load()
	for len(l.segs) > 1 {
		old := l.segs[0]
		if total <= limit && now.Sub(old.lastWall) <= window {
			break
		}
		// After a crash, the entries from the sync mark on tell which
		// records' entries the log holds: the mark must cover these
		// before they go.
		if l.segs[1].first > l.syncedSeq && l.syncLocked() != nil {
			break
		}
		old.f.Close()
		os.Remove(old.f.Name())
		total -= old.size
		l.segs = l.segs[1:]
	}
}

// ChangeLogStats describes what the log keeps.
type ChangeLogStats struct {
	First, Next uint64 // first kept and next sequence numbers
	FirstAt     uint64 // cluster time of the first kept entry (0: none)
	Bytes       int64
	Segments    int
}

// Stats reports what the log keeps.
func (l *ChangeLog) Stats() ChangeLogStats {
	l.mu.Lock()
	defer l.mu.Unlock()
	st := ChangeLogStats{First: l.next, Next: l.next, Segments: len(l.segs)}
	if len(l.segs) > 0 {
		st.First, st.FirstAt = l.segs[0].first, l.segs[0].firstAt
		if l.segs[0].size == changeHeaderSize {
			st.FirstAt = 0
		}
	}
	for _, s := range l.segs {
		st.Bytes += s.size
	}
	return st
}

// Wait returns a channel closed at the next append.
func (l *ChangeLog) Wait() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.notify
}

// ErrChangeHistoryLost: the entries a reader asked for are no longer kept.
var ErrChangeHistoryLost = errors.New("change log: the entries asked for are no longer kept")
