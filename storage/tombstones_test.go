package storage

import (
	"testing"
	"time"
)

// deletedFront fills a database's collection c with n documents,
// checkpoints them, and deletes all but the last keep: a scan from the
// front then steps over n-keep tombstones to the first live document.
func deletedFront(t testing.TB, n, keep int32) *Database {
	t.Helper()
	d := openDatabase(t, Options{CheckpointInterval: time.Hour})
	pad := string(make([]byte, 60))
	mustWrite(t, d, func(tx *Tx) error {
		if _, err := tx.EnsureCollection(ctx, "c"); err != nil {
			return err
		}
		for i := range n {
			if err := tx.Insert(ctx, "c", doc(i, pad)); err != nil {
				return err
			}
		}
		return nil
	})
	if err := d.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, d, func(tx *Tx) error {
		for i := range n - keep {
			if err := tx.Delete(ctx, "c", idValue(i)); err != nil {
				return err
			}
		}
		return nil
	})
	return d
}

// scanAll reads every live document of c and returns how many there were.
func scanAll(t testing.TB, d *Database) int { return len(scanDocs(t, mainSnapshot(t, d), "c")) }

const benchDeleted, benchKept = 50_000, 10

// BenchmarkScanOverTombstones is the cost of a scan stepping over
// deletions since the checkpoint (ns/tombstone), against which
// tombstoneFoldBytes weighs a checkpoint's fold.
func BenchmarkScanOverTombstones(b *testing.B) {
	d := deletedFront(b, benchDeleted+benchKept, benchKept)
	d.tombstones.due = nil // measure the scans, never fold
	b.ResetTimer()
	for range b.N {
		if got := scanAll(b, d); got != benchKept {
			b.Fatalf("%d documents, want %d", got, benchKept)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchDeleted), "ns/tombstone")
}

// BenchmarkCheckpointTombstones is a checkpoint's cost per deletion it
// folds (ns/tombstone), and the edit bytes it folds per tombstone.
func BenchmarkCheckpointTombstones(b *testing.B) {
	var held int64
	for range b.N {
		b.StopTimer()
		d := deletedFront(b, benchDeleted+benchKept, benchKept)
		held = d.branchList()[0].state.Load().editBytes()
		b.StartTimer()
		if err := d.Checkpoint(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchDeleted), "ns/tombstone")
	b.ReportMetric(float64(held)/benchDeleted, "B/tombstone")
}

// editsHeld is what the main branch's state holds in edits of c.
func editsHeld(d *Database) int {
	c := d.branchList()[0].state.Load().colls.get("c")
	if c.edits == nil {
		return 0
	}
	return c.edits.Len()
}

// TestScansOverManyDeletionsCheckpointEarly: scans that step over the
// deletions since the checkpoint again and again get them folded away, by
// a checkpoint long before the periodic one, and read the same documents
// after it.
func TestScansOverManyDeletionsCheckpointEarly(t *testing.T) {
	d := deletedFront(t, 40_010, 10)
	d.tombstones.every = time.Hour // one only, however slowly this test runs
	before := d.engine.DatabaseStats().DeletionCheckpoints
	// 200,000 steps (less what scans end with uncounted): past the
	// minimum, and past the 5.1 MB of tombstones held over 32 bytes.
	for range 5 {
		if got := scanAll(t, d); got != 10 {
			t.Fatalf("%d documents, want 10", got)
		}
	}
	awaitBudgetCheckpoint(d)
	if got := d.engine.DatabaseStats().DeletionCheckpoints - before; got != 1 {
		t.Fatalf("%d early checkpoints, want 1", got)
	}
	if n := editsHeld(d); n != 0 {
		t.Fatalf("%d edits held after the early checkpoint", n)
	}
	if got := scanAll(t, d); got != 10 {
		t.Fatalf("%d documents after the checkpoint, want 10", got)
	}
}

// TestFewDeletionsOrLargeEditsDoNotCheckpoint: scans stepping over fewer
// deletions than the minimum start nothing, and neither do more of them
// when the edits held are too large for the steps to pay for their fold.
func TestFewDeletionsOrLargeEditsDoNotCheckpoint(t *testing.T) {
	d := deletedFront(t, 1_010, 10)
	for range 30 { // 30,000 steps: under the minimum
		scanAll(t, d)
	}
	// 40,000 steps more, 70,000 in all: past the minimum, short of the
	// 4 MB of edits held over 32 bytes.
	big := string(make([]byte, 100<<10))
	mustWrite(t, d, func(tx *Tx) error {
		for i := range int32(40) {
			if err := tx.Insert(ctx, "c", doc(100_000+i, big)); err != nil {
				return err
			}
		}
		return nil
	})
	for range 40 {
		scanAll(t, d)
	}
	awaitBudgetCheckpoint(d)
	if got := d.engine.DatabaseStats().DeletionCheckpoints; got != 0 {
		t.Fatalf("%d early checkpoints, want none", got)
	}
	if n := editsHeld(d); n != 1_040 {
		t.Fatalf("%d edits held, want the 1,040 written", n)
	}
}

// TestEarlyCheckpointsAreSpaced: within tombstoneFoldEvery of an early
// checkpoint, scans over as many new deletions start no other, since each
// checkpoint leaves its replaced nodes in the table files until a GC.
func TestEarlyCheckpointsAreSpaced(t *testing.T) {
	d := deletedFront(t, 40_010, 10)
	d.tombstones.every = time.Hour // however slowly this test runs
	for range 5 {
		scanAll(t, d)
	}
	awaitBudgetCheckpoint(d)
	pad := string(make([]byte, 60))
	mustWrite(t, d, func(tx *Tx) error {
		for i := range int32(40_000) {
			if err := tx.Insert(ctx, "c", doc(-1-i, pad)); err != nil {
				return err
			}
		}
		return nil
	})
	mustWrite(t, d, func(tx *Tx) error {
		for i := range int32(40_000) {
			if err := tx.Delete(ctx, "c", idValue(-1-i)); err != nil {
				return err
			}
		}
		return nil
	})
	for range 5 {
		if got := scanAll(t, d); got != 10 {
			t.Fatalf("%d documents, want 10", got)
		}
	}
	awaitBudgetCheckpoint(d)
	if got := d.engine.DatabaseStats().DeletionCheckpoints; got != 1 {
		t.Fatalf("%d early checkpoints, want 1 within the interval", got)
	}
	if n := editsHeld(d); n != 40_000 {
		t.Fatalf("%d edits held, want the 40,000 deletions since the early checkpoint", n)
	}
	d.tombstones.every = 0 // the interval has passed
	for i := 0; d.engine.DatabaseStats().DeletionCheckpoints < 2; i++ {
		if i == 5 {
			t.Fatal("no second early checkpoint once the interval passed")
		}
		scanAll(t, d)
	}
	awaitBudgetCheckpoint(d)
}
