package storage

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// TestGCKeepsPreparedIndexes: an index built ahead of its createIndexes
// (PrepareIndexes, outside every lock) is in the store but in no state
// until SetIndexes takes it; a GC in between keeps it, so the index reads
// back, and again once the engine reopens from disk.
func TestGCKeepsPreparedIndexes(t *testing.T) {
	dir := t.TempDir()
	e := openEngine(t, dir, Options{})
	d, err := e.Database(ctx, "db", true)
	if err != nil {
		t.Fatal(err)
	}
	insertPadded(t, d, "big", 2000, 20)
	if err := d.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	specs := []bsoncore.Document{indexSpec("v_1", false, "v")}
	prepared, err := PrepareIndexes(ctx, mainSnapshot(t, d), "big", specs)
	if err != nil || prepared == nil {
		t.Fatalf("prepare: %v, %v", prepared, err)
	}
	if _, _, err := d.GC(ctx); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, d, func(tx *Tx) error { return tx.SetIndexes(ctx, "big", specs, prepared) })
	if err := d.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	check := func(d *Database, when string) {
		t.Helper()
		sizes, err := mainSnapshot(t, d).IndexSizes(ctx, "big")
		if err != nil || len(sizes) != 1 || sizes[0].Bytes == 0 {
			t.Fatalf("%s: the prepared index: %v, %v", when, sizes, err)
		}
	}
	check(d, "live")
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e = openEngine(t, dir, Options{})
	defer e.Close()
	if d, err = e.Database(ctx, "db", false); err != nil {
		t.Fatal(err)
	}
	check(d, "reopened")
}
