// Package wal owns DumboDB's write-ahead log: preallocated segment files of
// CRC-checked, LSN-numbered records, appended by many writers and made
// durable together by one fdatasync (group commit). The byte layout is in
// docs/format/wal.md. It knows nothing of what the records mean.
package wal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/dumbodb/dumbodb/internal/durablefile"
	"github.com/dumbodb/dumbodb/internal/formatversion"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
)

// DefaultSegmentSize is the size segments grow to.
const DefaultSegmentSize = 4 << 20

// firstSegmentSize is the size of a log's first segment; each later one
// is twice the one before, up to the segment size. A database that sees a
// few writes keeps a log of 64 KiB, not of 4 MiB (plus a spare).
const firstSegmentSize = 64 << 10

const (
	segmentHeaderSize = 32
	recordHeaderSize  = 16
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrClosed is returned by calls on a closed log.
var ErrClosed = errors.New("wal: closed")

// ErrWriteFailed wraps the cause of a failed log write. Every record that
// was not durable when it failed is lost: WaitDurable returns the error for
// it, and Append refuses new records until Resume.
var ErrWriteFailed = errors.New("wal: write failed")

// Options tune a log; zero values take defaults.
type Options struct {
	SegmentSize int64
	// OnFailure, if set, is called on a goroutine of its own after a write
	// failed, so that the owner drops what it built on the lost records and
	// calls Resume even when no writer waits for them.
	OnFailure func()
	// OnDurable, if set, is called after records became durable (with no
	// lock of the log held), so that the owner can publish what waited
	// for them. Calls may overlap; each follows its own advance.
	OnDurable func()
	// OnSync, if set, is told of each write and sync of the log: the
	// records it made durable and how long it took (for metrics).
	OnSync func(records int, took time.Duration)
}

// WAL is an open log. Append and WaitDurable are safe for concurrent use.
type WAL struct {
	dir         string
	segmentSize int64
	log         zerolog.Logger

	mu       sync.Mutex
	advanced chan struct{} // closed (and replaced) whenever synced advances
	spare    []byte        // the other pending buffer, reused between syncs
	flushing bool          // a leader is writing and syncing
	pending  []byte        // encoded records not yet written
	nextLSN  uint64        // LSN the next Append gets
	synced   atomic.Uint64 // highest LSN known durable; written under mu
	written  uint64        // highest LSN in pending or written
	failed   error         // a write failed and Resume was not called yet: Append refuses
	lost     []lostRange   // records that will never be durable, ascending
	closed   bool
	started  bool
	onFail   func()
	onDur    func()
	onSync   func(int, time.Duration)

	// owned by the flusher goroutine (and Replay/Start/Close)
	seg        *segmentFile  // nil until the first segment exists
	replayOff  int64         // where Replay found the last segment's end
	replayNext uint64        // the LSN expected there
	replayHead []byte        // the last segment's bytes from replayOff's block to replayOff
	stop       chan struct{} // closed by Close
	done       chan struct{} // closed when flushLoop has exited

	bg       sync.WaitGroup // background spare preparation
	segMu    sync.Mutex     // guards segments and spare files
	segments []uint64       // first LSNs of the segments in use, ascending
	spareGen int
	nextSize int64 // size of the next segment made; guarded by segMu
}

// Open opens (or creates) the log in dir and returns it positioned after
// its last valid record. Call Replay before the first Append.
func Open(dir string, opts Options, log zerolog.Logger) (*WAL, error) {
	if opts.SegmentSize <= 0 {
		opts.SegmentSize = DefaultSegmentSize
	}
	opts.SegmentSize = alignUp(opts.SegmentSize)
	if err := makeDir(dir); err != nil {
		return nil, err
	}
	w := &WAL{dir: dir, segmentSize: opts.SegmentSize, log: log, nextLSN: 1, onFail: opts.OnFailure, onDur: opts.OnDurable, onSync: opts.OnSync,
		stop: make(chan struct{}), done: make(chan struct{})}
	w.advanced = make(chan struct{})
	segs, err := listSegments(dir)
	if err != nil {
		return nil, err
	}
	w.segments = segs
	w.nextSize = opts.firstSegmentSize()
	return w, nil
}

// makeDir makes the log's directory if it does not exist (a database
// reopened after a clean close, whose log was removed) and syncs its
// parent, so that the records it will hold cannot lose their directory in
// a crash: a segment's sync makes only its own entry durable.
func makeDir(dir string) error {
	if _, err := os.Stat(dir); err == nil {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("wal: create %s: %w", dir, err)
	}
	if err := durablefile.SyncDir(filepath.Dir(dir)); err != nil {
		return fmt.Errorf("wal: create %s: %w", dir, err)
	}
	return nil
}

func segmentName(first uint64) string { return fmt.Sprintf("%020d.seg", first) }

func listSegments(dir string) ([]uint64, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("wal: list %s: %w", dir, err)
	}
	var out []uint64
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".seg") || strings.HasPrefix(name, "spare-") {
			continue
		}
		n, err := strconv.ParseUint(strings.TrimSuffix(name, ".seg"), 10, 64)
		if err == nil {
			out = append(out, n)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out, nil
}

// Replay calls fn for every valid record with an LSN above after, in order,
// and positions the log to append after the last valid record, and never
// below floor (the highest LSN any checkpoint holds: LSNs are never
// reused). It stops quietly at the first torn, corrupt or stale record:
// that is the end of the log.
func (w *WAL) Replay(after, floor uint64, fn func(lsn uint64, payload []byte) error) (int, error) {
	expected := uint64(0)
	replayed := 0
	for i, first := range w.segments {
		// A forward gap means the records in it were lost from the log's
		// tail but are in a checkpoint (see
		// TestCheckpointAheadOfLogNeverReusesLSNs); going backwards is not
		// a log.
		if expected != 0 && first < expected {
			w.log.Warn().Str("c", "STORAGE").Uint64("segment", first).Uint64("expected", expected).
				Msg("log segment does not continue the previous one; ignoring it and later segments")
			w.segments = w.segments[:i]
			break
		}
		end, next, n, err := w.replaySegment(first, after, fn)
		if err != nil {
			return replayed, err
		}
		replayed += n
		expected = next
		w.replayOff = end
	}
	if expected == 0 {
		expected = floor + 1
	}
	w.replayNext = expected
	expected = max(expected, floor+1)
	w.nextLSN, w.written = expected, expected-1
	w.synced.Store(expected - 1)
	return replayed, nil
}

// replaySegment reads one segment; it returns the offset after its last
// valid record, the next expected LSN and how many records fn saw.
func (w *WAL) replaySegment(first, after uint64, fn func(uint64, []byte) error) (int64, uint64, int, error) {
	data, err := readSegment(filepath.Join(w.dir, segmentName(first)))
	if err != nil {
		return 0, 0, 0, fmt.Errorf("wal: read segment %d: %w", first, err)
	}
	if ok, err := checkHeader(data, first); err != nil {
		return 0, 0, 0, err
	} else if !ok {
		w.replayHead = nil
		return segmentHeaderSize, first, 0, nil
	}
	off, lsn, n := int64(segmentHeaderSize), first, 0
	for {
		payload, ok := readRecord(data, off, lsn)
		if !ok {
			// Start appends here and needs the block's bytes before it.
			w.replayHead = append(w.replayHead[:0], data[off&^(blockSize-1):off]...)
			return off, lsn, n, nil
		}
		if lsn > after {
			if err := fn(lsn, payload); err != nil {
				return off, lsn, n, fmt.Errorf("wal: replay record %d: %w", lsn, err)
			}
			n++
		}
		off += int64(recordHeaderSize + len(payload))
		lsn++
	}
}

// readSegment reads a segment: its first block alone when no record
// follows the header (a segment prepared or made for a write that never
// came: 64 KiB of zeros not worth reading), else the whole file.
func readSegment(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	block := make([]byte, blockSize)
	n, err := io.ReadFull(f, block)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, err
	}
	block = block[:n]
	if n < segmentHeaderSize+4 || binary.LittleEndian.Uint32(block[segmentHeaderSize:]) == 0 {
		return block, nil
	}
	return os.ReadFile(path)
}

// checkHeader reports whether data begins with a valid header of the
// segment starting at LSN first. A header intact by its CRC whose format
// version this build cannot read is an error, not a torn segment: its
// records must not be taken for the log's end.
func checkHeader(data []byte, first uint64) (bool, error) {
	if len(data) < segmentHeaderSize || string(data[:8]) != formatversion.WAL.Magic {
		return false, nil
	}
	if binary.LittleEndian.Uint32(data[24:]) != crc32.Checksum(data[:24], castagnoli) {
		return false, nil
	}
	if err := formatversion.WAL.Check(binary.LittleEndian.Uint32(data[8:])); err != nil {
		return false, fmt.Errorf("wal: segment %d: %w", first, err)
	}
	return binary.LittleEndian.Uint64(data[16:]) == first, nil
}

// readRecord returns the payload of the record at off if it is valid and
// has the expected LSN.
func readRecord(data []byte, off int64, lsn uint64) ([]byte, bool) {
	if off+recordHeaderSize > int64(len(data)) {
		return nil, false
	}
	h := data[off:]
	n := int64(binary.LittleEndian.Uint32(h))
	if n == 0 || off+recordHeaderSize+n > int64(len(data)) {
		return nil, false
	}
	if binary.LittleEndian.Uint64(h[8:]) != lsn {
		return nil, false
	}
	body := h[8 : recordHeaderSize+n]
	if crc32.Checksum(body, castagnoli) != binary.LittleEndian.Uint32(h[4:]) {
		return nil, false
	}
	return h[recordHeaderSize : recordHeaderSize+n], true
}

func appendRecord(dst []byte, lsn uint64, payload []byte) []byte {
	var h [recordHeaderSize]byte
	binary.LittleEndian.PutUint32(h[0:], uint32(len(payload)))
	binary.LittleEndian.PutUint64(h[8:], lsn)
	crc := crc32.Update(crc32.Checksum(h[8:16], castagnoli), castagnoli, payload)
	binary.LittleEndian.PutUint32(h[4:], crc)
	dst = append(dst, h[:]...)
	return append(dst, payload...)
}

// Start opens the last segment for appending and starts the flusher. Call
// it after Replay.
func (w *WAL) Start() error {
	if n := len(w.segments); n > 0 {
		seg, err := openSegmentFile(filepath.Join(w.dir, segmentName(w.segments[n-1])), w.replayOff, w.replayNext, w.replayHead)
		if err != nil {
			return fmt.Errorf("wal: open tail segment: %w", err)
		}
		w.seg = seg
	}
	w.mu.Lock()
	w.started = true
	w.mu.Unlock()
	// A new log makes its first segment at its first write: preparing one
	// ahead would make two, as that write may come before it is ready.
	go w.flushLoop()
	return nil
}

// Append adds a record and returns its LSN. The record is durable once
// WaitDurable(lsn) returns nil.
func (w *WAL) Append(payload []byte) (uint64, error) {
	if len(payload) == 0 || int64(len(payload)) > 1<<31 {
		return 0, fmt.Errorf("wal: bad payload size %d", len(payload))
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return 0, ErrClosed
	}
	if w.failed != nil {
		return 0, w.failed
	}
	lsn := w.nextLSN
	w.nextLSN++
	w.pending = appendRecord(w.pending, lsn, payload)
	w.written = lsn
	return lsn, nil
}

// WaitDurable blocks until the record lsn is on disk, or returns the
// error that lost it. The first waiter that finds no sync running becomes
// the leader: it writes and syncs everything appended so far, for all
// waiters, on its own goroutine (no thread hand-off on the path of a lone
// writer). The others sleep on a channel closed once per sync, so an
// append wakes nobody.
func (w *WAL) WaitDurable(lsn uint64) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	for {
		// Lost records are looked up first: after Resume, later records
		// can be durable while a slow waiter for a lost one still sleeps.
		if err := w.lostErr(lsn); err != nil {
			return err
		}
		switch {
		case w.synced.Load() >= lsn:
			return nil
		case w.closed && !w.flushing && len(w.pending) == 0:
			return ErrClosed
		case !w.flushing:
			w.leadSync()
			continue
		}
		ch := w.advanced
		w.mu.Unlock()
		<-ch
		w.mu.Lock()
	}
}

// leadSync writes and syncs the pending records. Called with w.mu held,
// which it releases during the I/O.
func (w *WAL) leadSync() {
	if len(w.pending) == 0 {
		return
	}
	w.flushing = true
	batch := w.pending
	w.pending, w.spare = w.spare[:0], nil
	before := w.synced.Load()
	w.mu.Unlock()
	start := time.Now()
	durable, err := w.writeBatch(batch)
	if durable > before && w.onSync != nil {
		w.onSync(int(durable-before), time.Since(start))
	}
	w.mu.Lock()
	w.flushing = false
	w.spare = batch[:0]
	if durable > 0 {
		w.synced.Store(durable)
	}
	if err != nil {
		w.fail(err)
	}
	w.advance()
	if durable > 0 && w.onDur != nil {
		w.mu.Unlock()
		w.onDur()
		w.mu.Lock()
	}
}

// lostRange is a run of LSNs lost in one failed write (or in failures one
// after the other, with nothing durable in between).
type lostRange struct {
	from, to uint64
	err      error
}

// fail marks every record above synced lost, pending ones included (they
// may build on the failed ones), and refuses appends until Resume. Called
// with w.mu held.
func (w *WAL) fail(cause error) {
	err := fmt.Errorf("%w: %w", ErrWriteFailed, cause)
	from := w.synced.Load() + 1
	if n := len(w.lost); n > 0 && w.lost[n-1].to+1 >= from {
		w.lost[n-1].to = w.written
	} else {
		w.lost = append(w.lost, lostRange{from: from, to: w.written, err: err})
	}
	w.pending = w.pending[:0]
	w.failed = err
	w.log.Error().Str("c", "STORAGE").Err(cause).Uint64("fromLSN", from).Uint64("toLSN", w.written).
		Msg("log write failed; the records not yet durable are lost")
	if w.onFail != nil {
		go w.onFail()
	}
}

// lostErr is the error that lost the record lsn, nil if it was not lost.
// Called with w.mu held.
func (w *WAL) lostErr(lsn uint64) error {
	i := sort.Search(len(w.lost), func(i int) bool { return w.lost[i].to >= lsn })
	if i < len(w.lost) && w.lost[i].from <= lsn {
		return w.lost[i].err
	}
	return nil
}

// WaitBackground waits for the spare segment being prepared, if any.
func (w *WAL) WaitBackground() { w.bg.Wait() }

// Failed reports whether a write failed and Resume was not called since.
func (w *WAL) Failed() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.failed != nil
}

// Resume lets the log take records again after a failed write. The owner
// calls it once nothing it publishes builds on the lost records any more.
// The next write first undoes what the failed one left and starts a new
// segment (docs/format/wal.md, "Failed writes"); if the cause persists, it
// fails again.
func (w *WAL) Resume() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.failed = nil
}

// Durable is the highest LSN known to be on disk. Records lost below it,
// in an earlier failure, never are (WaitDurable tells).
func (w *WAL) Durable() uint64 { return w.synced.Load() }

// advance wakes the waiters after synced or lost changed. Called with
// w.mu held.
func (w *WAL) advance() {
	close(w.advanced)
	w.advanced = make(chan struct{})
}

// backgroundFlushInterval bounds how long a record appended without a
// waiter (w: 0, j: false) stays unsynced, like mongod's journal commit
// interval.
const backgroundFlushInterval = 50 * time.Millisecond

// flushLoop syncs records nobody waits for.
func (w *WAL) flushLoop() {
	defer close(w.done)
	t := time.NewTicker(backgroundFlushInterval)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			w.mu.Lock()
			for len(w.pending) > 0 || w.flushing {
				if w.flushing {
					ch := w.advanced
					w.mu.Unlock()
					<-ch
					w.mu.Lock()
					continue
				}
				w.leadSync()
			}
			w.mu.Unlock()
			return
		case <-t.C:
			w.mu.Lock()
			if !w.flushing {
				w.leadSync()
			}
			w.mu.Unlock()
		}
	}
}

// writeBatch writes encoded records (never splitting one), each write
// durable when it returns. It returns the LSN of the last record it made
// durable (0: none); on error the records after it are not.
func (w *WAL) writeBatch(batch []byte) (uint64, error) {
	durable := uint64(0)
	// A failed write must be undone before the log moves on, even to
	// another segment.
	if w.seg != nil {
		if err := w.seg.repair(); err != nil {
			return durable, err
		}
	}
	for len(batch) > 0 {
		// Take as many whole records as fit in the current segment.
		take, records := 0, uint64(0)
		if w.seg != nil && lsnOf(batch) == w.seg.next {
			for take < len(batch) && w.seg.fits(take+recordLen(batch[take:])) {
				take += recordLen(batch[take:])
				records++
			}
		}
		if take == 0 {
			if err := w.rotate(lsnOf(batch), int64(recordLen(batch))); err != nil {
				return durable, err
			}
			continue
		}
		if err := w.seg.write(batch[:take]); err != nil {
			return durable, err
		}
		w.seg.next += records
		durable = w.seg.next - 1
		batch = batch[take:]
	}
	return durable, nil
}

// alignUp rounds n up to whole blocks.
func alignUp(n int64) int64 { return (n + blockSize - 1) &^ (blockSize - 1) }

func recordLen(b []byte) int { return recordHeaderSize + int(binary.LittleEndian.Uint32(b)) }

func lsnOf(b []byte) uint64 { return binary.LittleEndian.Uint64(b[8:]) }

// LastLSN is the LSN of the last appended record.
func (w *WAL) LastLSN() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.nextLSN - 1
}
