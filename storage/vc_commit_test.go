package storage

import (
	"errors"
	"maps"
	"testing"
)

// headModel reads collection "a" at the head commit of main: _id -> v.
func headModel(t *testing.T, d *Database) map[int32]string {
	t.Helper()
	head, err := d.headCommit(ctx, DefaultBranch)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := d.SnapshotAt(ctx, Revision{Commit: head.Addr()})
	if err != nil {
		t.Fatal(err)
	}
	got := map[int32]string{}
	for id, doc := range scanDocs(t, snap, "a") {
		got[id] = doc.Lookup("v").StringValue()
	}
	return got
}

// TestCommitBesideTheWriters: a commit holds the writes published before
// it and none after; a write made while its fold runs is not held up by it
// and stays in the working set, on top of the commit, in memory and after
// a crash. The commit is the durable working root too, up to its freeze.
func TestCommitBesideTheWriters(t *testing.T) {
	dir := t.TempDir()
	e := openEngine(t, dir, Options{})
	defer e.Close()
	d, _ := e.Database(ctx, "db", true)
	m := ckModel{"a": {}}
	createIndexed(t, d, m)
	writeSome(t, d, m, 0, 100, "before")
	// The store's first write makes main's first commit under the lock
	// (birth.go); this one and what follows are written beside it.
	if err := d.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	writeSome(t, d, m, 100, 110, "before")
	b := d.loadedBranch(DefaultBranch)
	frozenLSN := b.state.Load().lsn

	held, release := holdFolds(t, d.engine)
	done := make(chan error, 1)
	go func() {
		_, err := d.Commit(ctx, DefaultBranch, CommitOptions{Message: "before"})
		done <- err
	}()
	await(t, held, "the commit's fold")
	wrote := make(chan error, 1)
	go func() {
		wrote <- d.Write(ctx, func(tx *Tx) error {
			if err := tx.Replace(ctx, "a", doc(7, "during")); err != nil {
				return err
			}
			return tx.Insert(ctx, "a", doc(1000, "during"))
		})
	}()
	if err := await(t, wrote, "the write during the commit"); err != nil {
		t.Fatal(err)
	}
	committed := maps.Clone(m["a"])
	m["a"][7], m["a"][1000] = "during", "during"
	select {
	case err := <-done:
		t.Fatalf("the commit ended (%v) while its fold was held", err)
	default:
	}
	release()
	if err := await(t, done, "the commit"); err != nil {
		t.Fatal(err)
	}
	if got := headModel(t, d); !maps.Equal(got, committed) {
		t.Fatalf("the commit holds %v, want the writes before it only", got)
	}
	checkCkModel(t, d, m, "after the commit")
	st := b.state.Load()
	if st.ckptLSN != frozenLSN || st.checkpointed {
		t.Fatalf("after the commit: checkpoint LSN %d (checkpointed %v), want %d with the write after it", st.ckptLSN, st.checkpointed, frozenLSN)
	}
	if frozenOf(st.colls.get("a").edits) != nil || countEdits(st.colls.get("a").edits) != 2 {
		t.Fatalf("the branch keeps %d edits on the commit's maps, want the write's 2", countEdits(st.colls.get("a").edits))
	}

	// A crash replays the log after the commit over it: the commit and
	// the write on top of it are both there.
	e2 := openEngine(t, crashCopy(t, dir), Options{})
	defer e2.Close()
	d2, _ := e2.Database(ctx, "db", false)
	checkCkModel(t, d2, m, "after a crash")
	if got := headModel(t, d2); !maps.Equal(got, committed) {
		t.Fatalf("after a crash the commit holds %v", got)
	}
	status, err := d2.Status(ctx, DefaultBranch)
	if err != nil || !status.Dirty {
		t.Fatalf("after a crash: dirty %v, %v; want the write uncommitted", status.Dirty, err)
	}
	if _, err := d2.Commit(ctx, DefaultBranch, CommitOptions{Message: "during"}); err != nil {
		t.Fatal(err)
	}
	if got := headModel(t, d2); !maps.Equal(got, m["a"]) {
		t.Fatalf("the next commit holds %v", got)
	}
	if _, err := d2.Commit(ctx, DefaultBranch, CommitOptions{Message: "again"}); !errors.Is(err, ErrNothingToCommit) {
		t.Fatalf("a commit of nothing: %v", err)
	}
}

// TestCommitOfAFoldThatChangedNothing: writes that leave the data as the
// head has it make no commit, and a later write is committed as usual.
func TestCommitOfAFoldThatChangedNothing(t *testing.T) {
	d := openDatabase(t, Options{})
	m := ckModel{"a": {}}
	createIndexed(t, d, m)
	writeSome(t, d, m, 0, 10, "x")
	first, err := d.Commit(ctx, DefaultBranch, CommitOptions{Message: "x"})
	if err != nil {
		t.Fatal(err)
	}
	writeSome(t, d, m, 0, 10, "y")
	writeSome(t, d, m, 0, 10, "x")
	if _, err := d.Commit(ctx, DefaultBranch, CommitOptions{Message: "same"}); !errors.Is(err, ErrNothingToCommit) {
		t.Fatalf("a commit of writes that changed nothing: %v", err)
	}
	writeSome(t, d, m, 3, 4, "z")
	second, err := d.Commit(ctx, DefaultBranch, CommitOptions{Message: "z"})
	if err != nil {
		t.Fatal(err)
	}
	if len(second.Parents) != 1 || second.Parents[0] != first.ID {
		t.Fatalf("parents %v, want [%s]", second.Parents, first.ID)
	}
	if got := headModel(t, d); !maps.Equal(got, m["a"]) {
		t.Fatalf("the commit holds %v, want %v", got, m["a"])
	}
	checkCkModel(t, d, m, "after the commits")
}
