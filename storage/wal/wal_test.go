package wal

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/rs/zerolog"
)

func open(t *testing.T, dir string, segSize int64, after uint64) (*WAL, [][]byte) {
	t.Helper()
	w, err := Open(dir, Options{SegmentSize: segSize}, zerolog.New(io.Discard))
	if err != nil {
		t.Fatal(err)
	}
	var got [][]byte
	if _, err := w.Replay(after, after, func(lsn uint64, p []byte) error {
		got = append(got, append([]byte(nil), p...))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	return w, got
}

func appendDurable(t *testing.T, w *WAL, p []byte) uint64 {
	t.Helper()
	lsn, err := w.Append(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WaitDurable(lsn); err != nil {
		t.Fatal(err)
	}
	return lsn
}

func payload(i int) []byte {
	return []byte(fmt.Sprintf("record-%05d-%s", i, bytes.Repeat([]byte("x"), i%50)))
}

func TestAppendReplayAcrossSegments(t *testing.T) {
	dir := t.TempDir()
	w, _ := open(t, dir, 4096, 0)
	for i := 0; i < 500; i++ {
		if lsn := appendDurable(t, w, payload(i)); lsn != uint64(i+1) {
			t.Fatalf("lsn %d for record %d", lsn, i)
		}
	}
	if w.SegmentCount() < 5 {
		t.Fatalf("expected rotation, have %d segments", w.SegmentCount())
	}
	w.Close()
	w, got := open(t, dir, 4096, 0)
	defer w.Close()
	if len(got) != 500 {
		t.Fatalf("replayed %d records", len(got))
	}
	for i, p := range got {
		if !bytes.Equal(p, payload(i)) {
			t.Fatalf("record %d: %q", i, p)
		}
	}
	// Appending continues the sequence.
	if lsn := appendDurable(t, w, []byte("next")); lsn != 501 {
		t.Fatalf("next lsn %d", lsn)
	}
}

func TestReplaySkipsCheckpointed(t *testing.T) {
	dir := t.TempDir()
	w, _ := open(t, dir, 1<<20, 0)
	for i := 0; i < 10; i++ {
		appendDurable(t, w, payload(i))
	}
	w.Close()
	w, got := open(t, dir, 1<<20, 7)
	defer w.Close()
	if len(got) != 3 || !bytes.Equal(got[0], payload(7)) {
		t.Fatalf("replayed %d records after lsn 7", len(got))
	}
}

func TestCheckpointAheadOfLogNeverReusesLSNs(t *testing.T) {
	dir := t.TempDir()
	w, _ := open(t, dir, 1<<20, 0)
	for i := 0; i < 3; i++ {
		appendDurable(t, w, payload(i))
	}
	w.Close()
	// A checkpoint at LSN 5 includes records the log lost.
	w, _ = open(t, dir, 1<<20, 5)
	if lsn := appendDurable(t, w, []byte("after")); lsn != 6 {
		t.Fatalf("lsn %d, want 6", lsn)
	}
	w.Close()
	w, got := open(t, dir, 1<<20, 5)
	defer w.Close()
	if len(got) != 1 || string(got[0]) != "after" {
		t.Fatalf("replayed %q", got)
	}
}

// lastSegment returns the path of the newest segment.
func lastSegment(t *testing.T, dir string) string {
	segs, err := listSegments(dir)
	if err != nil || len(segs) == 0 {
		t.Fatal(err)
	}
	return filepath.Join(dir, segmentName(segs[len(segs)-1]))
}

func TestTornTailIsDropped(t *testing.T) {
	dir := t.TempDir()
	w, _ := open(t, dir, 1<<20, 0)
	var end int64 = segmentHeaderSize
	for i := 0; i < 5; i++ {
		appendDurable(t, w, payload(i))
		end += int64(recordHeaderSize + len(payload(i)))
	}
	w.Close()
	// Simulate a torn sixth record: its header and half its payload.
	f, _ := os.OpenFile(lastSegment(t, dir), os.O_RDWR, 0)
	rec := appendRecord(nil, 6, payload(5))
	f.WriteAt(rec[:len(rec)/2], end)
	f.Close()
	w, got := open(t, dir, 1<<20, 0)
	if len(got) != 5 {
		t.Fatalf("replayed %d records from a torn log", len(got))
	}
	// The next record overwrites the torn one and survives a reopen.
	appendDurable(t, w, []byte("new sixth"))
	w.Close()
	w, got = open(t, dir, 1<<20, 0)
	defer w.Close()
	if len(got) != 6 || string(got[5]) != "new sixth" {
		t.Fatalf("after overwrite: %d records", len(got))
	}
}

func TestBadCRCOnLastRecordIsDropped(t *testing.T) {
	dir := t.TempDir()
	w, _ := open(t, dir, 1<<20, 0)
	var last int64 = segmentHeaderSize
	for i := 0; i < 4; i++ {
		appendDurable(t, w, payload(i))
		if i < 3 {
			last += int64(recordHeaderSize + len(payload(i)))
		}
	}
	w.Close()
	f, _ := os.OpenFile(lastSegment(t, dir), os.O_RDWR, 0)
	f.WriteAt([]byte{0xff}, last+recordHeaderSize+2) // flip a payload byte of record 4
	f.Close()
	w, got := open(t, dir, 1<<20, 0)
	defer w.Close()
	if len(got) != 3 {
		t.Fatalf("replayed %d records; the corrupt last one must be dropped", len(got))
	}
}

func TestGroupCommitConcurrentWriters(t *testing.T) {
	dir := t.TempDir()
	w, _ := open(t, dir, 64<<10, 0)
	const writers, each = 32, 50
	var wg sync.WaitGroup
	seen := make([]map[uint64]bool, writers)
	for g := 0; g < writers; g++ {
		seen[g] = map[uint64]bool{}
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				lsn, err := w.Append([]byte(fmt.Sprintf("%d-%d", g, i)))
				if err == nil {
					err = w.WaitDurable(lsn)
				}
				if err != nil {
					t.Error(err)
					return
				}
				seen[g][lsn] = true
			}
		}(g)
	}
	wg.Wait()
	w.Close()
	w, got := open(t, dir, 64<<10, 0)
	defer w.Close()
	if len(got) != writers*each {
		t.Fatalf("replayed %d of %d records", len(got), writers*each)
	}
}

func TestRecycleRetiresCheckpointedSegments(t *testing.T) {
	dir := t.TempDir()
	w, _ := open(t, dir, 4096, 0)
	for i := 0; i < 300; i++ {
		appendDurable(t, w, payload(i))
	}
	before := w.SegmentCount()
	if err := w.Recycle(250); err != nil {
		t.Fatal(err)
	}
	if after := w.SegmentCount(); after >= before || after < 1 {
		t.Fatalf("segments %d -> %d", before, after)
	}
	// New records may land in recycled files; old contents must not replay.
	for i := 300; i < 600; i++ {
		appendDurable(t, w, payload(i))
	}
	w.Close()
	w, got := open(t, dir, 4096, 250)
	defer w.Close()
	if len(got) != 350 || !bytes.Equal(got[0], payload(250)) || !bytes.Equal(got[349], payload(599)) {
		t.Fatalf("replayed %d records after recycling", len(got))
	}
}

func TestOversizeRecordGetsItsOwnSegment(t *testing.T) {
	dir := t.TempDir()
	w, _ := open(t, dir, 4096, 0)
	big := bytes.Repeat([]byte("b"), 20000)
	appendDurable(t, w, []byte("small"))
	appendDurable(t, w, big)
	appendDurable(t, w, []byte("after"))
	w.Close()
	w, got := open(t, dir, 4096, 0)
	defer w.Close()
	if len(got) != 3 || !bytes.Equal(got[1], big) {
		t.Fatalf("replayed %d", len(got))
	}
}

// TestReopenAndAppendInAlignedBlocks reopens the log again and again at
// offsets inside a block, so every first write after an open rewrites a
// block holding records written before the open (read back into the
// segment's tail), with records of every size across block and segment
// boundaries; with O_DIRECT where the file system allows it, and with
// buffered writes and fdatasync.
func TestReopenAndAppendInAlignedBlocks(t *testing.T) {
	for _, direct := range []bool{true, false} {
		t.Run(fmt.Sprintf("direct=%v", direct), func(t *testing.T) {
			useDirectIO = direct
			t.Cleanup(func() { useDirectIO = true })
			dir := t.TempDir()
			rng := rand.New(rand.NewPCG(7, 11))
			var model [][]byte
			for cycle := 0; cycle < 25; cycle++ {
				w, got := open(t, dir, 64<<10, 0)
				if cycle == 1 && direct != w.seg.direct {
					t.Logf("this file system refuses O_DIRECT")
				}
				if len(got) != len(model) {
					t.Fatalf("cycle %d: replayed %d records, want %d", cycle, len(got), len(model))
				}
				for i := range got {
					if !bytes.Equal(got[i], model[i]) {
						t.Fatalf("cycle %d: record %d differs", cycle, i+1)
					}
				}
				for range 1 + rng.IntN(8) {
					p := bytes.Repeat([]byte{byte(rng.IntN(255) + 1)}, 1+rng.IntN(9000))
					appendDurable(t, w, p)
					model = append(model, p)
				}
				w.Close()
			}
		})
	}
}

// TestDirectWriteRefusedFallsBack: when an O_DIRECT write is refused
// (here a buffer off the alignment, as a file system wanting larger
// alignment would refuse ours), the segment drops O_DIRECT, keeps O_DSYNC
// and the records stay durable and readable.
func TestDirectWriteRefusedFallsBack(t *testing.T) {
	dir := t.TempDir()
	w, _ := open(t, dir, 64<<10, 0)
	appendDurable(t, w, payload(0))
	if !w.seg.direct {
		t.Skip("this file system refuses O_DIRECT: nothing to fall back from")
	}
	raw := make([]byte, 3*blockSize)
	w.seg.buf = raw[1 : 1+2*blockSize] // misaligned: O_DIRECT refuses it
	for i := 1; i < 20; i++ {
		appendDurable(t, w, payload(i))
	}
	w.Close()
	w, got := open(t, dir, 64<<10, 0)
	defer w.Close()
	if len(got) != 20 {
		t.Fatalf("replayed %d records, want 20", len(got))
	}
	for i, p := range got {
		if !bytes.Equal(p, payload(i)) {
			t.Fatalf("record %d differs", i+1)
		}
	}
}

// TestFailedWriteIsUndoneAndItsLSNsNeverReused: a write that fails loses
// the records that were not durable; what it left on disk is undone before
// the log goes on, in a new segment past the lost LSNs, and a waiter for a
// lost record gets the error even after later records are durable.
func TestFailedWriteIsUndoneAndItsLSNsNeverReused(t *testing.T) {
	dir := t.TempDir()
	failures := make(chan struct{}, 1)
	w, err := Open(dir, Options{SegmentSize: 1 << 20, OnFailure: func() { failures <- struct{}{} }}, zerolog.New(io.Discard))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Replay(0, 0, func(uint64, []byte) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		appendDurable(t, w, payload(i))
	}
	// The next write fails (a read-only handle), but as a torn write may,
	// it left its records on disk: a reopen would replay them unless they
	// are undone.
	seg, path := w.seg, lastSegment(t, dir)
	leaveOnDisk(t, path, seg.off, appendRecord(appendRecord(nil, 6, payload(5)), 7, payload(6)))
	writable := seg.f
	readOnly, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	seg.f = readOnly
	lsn6, _ := w.Append(payload(5))
	lsn7, _ := w.Append(payload(6))
	for _, lsn := range []uint64{lsn6, lsn7} {
		if err := w.WaitDurable(lsn); !errors.Is(err, ErrWriteFailed) {
			t.Fatalf("wait for lost record %d: %v", lsn, err)
		}
	}
	<-failures
	if _, err := w.Append(payload(7)); !errors.Is(err, ErrWriteFailed) {
		t.Fatalf("append before Resume: %v", err)
	}
	seg.f = writable // the cause is gone
	readOnly.Close()
	w.Resume()
	if lsn := appendDurable(t, w, payload(7)); lsn != 8 {
		t.Fatalf("lsn %d after the failure, want 8: lost LSNs are never reused", lsn)
	}
	if err := w.WaitDurable(lsn6); !errors.Is(err, ErrWriteFailed) {
		t.Fatalf("late wait for a lost record: %v", err)
	}
	if n := w.SegmentCount(); n != 2 {
		t.Fatalf("%d segments, want 2: the log goes on in a new one", n)
	}
	w.Close()
	got := replayedLSNs(t, dir)
	if want := []uint64{1, 2, 3, 4, 5, 8}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("replayed LSNs %v, want %v", got, want)
	}
}

// leaveOnDisk writes data at off through a handle of its own, durably.
func leaveOnDisk(t *testing.T, path string, off int64, data []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(data, off); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
}

// replayedLSNs opens the log in dir and lists the LSNs it replays.
func replayedLSNs(t *testing.T, dir string) []uint64 {
	t.Helper()
	w, err := Open(dir, Options{}, zerolog.New(io.Discard))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var lsns []uint64
	if _, err := w.Replay(0, 0, func(lsn uint64, _ []byte) error { lsns = append(lsns, lsn); return nil }); err != nil {
		t.Fatal(err)
	}
	return lsns
}
