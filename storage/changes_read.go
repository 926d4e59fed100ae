package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sort"
)

// Reading the change log: a reader from a sequence number on, across
// segments, and the sequence number of a time.

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
