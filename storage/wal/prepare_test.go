package wal

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

func wantHasRecords(t *testing.T, dir string, want bool) {
	t.Helper()
	got, err := HasRecords(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Fatalf("HasRecords = %v, want %v", got, want)
	}
}

// TestPreparedLogTakesItsFirstRecordInPlace: a prepared log holds its
// first segment, has no record, takes records into that segment without
// making a file, and replays them after a reopen.
func TestPreparedLogTakesItsFirstRecordInPlace(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "wal")
	if err := Prepare(dir, Options{SegmentSize: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	if err := Prepare(dir, Options{}); err == nil {
		t.Fatal("Prepare over an existing log succeeded")
	}
	wantHasRecords(t, dir, false)
	seg := segmentName(1)
	if st, err := os.Stat(filepath.Join(dir, seg)); err != nil || st.Size() != firstSegmentSize {
		t.Fatalf("first segment: %v, %v", st, err)
	}
	w, got := open(t, dir, 1<<20, 0)
	if len(got) != 0 {
		t.Fatalf("a prepared log replayed %d records", len(got))
	}
	for i := range 3 {
		appendDurable(t, w, payload(i))
	}
	if names := dirNames(t, dir); len(names) != 1 || names[0] != seg {
		t.Fatalf("files after the first writes: %v, want only %s", names, seg)
	}
	w.Close()
	wantHasRecords(t, dir, true)
	w, got = open(t, dir, 1<<20, 0)
	defer w.Close()
	if len(got) != 3 || string(got[2]) != string(payload(2)) {
		t.Fatalf("replayed %d records", len(got))
	}
}

// TestPreparedLogIsNoLargerThanTheSegmentSize: a log whose segments are
// smaller than a first segment's usual size is prepared at that size.
func TestPreparedLogIsNoLargerThanTheSegmentSize(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "wal")
	if err := Prepare(dir, Options{SegmentSize: 4096}); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(filepath.Join(dir, segmentName(1))); err != nil || st.Size() != 4096 {
		t.Fatalf("first segment: %v, %v", st, err)
	}
}

// TestHasRecordsSeesOnlyValidRecords: a log whose only record is corrupt
// or torn has none; one whose first segment lost its records in a failed
// write but whose next segment has some has records.
func TestHasRecordsSeesOnlyValidRecords(t *testing.T) {
	dir := t.TempDir()
	w, _ := open(t, dir, 1<<20, 0)
	appendDurable(t, w, payload(7))
	w.Close()
	wantHasRecords(t, dir, true)
	f, err := os.OpenFile(lastSegment(t, dir), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte{0xff}, segmentHeaderSize+recordHeaderSize+1) // a payload byte
	wantHasRecords(t, dir, false)
	f.Truncate(segmentHeaderSize + recordHeaderSize) // torn in its payload
	f.Close()
	wantHasRecords(t, dir, false)

	// A later segment, as a write after a failed one starts (wal.md,
	// "Failed writes").
	later := filepath.Join(dir, segmentName(5))
	h := segmentHeader(5)
	rec := appendRecord(append([]byte(nil), h[:]...), 5, payload(1))
	if err := os.WriteFile(later, rec, 0o644); err != nil {
		t.Fatal(err)
	}
	wantHasRecords(t, dir, true)
	if _, err := HasRecords(filepath.Join(dir, "missing")); err == nil {
		t.Fatal("HasRecords of a missing log succeeded")
	}
}

// TestPreparedLogTakesALargerFirstRecord: a first record larger than the
// prepared segment gets a segment that replaces it, under the same name;
// the log replays it and recycles past it.
func TestPreparedLogTakesALargerFirstRecord(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "wal")
	if err := Prepare(dir, Options{}); err != nil {
		t.Fatal(err)
	}
	w, _ := open(t, dir, 1<<20, 0)
	big := bytes.Repeat([]byte("b"), 2*firstSegmentSize)
	appendDurable(t, w, big)
	if n := w.SegmentCount(); n != 1 {
		t.Fatalf("%d segments after the first record, want 1", n)
	}
	for i := range 20 {
		appendDurable(t, w, big[:10000+i])
	}
	if err := w.Recycle(w.LastLSN()); err != nil {
		t.Fatal(err)
	}
	w.Close()
	w, got := open(t, dir, 1<<20, 0)
	defer w.Close()
	if len(got) == 0 || len(got[len(got)-1]) != 10019 {
		t.Fatalf("replayed %d records", len(got))
	}
}
