package wal

import (
	"bytes"
	"testing"
)

// FuzzReadRecord checks that replay's record reader never panics or reads
// past the data, and that it accepts exactly the records appendRecord
// writes with the LSN it expects.
func FuzzReadRecord(f *testing.F) {
	f.Add(appendRecord(nil, 7, []byte("payload")), int64(0), uint64(7))
	f.Add(appendRecord(appendRecord(nil, 1, []byte{1}), 2, []byte("second")), int64(recordHeaderSize+1), uint64(2))
	f.Add([]byte{0xff, 0xff, 0xff, 0x7f, 0, 0, 0, 0}, int64(0), uint64(0))
	f.Fuzz(func(t *testing.T, data []byte, off int64, lsn uint64) {
		if off < 0 || off > int64(len(data)) {
			return // replay only reads at offsets inside the segment
		}
		payload, ok := readRecord(data, off, lsn)
		if !ok {
			return
		}
		rec := appendRecord(nil, lsn, payload)
		if !bytes.Equal(data[off:off+int64(len(rec))], rec) {
			t.Fatalf("accepted record at %d differs from its encoding", off)
		}
	})
}
