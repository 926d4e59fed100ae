package storage

import (
	"errors"
	"io"
	"testing"

	"github.com/dumbodb/dumbodb/index"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

func docKV(id int32, kv ...any) bsoncore.Document {
	b := bsoncore.NewDocumentBuilder().AppendInt32("_id", id)
	for i := 0; i < len(kv); i += 2 {
		switch v := kv[i+1].(type) {
		case string:
			b.AppendString(kv[i].(string), v)
		case int:
			b.AppendInt32(kv[i].(string), int32(v))
		}
	}
	return b.Build()
}

func put(t testing.TB, d *Database, branch string, doc bsoncore.Document) {
	t.Helper()
	err := d.WriteBranch(ctx, branch, func(tx *Tx) error {
		if _, err := tx.EnsureCollection(ctx, "c"); err != nil {
			return err
		}
		if _, found, _ := tx.Get(ctx, "c", doc.Lookup("_id")); found {
			return tx.Replace(ctx, "c", doc)
		}
		return tx.Insert(ctx, "c", doc)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func get(t *testing.T, d *Database, rev Revision, id int32) bsoncore.Document {
	t.Helper()
	snap, err := d.SnapshotAt(ctx, rev)
	if err != nil {
		t.Fatal(err)
	}
	doc, _, err := snap.Get(ctx, "c", idValue(id))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func TestCommitBranchMergeAndConflicts(t *testing.T) {
	dir := t.TempDir()
	e := openEngine(t, dir, Options{})
	d, _ := e.Database(ctx, "db", true)
	main := Revision{Branch: "main"}
	put(t, d, "main", docKV(1, "a", 1, "b", 1))
	put(t, d, "main", docKV(2, "x", 1))
	c1, err := d.Commit(ctx, "main", CommitOptions{Message: "first", Author: "Ann <ann@x>"})
	if err != nil || c1.Author != "Ann <ann@x>" || len(c1.Parents) != 1 {
		t.Fatalf("commit %+v %v", c1, err)
	}
	if _, err := d.Commit(ctx, "main", CommitOptions{Message: "again"}); !errors.Is(err, ErrNothingToCommit) {
		t.Fatalf("empty commit: %v", err)
	}
	if _, err := d.CreateBranch(ctx, "feature", main); err != nil {
		t.Fatal(err)
	}
	// Different fields of one document on each side merge cleanly.
	put(t, d, "feature", docKV(1, "a", 2, "b", 1))
	put(t, d, "feature", docKV(3, "new", 1))
	if _, err := d.Commit(ctx, "feature", CommitOptions{Message: "feature work"}); err != nil {
		t.Fatal(err)
	}
	put(t, d, "main", docKV(1, "a", 1, "b", 2))
	if _, err := d.Commit(ctx, "main", CommitOptions{Message: "main work"}); err != nil {
		t.Fatal(err)
	}
	res, err := d.Merge(ctx, "main", Revision{Branch: "feature"}, MergeOptions{})
	if err != nil || res.FastForward || len(res.Commit.Parents) != 2 {
		t.Fatalf("merge %+v %v", res, err)
	}
	if got := get(t, d, main, 1); got.Lookup("a").Int32() != 2 || got.Lookup("b").Int32() != 2 {
		t.Fatalf("field-level merge gave %v", got)
	}
	if get(t, d, main, 3) == nil {
		t.Fatal("their new document is missing")
	}
	// The same field changed on both sides conflicts.
	put(t, d, "feature", docKV(2, "x", 10))
	d.Commit(ctx, "feature", CommitOptions{Message: "x=10"})
	put(t, d, "main", docKV(2, "x", 20))
	d.Commit(ctx, "main", CommitOptions{Message: "x=20"})
	head, _ := d.headCommit(ctx, "main")
	res, err = d.Merge(ctx, "main", Revision{Branch: "feature"}, MergeOptions{})
	if !errors.Is(err, ErrMergeConflicts) || res.Conflicts["c"] != 1 {
		t.Fatalf("conflicting merge: %+v %v", res, err)
	}
	if now, _ := d.headCommit(ctx, "main"); now.Addr() != head.Addr() {
		t.Fatal("HEAD moved on a conflicting merge")
	}
	// The merge state survives a restart.
	e.Close()
	e = openEngine(t, dir, Options{})
	defer e.Close()
	d, _ = e.Database(ctx, "db", false)
	confs, err := d.Conflicts(ctx, "main", "")
	if err != nil || len(confs) != 1 || confs[0].Theirs.Lookup("x").Int32() != 10 || confs[0].Ours.Lookup("x").Int32() != 20 {
		t.Fatalf("conflicts after restart: %+v %v", confs, err)
	}
	if _, err := d.MergeContinue(ctx, "main", CommitOptions{}); !errors.Is(err, ErrUnresolved) {
		t.Fatalf("continue with conflicts: %v", err)
	}
	if err := d.ResolveConflict(ctx, "main", "c", idValue(2), ResolveTheirs, nil); err != nil {
		t.Fatal(err)
	}
	mc, err := d.MergeContinue(ctx, "main", CommitOptions{})
	if err != nil || len(mc.Parents) != 2 {
		t.Fatalf("continue: %+v %v", mc, err)
	}
	if get(t, d, main, 2).Lookup("x").Int32() != 10 {
		t.Fatal("resolution not applied")
	}
	// History, diff and read-only snapshots.
	log, err := d.Log(ctx, LogOptions{From: main})
	if err != nil || len(log) < 6 || log[0].ID != mc.ID {
		t.Fatalf("log %d entries: %v", len(log), err)
	}
	docLog, _ := d.Log(ctx, LogOptions{From: main, Collections: []string{"c"}, IDs: []bsoncore.Value{idValue(2)}})
	if len(docLog) < 3 {
		t.Fatalf("history of _id 2: %d commits", len(docLog))
	}
	prev, err := d.Resolve(ctx, "main~1", "main")
	if err != nil || !prev.ReadOnly() {
		t.Fatalf("resolve main~1: %v", err)
	}
	diffs, err := d.Diff(ctx, DiffSide{Rev: prev}, DiffSide{Rev: main}, "")
	if err != nil || len(diffs) != 1 || len(diffs[0].Modified) != 1 || diffs[0].Modified[0].Fields[0].Path != "x" {
		t.Fatalf("diff %+v %v", diffs, err)
	}
	// Revert the merge's first parent change and reset.
	if _, err := d.CreateTag(ctx, "v1", main, "release"); err != nil {
		t.Fatal(err)
	}
	tag, _ := d.Resolve(ctx, "v1", "main")
	if _, err := d.Reset(ctx, "main", Revision{Commit: c1CommitOf(t, d, c1)}, true); err != nil {
		t.Fatal(err)
	}
	if get(t, d, main, 3) != nil || get(t, d, tag, 3) == nil {
		t.Fatal("hard reset or tag snapshot wrong")
	}
}

func c1CommitOf(t *testing.T, d *Database, c CommitInfo) [20]byte {
	rev, err := d.Resolve(ctx, c.ID, "main")
	if err != nil {
		t.Fatal(err)
	}
	return rev.Commit
}

func TestCherryPickAndRevert(t *testing.T) {
	e := openEngine(t, t.TempDir(), Options{})
	defer e.Close()
	d, _ := e.Database(ctx, "db", true)
	put(t, d, "main", docKV(1, "v", 1))
	d.Commit(ctx, "main", CommitOptions{Message: "base"})
	d.CreateBranch(ctx, "side", Revision{Branch: "main"})
	put(t, d, "side", docKV(2, "v", 2))
	pick, _ := d.Commit(ctx, "side", CommitOptions{Message: "add 2"})
	rev, _ := d.Resolve(ctx, pick.ID, "main")
	res, err := d.CherryPick(ctx, "main", rev, CommitOptions{})
	if err != nil || res.Commit.Message != "add 2" || get(t, d, Revision{Branch: "main"}, 2) == nil {
		t.Fatalf("cherry-pick %+v %v", res, err)
	}
	mainRev, _ := d.Resolve(ctx, res.Commit.ID, "main")
	if _, err := d.Revert(ctx, "main", mainRev, CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	if get(t, d, Revision{Branch: "main"}, 2) != nil {
		t.Fatal("revert left the document")
	}
}

func TestRebaseWithConflictAndGC(t *testing.T) {
	e := openEngine(t, t.TempDir(), Options{})
	defer e.Close()
	d, _ := e.Database(ctx, "db", true)
	main := Revision{Branch: "main"}
	put(t, d, "main", docKV(1, "v", 1))
	d.Commit(ctx, "main", CommitOptions{Message: "base"})
	d.CreateBranch(ctx, "topic", main)
	put(t, d, "topic", docKV(2, "v", 2))
	d.Commit(ctx, "topic", CommitOptions{Message: "topic adds 2"})
	put(t, d, "topic", docKV(1, "v", 10))
	d.Commit(ctx, "topic", CommitOptions{Message: "topic sets 1"})
	put(t, d, "main", docKV(1, "v", 20))
	d.Commit(ctx, "main", CommitOptions{Message: "main sets 1"})

	_, err := d.Rebase(ctx, "topic", main)
	if !errors.Is(err, ErrMergeConflicts) {
		t.Fatalf("rebase: %v", err)
	}
	if get(t, d, Revision{Branch: "topic"}, 2) == nil {
		t.Fatal("the first replayed commit is missing")
	}
	if err := d.ResolveConflict(ctx, "topic", "c", idValue(1), ResolveTheirs, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := d.MergeContinue(ctx, "topic", CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	log, _ := d.Log(ctx, LogOptions{From: Revision{Branch: "topic"}})
	if len(log) != 5 || log[0].Message != "topic sets 1" || log[1].Message != "topic adds 2" || log[2].Message != "main sets 1" {
		t.Fatalf("rebased history %+v", log)
	}
	// Abort puts the branch back.
	d.CreateBranch(ctx, "other", Revision{Branch: "main"})
	put(t, d, "other", docKV(1, "v", 30))
	before, _ := d.Commit(ctx, "other", CommitOptions{Message: "other sets 1"})
	if _, err := d.Rebase(ctx, "other", Revision{Branch: "topic"}); !errors.Is(err, ErrMergeConflicts) {
		t.Fatalf("second rebase: %v", err)
	}
	if err := d.MergeAbort(ctx, "other"); err != nil {
		t.Fatal(err)
	}
	if h, _ := d.headCommit(ctx, "other"); h.Addr().String() != before.ID {
		t.Fatal("abort did not restore the head")
	}
	// GC keeps everything reachable.
	if err := d.DeleteBranch(ctx, "other", "main", true); err != nil {
		t.Fatal(err)
	}
	b, a, err := d.GC(ctx)
	if err != nil || a > b {
		t.Fatalf("gc %d -> %d: %v", b, a, err)
	}
	if get(t, d, Revision{Branch: "topic"}, 2) == nil || get(t, d, main, 1).Lookup("v").Int32() != 20 {
		t.Fatal("data lost by GC")
	}
	put(t, d, "main", docKV(5, "v", 5))
	if get(t, d, main, 5) == nil {
		t.Fatal("write after GC")
	}
}

func setUnique(t *testing.T, d *Database, branch, field string) {
	t.Helper()
	spec := bsoncore.NewDocumentBuilder().
		AppendDocument("key", bsoncore.NewDocumentBuilder().AppendInt32(field, 1).Build()).
		AppendString("name", field+"_1").AppendBoolean("unique", true).Build()
	err := d.WriteBranch(ctx, branch, func(tx *Tx) error {
		if _, err := tx.EnsureCollection(ctx, "c"); err != nil {
			return err
		}
		return tx.SetIndexes(ctx, "c", []bsoncore.Document{spec})
	})
	if err != nil {
		t.Fatal(err)
	}
}

// indexIDs lists the _id keys of an index's entries on a branch.
func indexIDs(t *testing.T, d *Database, branch, name string) map[string]int {
	t.Helper()
	snap, err := d.BranchSnapshot(ctx, branch)
	if err != nil {
		t.Fatal(err)
	}
	it, err := snap.IndexScan(ctx, "c", name, index.Interval{Start: []byte{1}})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for {
		_, id, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out[string(id)]++
	}
}

func TestMergeUniqueIndexClashesAreConflicts(t *testing.T) {
	dir := t.TempDir()
	e := openEngine(t, dir, Options{})
	d, _ := e.Database(ctx, "db", true)
	main := Revision{Branch: "main"}
	setUnique(t, d, "main", "email")
	put(t, d, "main", docKV(3, "email", "c", "n", 1))
	put(t, d, "main", docKV(4, "email", "d", "n", 1))
	put(t, d, "main", docKV(5, "email", "e", "n", 1))
	if _, err := d.Commit(ctx, "main", CommitOptions{Message: "base"}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.CreateBranch(ctx, "feature", main); err != nil {
		t.Fatal(err)
	}
	// Both sides add a document with email x; they change document 3 to
	// email y while we add document 6 with y; both change document 5, we
	// keep its email, they move it to x too (field-level merge would
	// otherwise give it x). Document 4 moves to z on their side only: no
	// clash, it merges.
	put(t, d, "feature", docKV(2, "email", "x"))
	put(t, d, "feature", docKV(3, "email", "y", "n", 1))
	put(t, d, "feature", docKV(4, "email", "z", "n", 1))
	put(t, d, "feature", docKV(5, "email", "x2", "n", 1))
	if _, err := d.Commit(ctx, "feature", CommitOptions{Message: "theirs"}); err != nil {
		t.Fatal(err)
	}
	put(t, d, "main", docKV(1, "email", "x"))
	put(t, d, "main", docKV(6, "email", "y"))
	put(t, d, "main", docKV(7, "email", "x2"))
	put(t, d, "main", docKV(5, "email", "e", "n", 2))
	if _, err := d.Commit(ctx, "main", CommitOptions{Message: "ours"}); err != nil {
		t.Fatal(err)
	}
	head, _ := d.headCommit(ctx, "main")
	res, err := d.Merge(ctx, "main", Revision{Branch: "feature"}, MergeOptions{})
	if !errors.Is(err, ErrMergeConflicts) || res.Conflicts["c"] != 3 {
		t.Fatalf("merge: %+v %v", res, err)
	}
	if now, _ := d.headCommit(ctx, "main"); now.Addr() != head.Addr() {
		t.Fatal("HEAD moved on a conflicting merge")
	}
	confs, err := d.Conflicts(ctx, "main", "c")
	if err != nil || len(confs) != 3 {
		t.Fatalf("conflicts %+v %v", confs, err)
	}
	byID := map[int32]Conflict{}
	for _, c := range confs {
		byID[c.ID.Int32()] = c
	}
	if c := byID[2]; c.Ours != nil || c.Base != nil || c.Theirs.Lookup("email").StringValue() != "x" {
		t.Fatalf("conflict on 2: %+v", c)
	}
	if c := byID[3]; c.Ours.Lookup("email").StringValue() != "c" || c.Base.Lookup("email").StringValue() != "c" ||
		c.Theirs.Lookup("email").StringValue() != "y" {
		t.Fatalf("conflict on 3: %+v", c)
	}
	if c := byID[5]; c.Ours.Lookup("n").Int32() != 2 || c.Theirs.Lookup("email").StringValue() != "x2" {
		t.Fatalf("conflict on 5: %+v", c)
	}
	// Ours stays in the data; the clean change merged.
	if get(t, d, main, 2) != nil || get(t, d, main, 3).Lookup("email").StringValue() != "c" ||
		get(t, d, main, 5).Lookup("email").StringValue() != "e" || get(t, d, main, 4).Lookup("email").StringValue() != "z" {
		t.Fatal("merged data wrong")
	}
	// A resolution that still violates the index fails and keeps the conflict.
	err = d.ResolveConflict(ctx, "main", "c", idValue(2), ResolveTheirs, nil)
	var dup *DuplicateKeyError
	if !errors.As(err, &dup) || dup.Index != "email_1" {
		t.Fatalf("violating resolution: %v", err)
	}
	if confs, _ := d.Conflicts(ctx, "main", "c"); len(confs) != 3 || get(t, d, main, 2) != nil {
		t.Fatal("a failed resolution changed the state")
	}
	// The stopped merge survives a restart.
	e.Close()
	e = openEngine(t, dir, Options{})
	defer e.Close()
	d, _ = e.Database(ctx, "db", false)
	if err := d.ResolveConflict(ctx, "main", "c", idValue(2), ResolveCustom, docKV(2, "email", "x3")); err != nil {
		t.Fatal(err)
	}
	if err := d.ResolveConflict(ctx, "main", "c", idValue(3), ResolveOurs, nil); err != nil {
		t.Fatal(err)
	}
	if err := d.ResolveConflict(ctx, "main", "c", idValue(5), ResolveOurs, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := d.MergeContinue(ctx, "main", CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	if ids := indexIDs(t, d, "main", "email_1"); len(ids) != 7 {
		t.Fatalf("index entries after the merge: %v", ids)
	}
	if get(t, d, main, 2).Lookup("email").StringValue() != "x3" {
		t.Fatal("custom resolution lost")
	}
}

func TestMergeUniqueIndexWithoutClash(t *testing.T) {
	e := openEngine(t, t.TempDir(), Options{})
	defer e.Close()
	d, _ := e.Database(ctx, "db", true)
	main := Revision{Branch: "main"}
	setUnique(t, d, "main", "email")
	put(t, d, "main", docKV(1, "email", "a"))
	put(t, d, "main", docKV(2, "email", "b"))
	d.Commit(ctx, "main", CommitOptions{Message: "base"})
	d.CreateBranch(ctx, "feature", main)
	// They free "a" and take it for a new document; we free "b" and give
	// it to document 1's neighbour.
	put(t, d, "feature", docKV(1, "email", "a2"))
	put(t, d, "feature", docKV(3, "email", "a"))
	d.Commit(ctx, "feature", CommitOptions{Message: "theirs"})
	put(t, d, "main", docKV(2, "email", "b2"))
	put(t, d, "main", docKV(4, "email", "b"))
	d.Commit(ctx, "main", CommitOptions{Message: "ours"})
	if _, err := d.Merge(ctx, "main", Revision{Branch: "feature"}, MergeOptions{}); err != nil {
		t.Fatal(err)
	}
	if ids := indexIDs(t, d, "main", "email_1"); len(ids) != 4 {
		t.Fatalf("index entries: %v", ids)
	}
	// A cherry-pick that brings a clashing key stops with a conflict too.
	d.CreateBranch(ctx, "side", main)
	put(t, d, "side", docKV(9, "email", "z"))
	pick, _ := d.Commit(ctx, "side", CommitOptions{Message: "add z"})
	put(t, d, "main", docKV(8, "email", "z"))
	d.Commit(ctx, "main", CommitOptions{Message: "main z"})
	rev, _ := d.Resolve(ctx, pick.ID, "main")
	if res, err := d.CherryPick(ctx, "main", rev, CommitOptions{}); !errors.Is(err, ErrMergeConflicts) || res.Conflicts["c"] != 1 {
		t.Fatalf("cherry-pick: %+v %v", res, err)
	}
	if err := d.MergeAbort(ctx, "main"); err != nil {
		t.Fatal(err)
	}
}
