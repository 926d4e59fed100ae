package storage

import (
	"errors"
	"testing"
)

// conflictOnC leaves main in a merge stopped by one conflict, on document
// 1 of collection "c"; collection "other" exists too.
func conflictOnC(t *testing.T) *Database {
	t.Helper()
	e := openEngine(t, t.TempDir(), Options{})
	t.Cleanup(func() { e.Close() })
	d, err := e.Database(ctx, "db", true)
	if err != nil {
		t.Fatal(err)
	}
	put(t, d, "main", docKV(1, "x", 1))
	if err := d.WriteBranch(ctx, "main", func(tx *Tx) error {
		_, err := tx.EnsureCollection(ctx, "other")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Commit(ctx, "main", CommitOptions{Message: "base"}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.CreateBranch(ctx, "feature", Revision{Branch: "main"}); err != nil {
		t.Fatal(err)
	}
	for branch, x := range map[string]int{"feature": 10, "main": 20} {
		put(t, d, branch, docKV(1, "x", x))
		if _, err := d.Commit(ctx, branch, CommitOptions{Message: branch}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := d.Merge(ctx, "main", Revision{Branch: "feature"}, MergeOptions{}); !errors.Is(err, ErrMergeConflicts) {
		t.Fatalf("merge: %v, want conflicts", err)
	}
	return d
}

// TestConflictedCollectionCannotBeDroppedOrRenamed: a collection with
// unresolved conflicts can be neither dropped, renamed, nor renamed over,
// and its conflict can then be resolved as usual.
func TestConflictedCollectionCannotBeDroppedOrRenamed(t *testing.T) {
	d := conflictOnC(t)
	for what, fn := range map[string]func(tx *Tx) error{
		"drop":        func(tx *Tx) error { return tx.DropCollection("c") },
		"rename":      func(tx *Tx) error { return tx.RenameCollection("c", "d", false) },
		"rename over": func(tx *Tx) error { return tx.RenameCollection("other", "c", true) },
	} {
		if err := d.WriteBranch(ctx, "main", fn); !errors.Is(err, ErrMergeInProgress) {
			t.Errorf("%s: %v, want ErrMergeInProgress", what, err)
		}
	}
	if err := d.ResolveConflict(ctx, "main", "c", idValue(1), ResolveTheirs, nil); err != nil {
		t.Fatal(err)
	}
	if got := get(t, d, Revision{Branch: "main"}, 1); got.Lookup("x").Int32() != 10 {
		t.Fatalf("resolved document %v, want x 10", got)
	}
	// Resolved: the collection is free again.
	if err := d.WriteBranch(ctx, "main", func(tx *Tx) error { return tx.RenameCollection("c", "d", false) }); err != nil {
		t.Fatalf("rename once resolved: %v", err)
	}
}

// TestResolvingTheConflictOfAMissingCollectionFails: conflicts whose
// collection is gone (as a log replayed from before the refusal can
// leave them) fail to resolve with an error, not a panic, and the merge
// can still be aborted.
func TestResolvingTheConflictOfAMissingCollectionFails(t *testing.T) {
	d := conflictOnC(t)
	if err := d.WriteBranch(ctx, "main", func(tx *Tx) error {
		return tx.redo(ctx, []walOp{{op: opRename, coll: "c", to: "d"}})
	}); err != nil {
		t.Fatal(err)
	}
	err := d.ResolveConflict(ctx, "main", "c", idValue(1), ResolveTheirs, nil)
	if !errors.Is(err, ErrNamespaceNotFound) {
		t.Fatalf("resolve in a renamed collection: %v, want ErrNamespaceNotFound", err)
	}
	if err := d.MergeAbort(ctx, "main"); err != nil {
		t.Fatal(err)
	}
}
