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

	"dumbodb/internal/durablefile"
)

// The change log (docs/format/changes.md): the server's change events, in
// the order they became durable, for change streams to read.

// Change-log defaults and limits.
const (
	changeSegmentSize = 16 << 20
	changeHeaderSize  = 16
	changeEntryHeader = 16
	changeMagic       = "DUMBOCHG"
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
	if len(data) < changeHeaderSize || string(data[:8]) != changeMagic {
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
	copy(h[:], changeMagic)
	binary.LittleEndian.PutUint32(h[8:], 1)
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

// ChangeReader reads the log from a sequence number on.
type ChangeReader struct {
	l   *ChangeLog
	seq uint64 // the next entry to read
	seg uint64 // first of the segment off is in (0: not positioned)
	off int64
}

// Reader starts reading at seq (0: at the next entry appended).
func (l *ChangeLog) Reader(seq uint64) (*ChangeReader, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if seq == 0 {
		seq = l.next
	}
	if len(l.segs) > 0 && seq < l.segs[0].first || seq > l.next {
		return nil, ErrChangeHistoryLost
	}
	return &ChangeReader{l: l, seq: seq}, nil
}

// Seq is the sequence number of the next entry the reader returns.
func (r *ChangeReader) Seq() uint64 { return r.seq }

// Next returns the next entry, or ok false at the end of the log.
func (r *ChangeReader) Next() (ChangeEntry, bool, error) {
	r.l.mu.Lock()
	if r.seq >= r.l.next {
		r.l.mu.Unlock()
		return ChangeEntry{}, false, nil
	}
	seg, end, err := r.position()
	r.l.mu.Unlock()
	if err != nil {
		return ChangeEntry{}, false, err
	}
	var h [changeEntryHeader]byte
	if _, err := seg.f.ReadAt(h[:], r.off); err != nil {
		return ChangeEntry{}, false, r.lost(err)
	}
	n := int64(binary.LittleEndian.Uint32(h[:]))
	if r.off+changeEntryHeader+n > end {
		return ChangeEntry{}, false, fmt.Errorf("change log: entry %d runs past its segment", r.seq)
	}
	rec := make([]byte, changeEntryHeader+n)
	copy(rec, h[:]) // the header is read already: read only the payload
	if _, err := seg.f.ReadAt(rec[changeEntryHeader:], r.off+changeEntryHeader); err != nil {
		return ChangeEntry{}, false, r.lost(err)
	}
	payload, ok := readChangeEntry(rec, 0, r.seq)
	if !ok {
		return ChangeEntry{}, false, fmt.Errorf("change log: entry %d is damaged", r.seq)
	}
	e, err := decodeChangeEntry(r.seq, payload)
	if err != nil {
		return ChangeEntry{}, false, err
	}
	r.seq++
	r.off += changeEntryHeader + n
	return e, true, nil
}

func (r *ChangeReader) lost(err error) error {
	if errors.Is(err, os.ErrClosed) {
		return ErrChangeHistoryLost
	}
	return fmt.Errorf("change log: %w", err)
}

// position finds the segment holding r.seq and r's offset in it, scanning
// from the segment's start when r is not positioned there. Called with
// l.mu held; returns the segment and its end.
func (r *ChangeReader) position() (*changeSeg, int64, error) {
	segs := r.l.segs
	i := sort.Search(len(segs), func(i int) bool { return segs[i].first > r.seq }) - 1
	if i < 0 {
		return nil, 0, ErrChangeHistoryLost
	}
	seg := segs[i]
	if r.seg == seg.first && r.off >= changeHeaderSize {
		return seg, seg.size, nil
	}
	r.seg, r.off = seg.first, changeHeaderSize
	for s := seg.first; s < r.seq; s++ {
		var h [changeEntryHeader]byte
		if _, err := seg.f.ReadAt(h[:], r.off); err != nil {
			return nil, 0, r.lost(err)
		}
		r.off += changeEntryHeader + int64(binary.LittleEndian.Uint32(h[:]))
	}
	return seg, seg.size, nil
}

// SeqAt is the sequence number of the first kept entry at or after the
// cluster time at (the next entry when there is none).
func (l *ChangeLog) SeqAt(at uint64) (uint64, error) {
	l.mu.Lock()
	start := l.next
	for i := len(l.segs) - 1; i >= 0; i-- {
		start = l.segs[i].first
		if l.segs[i].firstAt < at {
			break
		}
	}
	l.mu.Unlock()
	r, err := l.Reader(start)
	if err != nil {
		return 0, err
	}
	for {
		seq := r.seq
		e, ok, err := r.Next()
		if err != nil || !ok {
			return r.seq, err
		}
		if e.At >= at {
			return seq, nil
		}
	}
}

var errBadChangeEntry = errors.New("change log: bad entry")

// appendChangeEntry appends an entry's payload (docs/format/changes.md).
func appendChangeEntry(dst []byte, e ChangeEntry) []byte {
	idx, dst := bsoncore.AppendDocumentStart(dst)
	dst = bsoncore.AppendTimestampElement(dst, "t", uint32(e.At>>32), uint32(e.At))
	dst = bsoncore.AppendDateTimeElement(dst, "w", e.Wall.UnixMilli())
	dst = bsoncore.AppendStringElement(dst, "db", e.DB)
	dst = bsoncore.AppendStringElement(dst, "b", e.Branch)
	dst = bsoncore.AppendInt64Element(dst, "l", int64(e.LSN))
	if e.Txn != nil {
		var x int32
		x, dst = bsoncore.AppendDocumentElementStart(dst, "x")
		dst = bsoncore.AppendBinaryElement(dst, "id", 4, e.Txn.Session.ID[:])
		dst = bsoncore.AppendBinaryElement(dst, "u", 0, e.Txn.Session.UID[:])
		dst = bsoncore.AppendInt64Element(dst, "n", e.Txn.Number)
		dst, _ = bsoncore.AppendDocumentEnd(dst, x)
	}
	aidx, dst := bsoncore.AppendArrayElementStart(dst, "e")
	for i, ev := range e.Events {
		dst = appendChangeEvent(dst, strconv.Itoa(i), ev)
	}
	dst, _ = bsoncore.AppendArrayEnd(dst, aidx)
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return dst
}

func appendChangeEvent(dst []byte, key string, ev ChangeEvent) []byte {
	idx, dst := bsoncore.AppendDocumentElementStart(dst, key)
	dst = bsoncore.AppendStringElement(dst, "o", ev.Op)
	if ev.Coll != "" {
		dst = bsoncore.AppendStringElement(dst, "c", ev.Coll)
		dst = bsoncore.AppendBinaryElement(dst, "ui", 4, ev.UUID[:])
	}
	for _, f := range [...]struct {
		key string
		doc bsoncore.Document
	}{{"k", ev.Key}, {"d", ev.Doc}, {"p", ev.Pre}, {"u", ev.Update}, {"i", ev.Desc}, {"sb", ev.Before}} {
		if f.doc != nil {
			dst = bsoncore.AppendDocumentElement(dst, f.key, f.doc)
		}
	}
	if ev.To != "" {
		dst = bsoncore.AppendStringElement(dst, "to", ev.To)
	}
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return dst
}

func decodeChangeEntry(seq uint64, payload []byte) (ChangeEntry, error) {
	doc := bsoncore.Document(payload)
	if doc.Validate() != nil {
		return ChangeEntry{}, fmt.Errorf("%w %d", errBadChangeEntry, seq)
	}
	e := ChangeEntry{Seq: seq}
	t, i, _ := doc.Lookup("t").TimestampOK()
	e.At = uint64(t)<<32 | uint64(i)
	e.Wall = time.UnixMilli(doc.Lookup("w").DateTime())
	e.DB, _ = doc.Lookup("db").StringValueOK()
	e.Branch, _ = doc.Lookup("b").StringValueOK()
	lsn, _ := doc.Lookup("l").Int64OK()
	e.LSN = uint64(lsn)
	if x, ok := doc.Lookup("x").DocumentOK(); ok {
		e.Txn = &ChangeTxn{}
		_, id, _ := x.Lookup("id").BinaryOK()
		_, uid, _ := x.Lookup("u").BinaryOK()
		copy(e.Txn.Session.ID[:], id)
		copy(e.Txn.Session.UID[:], uid)
		e.Txn.Number, _ = x.Lookup("n").Int64OK()
	}
	arr, _ := doc.Lookup("e").ArrayOK()
	vals, _ := arr.Values()
	for _, v := range vals {
		d, ok := v.DocumentOK()
		if !ok {
			return ChangeEntry{}, fmt.Errorf("%w %d", errBadChangeEntry, seq)
		}
		e.Events = append(e.Events, decodeChangeEvent(d))
	}
	return e, nil
}

func decodeChangeEvent(d bsoncore.Document) ChangeEvent {
	ev := ChangeEvent{}
	ev.Op, _ = d.Lookup("o").StringValueOK()
	ev.Coll, _ = d.Lookup("c").StringValueOK()
	ev.To, _ = d.Lookup("to").StringValueOK()
	if _, u, ok := d.Lookup("ui").BinaryOK(); ok {
		copy(ev.UUID[:], u)
	}
	ev.Key, _ = d.Lookup("k").DocumentOK()
	ev.Doc, _ = d.Lookup("d").DocumentOK()
	ev.Pre, _ = d.Lookup("p").DocumentOK()
	ev.Update, _ = d.Lookup("u").DocumentOK()
	ev.Desc, _ = d.Lookup("i").DocumentOK()
	ev.Before, _ = d.Lookup("sb").DocumentOK()
	return ev
}
