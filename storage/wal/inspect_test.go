package wal

import (
	"bytes"
	"testing"
)

// TestInspectReadsEveryRecord: Inspect sees each record of a log spread
// over segments, in LSN order, and the segments' record counts add up.
func TestInspectReadsEveryRecord(t *testing.T) {
	dir := t.TempDir()
	w, _ := open(t, dir, 4096, 0)
	for i := range 300 {
		appendDurable(t, w, payload(i))
	}
	w.Close()
	next := uint64(1)
	segs, err := Inspect(dir, func(lsn uint64, p []byte) {
		if lsn != next || !bytes.Equal(p, payload(int(lsn-1))) {
			t.Fatalf("record %d (%q), want %d", lsn, p, next)
		}
		next++
	})
	if err != nil {
		t.Fatal(err)
	}
	if next != 301 {
		t.Fatalf("Inspect saw %d records, want 300", next-1)
	}
	total := 0
	for i, s := range segs {
		if s.Version != 1 || s.Err != nil || s.Bytes <= 0 {
			t.Errorf("segment %d: %+v", i, s)
		}
		if i > 0 && s.First != segs[i-1].First+uint64(segs[i-1].Records) {
			t.Errorf("segment %d starts at %d after %d records from %d", i, s.First, segs[i-1].Records, segs[i-1].First)
		}
		total += s.Records
	}
	if len(segs) < 3 || total != 300 {
		t.Errorf("%d segments holding %d records", len(segs), total)
	}
}
