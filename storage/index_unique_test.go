package storage

import (
	"errors"
	"fmt"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// TestPrepareUniqueThroughACrash: a prepareUnique index refuses new
// duplicates and keeps old ones, IndexDuplicates groups the old ones, and
// both the option and the conversion to unique are replayed from the log
// after a crash with the index's entries intact.
func TestPrepareUniqueThroughACrash(t *testing.T) {
	dir := t.TempDir()
	e := openEngine(t, dir, Options{})
	defer e.Close()
	d, err := e.Database(ctx, "db", true)
	if err != nil {
		t.Fatal(err)
	}
	spec := func(opt string) []bsoncore.Document {
		b := bsoncore.NewDocumentBuilder().AppendInt32("v", 2).
			AppendDocument("key", bsoncore.NewDocumentBuilder().AppendInt32("v", 1).Build()).AppendString("name", "v_1")
		if opt != "" {
			b.AppendBoolean(opt, true)
		}
		return []bsoncore.Document{b.Build()}
	}
	must := func(d *Database, fn func(tx *Tx) error) {
		t.Helper()
		if err := d.Write(ctx, fn); err != nil {
			t.Fatal(err)
		}
	}
	must(d, func(tx *Tx) error {
		if _, err := tx.EnsureCollection(ctx, "c"); err != nil {
			return err
		}
		for i, v := range []string{"a", "a", "b", "c", "c"} {
			if err := tx.Insert(ctx, "c", doc(int32(i), v)); err != nil {
				return err
			}
		}
		return tx.SetIndexes(ctx, "c", spec(""))
	})
	if err := d.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	must(d, func(tx *Tx) error { return tx.SetIndexes(ctx, "c", spec("prepareUnique")) })
	insert := func(d *Database, id int32, v string) error {
		return d.Write(ctx, func(tx *Tx) error { return tx.Insert(ctx, "c", doc(id, v)) })
	}
	duplicates := func(d *Database) string {
		t.Helper()
		var got Duplicates
		must(d, func(tx *Tx) error {
			var err error
			got, err = IndexDuplicates(ctx, tx, "c", "v_1")
			return err
		})
		groups := make([][]int32, len(got.Groups))
		for i, g := range got.Groups {
			for _, id := range g {
				groups[i] = append(groups[i], id.Int32())
			}
		}
		return fmt.Sprint(groups, got.Truncated)
	}
	var dup *DuplicateKeyError
	if err := insert(d, 10, "b"); !errors.As(err, &dup) {
		t.Errorf("a new duplicate: %v", err)
	}
	if err := insert(d, 11, "d"); err != nil {
		t.Fatal(err)
	}
	if got := duplicates(d); got != "[[0 1] [3 4]] false" {
		t.Errorf("duplicates: %s", got)
	}

	dir2, d2 := reopenCrashed(t, dir)
	if err := insert(d2, 12, "d"); !errors.As(err, &dup) {
		t.Errorf("a new duplicate after the crash: %v", err)
	}
	if got := duplicates(d2); got != "[[0 1] [3 4]] false" {
		t.Errorf("duplicates after the crash: %s", got)
	}
	must(d2, func(tx *Tx) error {
		for _, id := range []int32{1, 4} {
			if err := tx.Delete(ctx, "c", idValue(id)); err != nil {
				return err
			}
		}
		return tx.SetIndexes(ctx, "c", spec("unique"))
	})
	if got := duplicates(d2); got != "[] false" {
		t.Errorf("duplicates once resolved: %s", got)
	}

	_, d3 := reopenCrashed(t, dir2)
	ix := mainSnapshot(t, d3).Indexes("c")
	if len(ix) != 1 || !ix[0].Spec.Unique || ix[0].Spec.PrepareUnique {
		t.Fatalf("the index after the second crash: %v", ix)
	}
	if err := insert(d3, 13, "a"); !errors.As(err, &dup) {
		t.Errorf("a duplicate in the converted index: %v", err)
	}
}

// reopenCrashed opens a crash copy of the engine directory dir and
// returns the copy's directory and its database "db".
func reopenCrashed(t *testing.T, dir string) (string, *Database) {
	t.Helper()
	copied := crashCopy(t, dir)
	e := openEngine(t, copied, Options{})
	t.Cleanup(func() { e.Close() })
	d, err := e.Database(ctx, "db", false)
	if err != nil || d == nil {
		t.Fatalf("reopen: %v", err)
	}
	return copied, d
}

// TestTxUnchanged: a transaction sees a collection as a snapshot did until
// something writes to it; writes to other collections do not count.
func TestTxUnchanged(t *testing.T) {
	d := openDatabase(t, Options{})
	write := func(fn func(tx *Tx) error) {
		t.Helper()
		if err := d.Write(ctx, fn); err != nil {
			t.Fatal(err)
		}
	}
	write(func(tx *Tx) error {
		for _, c := range []string{"c", "other"} {
			if _, err := tx.EnsureCollection(ctx, c); err != nil {
				return err
			}
		}
		return tx.Insert(ctx, "c", doc(1, "a"))
	})
	snap := mainSnapshot(t, d)
	unchanged := func() (same bool) {
		write(func(tx *Tx) error { same = tx.Unchanged(snap, "c"); return nil })
		return same
	}
	if !unchanged() {
		t.Error("nothing written: changed")
	}
	write(func(tx *Tx) error { return tx.Insert(ctx, "other", doc(1, "a")) })
	if !unchanged() {
		t.Error("a write to another collection changed c")
	}
	write(func(tx *Tx) error { return tx.Insert(ctx, "c", doc(2, "a")) })
	if unchanged() {
		t.Error("a write to c left it unchanged")
	}
}
