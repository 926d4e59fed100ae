package storage

import (
	"testing"
)

// TestMergeCommitSurvivesACrash: a three-way merge commits a root built
// afresh, which must claim every log record its branch had so far. Were
// it to claim none, recovery after a crash would replay the branch's
// records over the merged data: here, the drop of a collection the
// merged root no longer has, which fails, and whose failure keeps the
// database from opening.
func TestMergeCommitSurvivesACrash(t *testing.T) {
	dir := t.TempDir()
	e, d := engineDatabase(t, dir, Options{}, true)
	defer e.Close()
	mustWrite(t, d, func(tx *Tx) error {
		_, err := tx.EnsureCollection(ctx, "tmp")
		return err
	})
	mustWrite(t, d, func(tx *Tx) error { return tx.DropCollection("tmp") })
	put(t, d, "main", docKV(1, "v", "base"))
	commit := func(branch string) {
		t.Helper()
		if _, err := d.Commit(ctx, branch, CommitOptions{Message: branch}); err != nil {
			t.Fatal(err)
		}
	}
	commit("main")
	if _, err := d.CreateBranch(ctx, "side", Revision{Branch: "main"}); err != nil {
		t.Fatal(err)
	}
	put(t, d, "side", docKV(2, "v", "theirs"))
	commit("side")
	put(t, d, "main", docKV(1, "v", "ours"))
	commit("main")
	if _, err := d.Merge(ctx, "main", Revision{Branch: "side"}, MergeOptions{}); err != nil {
		t.Fatal(err)
	}
	e2, d2 := engineDatabase(t, crashCopy(t, dir), Options{}, false)
	defer e2.Close()
	got := scanDocs(t, mainSnapshot(t, d2), "c")
	if len(got) != 2 || got[1].Lookup("v").StringValue() != "ours" || got[2].Lookup("v").StringValue() != "theirs" {
		t.Fatalf("after the crash, main holds %v", got)
	}
}
