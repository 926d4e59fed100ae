package storage

import (
	"errors"
	"testing"
	"time"
)

// TestUndropRestoresADroppedDatabase: a dropped database, its commits and
// its writes after the last checkpoint, comes back by undrop, also after
// a restart, under its name or another; a purge removes it for good, and
// the retention's end too.
func TestUndropRestoresADroppedDatabase(t *testing.T) {
	dir := t.TempDir()
	opts := Options{UndropRetention: time.Hour}
	e, d := engineDatabase(t, dir, opts, true)
	insertOne(t, d, 1)
	commitAs(t, d, "one")
	insertOne(t, d, 2) // in the log only
	if err := e.DropDatabaseBy("db", "alice"); err != nil {
		t.Fatal(err)
	}
	if d, err := e.Database(ctx, "db", false); d != nil || err != nil {
		t.Fatalf("the dropped database is still there: %v", err)
	}
	e.Close()

	e = openEngine(t, crashCopy(t, dir), opts) // a restart after a crash
	defer e.Close()
	dropped, err := e.DroppedDatabases()
	if err != nil || len(dropped) != 1 || dropped[0].Name != "db" || dropped[0].By != "alice" || dropped[0].Bytes == 0 {
		t.Fatalf("dropped databases %+v (%v)", dropped, err)
	}
	if _, err := e.Undrop("db", ""); err != nil {
		t.Fatal(err)
	}
	d, err = e.Database(ctx, "db", false)
	if err != nil || d == nil {
		t.Fatalf("the undropped database does not open: %v", err)
	}
	if got := contents(t, d, "c"); len(got) != 2 {
		t.Errorf("undropped contents %v, want documents 1 and 2", got)
	}
	if log, err := d.Log(ctx, LogOptions{From: Revision{Branch: DefaultBranch}}); err != nil || len(log) != 2 {
		t.Errorf("undropped history %+v (%v)", log, err)
	}
	if _, err := e.Undrop("db", ""); !errors.Is(err, ErrNotDropped) {
		t.Errorf("a second undrop: %v", err)
	}

	// Under another name, while a new database has taken the old one.
	if err := e.DropDatabaseBy("db", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Database(ctx, "db", true); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Undrop("db", ""); !errors.Is(err, ErrDatabaseExists) {
		t.Errorf("undrop over an existing database: %v", err)
	}
	if _, err := e.Undrop("db", "restored"); err != nil {
		t.Fatal(err)
	}
	if r, _ := e.Database(ctx, "restored", false); r == nil || len(contents(t, r, "c")) != 2 {
		t.Error("the database undropped under another name lacks its documents")
	}

	// Purge and retention.
	for _, name := range []string{"db", "restored"} {
		if err := e.DropDatabaseBy(name, ""); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := e.PurgeDropped("db"); n != 1 || err != nil {
		t.Errorf("purge: %d %v", n, err)
	}
	if e.DroppedBytes() == 0 {
		t.Error("the kept drop of restored holds no bytes")
	}
	if err := e.expireDropped(time.Now().Add(2 * time.Hour)); err != nil {
		t.Fatal(err)
	}
	if dropped, _ := e.DroppedDatabases(); len(dropped) != 0 {
		t.Errorf("after the retention: %+v", dropped)
	}
}

// TestUndropCollectionAfterRestart: a kept collection drop survives the
// engine's restart, restores with its documents, and is forgotten once
// restored; without a retention nothing is kept.
func TestUndropCollectionAfterRestart(t *testing.T) {
	dir := t.TempDir()
	opts := Options{UndropRetention: time.Hour}
	e, d := engineDatabase(t, dir, opts, true)
	mustWrite(t, d, func(tx *Tx) error {
		if _, err := tx.EnsureCollection(ctx, "c"); err != nil {
			return err
		}
		for i := int32(1); i <= 2500; i++ {
			if err := tx.Insert(ctx, "c", doc(i, "v")); err != nil {
				return err
			}
		}
		return nil
	})
	if err := d.KeepDroppedCollection(ctx, DefaultBranch, "c", "ann@admin"); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, d, func(tx *Tx) error { return tx.DropCollection("c") })
	e.Close()

	e, d = engineDatabase(t, dir, opts, false)
	defer e.Close()
	kept, err := d.DroppedCollections(ctx)
	if err != nil || len(kept) != 1 || kept[0].Name != "c" || kept[0].By != "ann@admin" || kept[0].Documents != 2500 {
		t.Fatalf("kept drops after a restart: %+v (%v)", kept, err)
	}
	if _, err := d.UndropCollection(ctx, "c", nil, "", func(string) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if got := len(contents(t, d, "c")); got != 2500 {
		t.Errorf("%d documents restored, want 2500", got)
	}
	if _, err := d.UndropCollection(ctx, "c", nil, "", func(string) error { return nil }); !errors.Is(err, ErrCollectionNotDropped) {
		t.Errorf("a second undrop: %v", err)
	}

	none := openDatabase(t, Options{})
	mustWrite(t, none, func(tx *Tx) error { _, err := tx.EnsureCollection(ctx, "c"); return err })
	if err := none.KeepDroppedCollection(ctx, DefaultBranch, "c", ""); err != nil {
		t.Fatal(err)
	}
	if kept, _ := none.DroppedCollections(ctx); len(kept) != 0 {
		t.Errorf("kept without a retention: %+v", kept)
	}
}
