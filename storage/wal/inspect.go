package wal

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
)

// SegmentInfo describes one segment file of a log as Inspect read it.
type SegmentInfo struct {
	First   uint64 // the LSN its name gives its first record
	Bytes   int64  // the file's size
	Version uint32 // its header's format version; 0 when the header is torn
	Records int    // valid records from its start
	Err     error  // a header this build cannot read
}

// Inspect reads every segment of the log in dir, in order, without
// opening the log, and calls fn for each valid record. A segment's
// records end at its first torn or corrupt one, as replay's do; unlike
// replay, Inspect reads on past a segment that does not continue the one
// before, reporting what is there.
func Inspect(dir string, fn func(lsn uint64, payload []byte)) ([]SegmentInfo, error) {
	firsts, err := listSegments(dir)
	if err != nil {
		return nil, err
	}
	var out []SegmentInfo
	for _, first := range firsts {
		path := filepath.Join(dir, segmentName(first))
		st, err := os.Stat(path)
		if err != nil {
			return out, fmt.Errorf("wal: %w", err)
		}
		data, err := readSegment(path)
		if err != nil {
			return out, fmt.Errorf("wal: read segment %d: %w", first, err)
		}
		info := SegmentInfo{First: first, Bytes: st.Size()}
		ok, err := checkHeader(data, first)
		info.Err = err
		if ok {
			info.Version = binary.LittleEndian.Uint32(data[8:])
			off, lsn := int64(segmentHeaderSize), first
			for payload, ok := readRecord(data, off, lsn); ok; payload, ok = readRecord(data, off, lsn) {
				fn(lsn, payload)
				info.Records++
				off += int64(recordHeaderSize + len(payload))
				lsn++
			}
		}
		out = append(out, info)
	}
	return out, nil
}
