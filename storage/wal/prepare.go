package wal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/dumbodb/dumbodb/internal/durablefile"
	"io"
	"os"
	"path/filepath"
)

// This file owns logs made ahead of their database (docs/format/wal.md,
// "Segment files"): a new database takes a log prepared in the
// background, because making files can cost more than the write itself
// (docs/design/resources.md, "Creating a database"), and recovery asks
// whether such a log was ever written.

// Prepare makes an empty log in dir, which must not exist (its parent
// must): dir and its first segment, for LSN 1, written with its header and
// zeros and synced, then dir synced. A log opened there takes its first
// record with one write and makes no file. The entry of dir in its parent
// is the caller's to sync, where the log ends up.
func Prepare(dir string, opts Options) error {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return fmt.Errorf("wal: prepare: %w", err)
	}
	h := segmentHeader(1)
	if err := writeZeros(filepath.Join(dir, segmentName(1)), opts.firstSegmentSize(), h[:]); err != nil {
		return fmt.Errorf("wal: prepare %s: %w", dir, err)
	}
	if err := durablefile.SyncDir(dir); err != nil {
		return fmt.Errorf("wal: prepare %s: %w", dir, err)
	}
	return nil
}

// firstSegmentSize is the size of a log's first segment under opts.
func (o Options) firstSegmentSize() int64 {
	size := o.SegmentSize
	if size <= 0 {
		size = DefaultSegmentSize
	}
	return min(firstSegmentSize, alignUp(size))
}

// HasRecords reports whether the log in dir holds at least one valid
// record. A segment's first record, if any, has the segment's first LSN
// and follows its header, so only the head of each segment is read; every
// segment is, since a failed write can leave one without records before
// one with them.
func HasRecords(dir string) (bool, error) {
	segs, err := listSegments(dir)
	if err != nil {
		return false, err
	}
	for _, first := range segs {
		ok, err := startsWithRecord(filepath.Join(dir, segmentName(first)), first)
		if err != nil || ok {
			return ok, err
		}
	}
	return false, nil
}

// startsWithRecord reports whether the segment at path has a valid header
// for first and a valid record right after it.
func startsWithRecord(path string, first uint64) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, fmt.Errorf("wal: read segment %d: %w", first, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return false, fmt.Errorf("wal: read segment %d: %w", first, err)
	}
	head := make([]byte, segmentHeaderSize+recordHeaderSize)
	if _, err := io.ReadFull(f, head); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return false, nil // torn at its making
		}
		return false, fmt.Errorf("wal: read segment %d: %w", first, err)
	}
	if ok, err := checkHeader(head, first); !ok {
		return false, err
	}
	n := int64(binary.LittleEndian.Uint32(head[segmentHeaderSize:]))
	if n == 0 || int64(len(head))+n > st.Size() {
		return false, nil
	}
	data := make([]byte, int64(len(head))+n)
	if _, err := f.ReadAt(data, 0); err != nil {
		return false, fmt.Errorf("wal: read segment %d: %w", first, err)
	}
	_, ok := readRecord(data, segmentHeaderSize, first)
	return ok, nil
}
