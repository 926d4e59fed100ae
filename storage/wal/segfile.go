package wal

import (
	"errors"
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// blockSize is the unit of every segment write: offsets, lengths and
// buffer addresses are multiples of it, as O_DIRECT requires.
const blockSize = 4096

// segmentFile is the segment being appended to. It is written in whole
// aligned blocks: the block holding the write offset is rewritten with the
// bytes it already had (kept in tail), and the last block is padded with
// zeros. Where the file system allows it the file is opened with O_DIRECT
// and O_DSYNC, so one pwrite both writes and flushes: on this kind of disk
// that is about 15% faster than a buffered write followed by fdatasync
// (docs/design/durability.md). Where O_DIRECT is refused the writes are
// buffered and each write is followed by fdatasync.
type segmentFile struct {
	f      *os.File
	direct bool   // opened O_DIRECT|O_DSYNC: each write is durable when it returns
	size   int64  // file size, a multiple of blockSize
	off    int64  // where the next record goes
	next   uint64 // LSN the record at off must have
	tail   []byte // aligned block: bytes [off &^ (blockSize-1), off) of the file
	buf    []byte // aligned write buffer, reused between writes
	// torn is how many bytes, from the block holding off, a failed write
	// may have left on disk (0: none); repair undoes them.
	torn int
}

// openSegmentFile opens path for appending at off. Every write rewrites
// the block holding off, so the bytes before off in that block are needed:
// head, when the caller has them (it just wrote or read them), else they
// are read back, which with O_DIRECT is a read from the disk.
func openSegmentFile(path string, off int64, next uint64, head []byte) (*segmentFile, error) {
	f, direct, err := openForAppend(path)
	if err != nil {
		return nil, err
	}
	s := &segmentFile{f: f, direct: direct, off: off, next: next, tail: alignedBlocks(1)}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	s.size = st.Size() &^ (blockSize - 1)
	n := off & (blockSize - 1)
	switch {
	case n == 0:
	case int64(len(head)) == n:
		copy(s.tail, head)
	default:
		// A whole aligned block: O_DIRECT reads have the same rules.
		if _, err := f.ReadAt(s.tail, off-n); err != nil {
			f.Close()
			return nil, fmt.Errorf("read the block at %d: %w", off-n, err)
		}
	}
	return s, nil
}

// useDirectIO is false only in tests of the buffered path.
var useDirectIO = true

// openForAppend opens path with O_DIRECT|O_DSYNC, or plainly where the
// file system refuses O_DIRECT.
func openForAppend(path string) (*os.File, bool, error) {
	if useDirectIO {
		f, err := os.OpenFile(path, os.O_RDWR|unix.O_DIRECT|unix.O_DSYNC, 0)
		if err == nil {
			return f, true, nil
		}
		if !errors.Is(err, unix.EINVAL) {
			return nil, false, err
		}
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	return f, false, err
}

// fits reports whether n more bytes of records fit in the segment.
func (s *segmentFile) fits(n int) bool { return s.off+int64(n) <= s.size }

// write puts data at the write offset, durably, and advances the offset
// past it. A failed write leaves the offset where it was and is undone at
// once if possible, else by the next repair (docs/format/wal.md, "Failed
// writes").
func (s *segmentFile) write(data []byte) error {
	start := s.off &^ (blockSize - 1)
	head := int(s.off - start)
	end := head + len(data)
	buf := s.buffer(end)
	copy(buf, s.tail[:head])
	copy(buf[head:], data)
	clear(buf[end:])
	if err := s.writeDurably(buf, start); err != nil {
		s.torn = len(buf)
		// Undo it now, so that a crash before the next write cannot replay
		// what it left; if this fails too, the next write retries first.
		_ = s.repair()
		return err
	}
	last := end &^ (blockSize - 1)
	copy(s.tail, buf[last:end])
	s.off += int64(len(data))
	s.dropLargeBuffer()
	return nil
}

// repair rewrites the blocks a failed write touched as they were before
// it: the bytes up to the write offset, then zeros. Whatever records the
// failed write left there are gone, so none of them can be replayed.
func (s *segmentFile) repair() error {
	if s.torn == 0 {
		return nil
	}
	start := s.off &^ (blockSize - 1)
	head := int(s.off - start)
	buf := s.buffer(s.torn)
	copy(buf, s.tail[:head])
	clear(buf[head:])
	if err := s.writeDurably(buf, start); err != nil {
		return fmt.Errorf("undo a failed write: %w", err)
	}
	s.torn = 0
	s.dropLargeBuffer()
	return nil
}

// writeDurably writes buf at off and returns once it is on disk: at once
// with O_DSYNC, else after fdatasync.
func (s *segmentFile) writeDurably(buf []byte, off int64) error {
	if err := s.writeAt(buf, off); err != nil {
		return err
	}
	if s.direct {
		return nil
	}
	if err := unix.Fdatasync(int(s.f.Fd())); err != nil {
		return fmt.Errorf("sync the log segment: %w", err)
	}
	return nil
}

// writeAt writes buf at off. A file system that accepted O_DIRECT at open
// may still want larger alignment than ours (EINVAL): the file then drops
// O_DIRECT and keeps O_DSYNC, so each write stays durable on return.
func (s *segmentFile) writeAt(buf []byte, off int64) error {
	_, err := s.f.WriteAt(buf, off)
	if err == nil || !s.direct || !errors.Is(err, unix.EINVAL) {
		return err
	}
	if err := s.dropDirect(); err != nil {
		return err
	}
	_, err = s.f.WriteAt(buf, off)
	return err
}

// dropDirect turns O_DIRECT off; O_DSYNC stays.
func (s *segmentFile) dropDirect() error {
	fd := int(s.f.Fd())
	flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err != nil {
		return fmt.Errorf("read the log's file flags: %w", err)
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFL, flags&^unix.O_DIRECT); err != nil {
		return fmt.Errorf("turn O_DIRECT off: %w", err)
	}
	return nil
}

// buffer returns the aligned write buffer holding n bytes rounded up to
// whole blocks.
func (s *segmentFile) buffer(n int) []byte {
	blocks := (n + blockSize - 1) / blockSize
	if blocks*blockSize > len(s.buf) {
		s.buf = alignedBlocks(blocks)
	}
	return s.buf[:blocks*blockSize]
}

// dropLargeBuffer lets a buffer grown for one huge batch go, so that a
// 16 MiB document does not pin 16 MiB per database.
func (s *segmentFile) dropLargeBuffer() {
	if len(s.buf) > 1<<20 {
		s.buf = nil
	}
}

// close undoes a failed write first, so that a restart cannot replay it.
func (s *segmentFile) close() error { return errors.Join(s.repair(), s.f.Close()) }

// alignedBlocks allocates n zeroed blocks starting at a block boundary.
func alignedBlocks(n int) []byte {
	raw := make([]byte, (n+1)*blockSize)
	skip := (blockSize - int(uintptr(unsafe.Pointer(&raw[0]))&(blockSize-1))) & (blockSize - 1)
	return raw[skip : skip+n*blockSize : skip+n*blockSize]
}
