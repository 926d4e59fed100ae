package wal

import (
	"encoding/binary"
	"fmt"
	"github.com/dumbodb/dumbodb/internal/durablefile"
	"github.com/dumbodb/dumbodb/internal/formatversion"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
)

// maxSpares is how many checkpointed segments are kept for reuse.
const maxSpares = 1

// rotate makes a new segment, starting at LSN first, the current one. It
// has room for at least need bytes of records.
func (w *WAL) rotate(first uint64, need int64) error {
	w.segMu.Lock()
	size := alignUp(max(w.nextSize, need+segmentHeaderSize))
	w.nextSize = min(2*w.nextSize, w.segmentSize)
	w.segMu.Unlock()
	seg, err := w.newSegment(first, size)
	if err != nil {
		return err
	}
	if w.seg != nil {
		w.seg.close()
	}
	w.seg = seg
	w.segMu.Lock()
	if n := len(w.segments); n > 0 && w.segments[n-1] == first {
		// The segment it replaces took no record (a prepared log's first,
		// or one a crash left empty) and had the same name.
		w.segments = w.segments[:n-1]
	}
	w.segments = append(w.segments, first)
	growing := len(w.segments) > 1
	w.segMu.Unlock()
	if growing { // a log that filled a segment will likely fill the next
		w.bg.Add(1)
		go func() {
			defer w.bg.Done()
			w.ensureSpare()
		}()
	}
	return nil
}

// newSegment returns the segment starting at LSN first, named and durable,
// open for appending after its header: a spare of at least size bytes with
// the header written into it, or, when none is ready, a new file written
// with its header and zeros at once (one sync fewer on a new log's first
// write).
func (w *WAL) newSegment(first uint64, size int64) (*segmentFile, error) {
	final := filepath.Join(w.dir, segmentName(first))
	w.segMu.Lock()
	path := w.spareOfSize(size, true)
	w.segMu.Unlock()
	if path == "" {
		if err := w.createSegmentFile(final, first, size); err != nil {
			return nil, err
		}
		h := segmentHeader(first)
		return openSegmentFile(final, segmentHeaderSize, first, h[:])
	}
	seg, err := openSegmentFile(path, 0, first, nil)
	if err != nil {
		return nil, err
	}
	h := segmentHeader(first)
	if err := seg.write(h[:]); err != nil {
		seg.close()
		return nil, err
	}
	if err := os.Rename(path, final); err != nil {
		seg.close()
		return nil, err
	}
	if err := durablefile.SyncDir(w.dir); err != nil {
		seg.close()
		return nil, err
	}
	return seg, nil
}

// segmentHeader encodes the header of the segment starting at LSN first.
func segmentHeader(first uint64) [segmentHeaderSize]byte {
	var h [segmentHeaderSize]byte
	fh := formatversion.WAL.Header()
	copy(h[:], fh[:])
	binary.LittleEndian.PutUint64(h[16:], first)
	binary.LittleEndian.PutUint32(h[24:], crc32.Checksum(h[:24], castagnoli))
	return h
}

// createSegmentFile writes a segment of size bytes, its header then zeros,
// under a temporary name, syncs it and renames it to path.
func (w *WAL) createSegmentFile(path string, first uint64, size int64) error {
	w.segMu.Lock()
	w.spareGen++
	tmp := filepath.Join(w.dir, fmt.Sprintf("spare-%d.tmp", w.spareGen))
	w.segMu.Unlock()
	h := segmentHeader(first)
	if err := writeZeros(tmp, size, h[:]); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return durablefile.SyncDir(w.dir)
}

// spareOfSize returns the path of a spare of at least size bytes, or "".
// If remove is set it deletes the spares too small for it: segments only
// grow, so those would never be used. Only newSegment removes (on the flusher, the
// only rotator), so that no spare vanishes between its choice and rename.
// Called with segMu held.
func (w *WAL) spareOfSize(size int64, remove bool) string {
	for _, name := range w.spareNames() {
		path := filepath.Join(w.dir, name)
		if st, err := os.Stat(path); err == nil && st.Size() >= size {
			return path
		}
		if remove {
			os.Remove(path)
		}
	}
	return ""
}

func (w *WAL) spareNames() []string {
	entries, _ := os.ReadDir(w.dir)
	var names []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "spare-") && strings.HasSuffix(e.Name(), ".seg") {
			names = append(names, e.Name())
		}
	}
	return names
}

// createSpare writes a zero-filled file and returns its path: its blocks
// are allocated and written, so later syncs need not update file metadata.
// Called with segMu held.
func (w *WAL) createSpare(size int64) (string, error) {
	w.spareGen++
	tmp := filepath.Join(w.dir, fmt.Sprintf("spare-%d.tmp", w.spareGen))
	if err := writeZeros(tmp, size, nil); err != nil {
		os.Remove(tmp)
		return "", err
	}
	final := filepath.Join(w.dir, fmt.Sprintf("spare-%d-%d.seg", os.Getpid(), w.spareGen))
	if err := os.Rename(tmp, final); err != nil {
		return "", err
	}
	return final, nil
}

// writeZeros writes a file of size bytes: head, then zeros.
func writeZeros(path string, size int64, head []byte) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	buf := make([]byte, min(size, 1<<20))
	copy(buf, head)
	for off := int64(0); off < size; off += int64(len(buf)) {
		n := min(int64(len(buf)), size-off)
		if _, err := f.WriteAt(buf[:n], off); err != nil {
			return err
		}
		clear(buf[:len(head)])
	}
	return f.Sync()
}

// ensureSpare prepares one spare segment, of the size the next rotation
// wants, in the background, so that the rotation does not wait for a
// segment of zeros.
func (w *WAL) ensureSpare() {
	w.segMu.Lock()
	defer w.segMu.Unlock()
	if w.spareOfSize(w.nextSize, false) != "" {
		return
	}
	if _, err := w.createSpare(w.nextSize); err != nil {
		w.log.Warn().Str("c", "STORAGE").Err(err).Msg("preparing a spare log segment failed")
	}
}

// Recycle retires every segment whose records all have LSNs at or below
// upTo (they are in a checkpoint now): up to maxSpares become spares, the
// rest are deleted.
func (w *WAL) Recycle(upTo uint64) error {
	w.segMu.Lock()
	defer w.segMu.Unlock()
	for len(w.segments) > 1 && w.segments[1] <= upTo+1 {
		old := filepath.Join(w.dir, segmentName(w.segments[0]))
		w.segments = w.segments[1:]
		var err error
		if len(w.spareNames()) < maxSpares {
			w.spareGen++
			err = os.Rename(old, filepath.Join(w.dir, fmt.Sprintf("spare-%d-%d.seg", os.Getpid(), w.spareGen)))
		} else {
			err = os.Remove(old)
		}
		if err != nil {
			return fmt.Errorf("wal: retire segment: %w", err)
		}
	}
	return durablefile.SyncDir(w.dir)
}

// SegmentCount is the number of segments in use (for tests and stats).
func (w *WAL) SegmentCount() int {
	w.segMu.Lock()
	defer w.segMu.Unlock()
	return len(w.segments)
}

// Remove deletes every log file. Call it on a closed log whose records are
// all checkpointed (a clean shutdown), so that an idle data directory holds
// no preallocated segments.
func (w *WAL) Remove() error {
	return os.RemoveAll(w.dir)
}

// Close waits for pending records to be written and synced, then closes.
func (w *WAL) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	started := w.started
	w.mu.Unlock()
	if started {
		close(w.stop)
		<-w.done // flushes what is pending
	}
	w.bg.Wait()
	if w.seg != nil {
		return w.seg.close()
	}
	return nil
}
