package wal

import (
	"encoding/binary"
	"fmt"
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
	size := alignUp(max(w.segmentSize, need+segmentHeaderSize))
	path, err := w.takeSpare(size)
	if err != nil {
		return err
	}
	seg, err := openSegmentFile(path, 0, first)
	if err != nil {
		return err
	}
	if err := w.startSegment(seg, path, first); err != nil {
		seg.close()
		return err
	}
	if w.seg != nil {
		w.seg.close()
	}
	w.seg = seg
	w.segMu.Lock()
	w.segments = append(w.segments, first)
	w.segMu.Unlock()
	w.bg.Add(1)
	go func() {
		defer w.bg.Done()
		w.ensureSpare()
	}()
	return nil
}

// startSegment writes the header of a new segment durably and gives the
// file its name.
func (w *WAL) startSegment(seg *segmentFile, path string, first uint64) error {
	var h [segmentHeaderSize]byte
	copy(h[:], magic)
	binary.LittleEndian.PutUint32(h[8:], formatVersion)
	binary.LittleEndian.PutUint64(h[16:], first)
	binary.LittleEndian.PutUint32(h[24:], crc32.Checksum(h[:24], castagnoli))
	if err := seg.write(h[:]); err != nil {
		return err
	}
	if err := os.Rename(path, filepath.Join(w.dir, segmentName(first))); err != nil {
		return err
	}
	return syncDir(w.dir)
}

// takeSpare returns the path of a spare segment file of at least size
// bytes, creating a zero-filled one when none is ready.
func (w *WAL) takeSpare(size int64) (string, error) {
	w.segMu.Lock()
	defer w.segMu.Unlock()
	for _, name := range w.spareNames() {
		path := filepath.Join(w.dir, name)
		if st, err := os.Stat(path); err == nil && st.Size() >= size {
			return path, nil
		}
	}
	return w.createSpare(size)
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
	if err := writeZeros(tmp, size); err != nil {
		os.Remove(tmp)
		return "", err
	}
	final := filepath.Join(w.dir, fmt.Sprintf("spare-%d-%d.seg", os.Getpid(), w.spareGen))
	if err := os.Rename(tmp, final); err != nil {
		return "", err
	}
	return final, nil
}

func writeZeros(path string, size int64) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	zeros := make([]byte, 1<<20)
	for off := int64(0); off < size; off += int64(len(zeros)) {
		n := min(int64(len(zeros)), size-off)
		if _, err := f.WriteAt(zeros[:n], off); err != nil {
			return err
		}
	}
	return f.Sync()
}

// ensureSpare prepares one spare segment in the background, so that the
// next rotation does not wait for a segment of zeros.
func (w *WAL) ensureSpare() {
	w.segMu.Lock()
	defer w.segMu.Unlock()
	if len(w.spareNames()) > 0 {
		return
	}
	if _, err := w.createSpare(w.segmentSize); err != nil {
		w.log.Warn().Str("c", "WAL").Err(err).Msg("preparing a spare log segment failed")
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
	return syncDir(w.dir)
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

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
