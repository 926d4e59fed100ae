package storage

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/dolthub/dolt/go/store/prolly"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

func cappedOpts(size, max int64) bsoncore.Document {
	b := bsoncore.NewDocumentBuilder().AppendBoolean("capped", true).AppendInt64("size", size)
	if max > 0 {
		b.AppendInt64("max", max)
	}
	return b.Build()
}

func createCapped(t *testing.T, d *Database, branch string, size, max int64) {
	t.Helper()
	err := d.WriteBranch(ctx, branch, func(tx *Tx) error {
		_, err := tx.CreateCollection(ctx, "cap", cappedOpts(size, max))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func insertCapped(t *testing.T, d *Database, branch string, ids ...int32) {
	t.Helper()
	err := d.WriteBranch(ctx, branch, func(tx *Tx) error {
		for _, id := range ids {
			if err := tx.Insert(ctx, "cap", doc(id, "v")); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// naturalIDs reads the capped collection's _ids in natural order.
func naturalIDs(t *testing.T, snap *Snapshot, reverse bool) string {
	t.Helper()
	it, err := snap.NaturalScan(ctx, "cap", reverse)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int32
	for {
		d, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			return fmt.Sprint(ids)
		}
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, d.Lookup("_id").Int32())
	}
}

func branchSnap(t *testing.T, d *Database, branch string) *Snapshot {
	t.Helper()
	s, err := d.BranchSnapshot(ctx, branch)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestCappedKeepsInsertionOrderAcrossCheckpointAndReplay(t *testing.T) {
	dir := t.TempDir()
	e := openEngine(t, dir, Options{})
	defer e.Close()
	d, _ := e.Database(ctx, "db", true)
	createCapped(t, d, "main", 1<<20, 0)
	insertCapped(t, d, "main", 5, 3, 9)
	if err := d.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	insertCapped(t, d, "main", 1, 7)
	mustWrite(t, d, func(tx *Tx) error { return tx.Delete(ctx, "cap", idValue(3)) })
	mustWrite(t, d, func(tx *Tx) error { return tx.Replace(ctx, "cap", doc(9, "longer value")) })
	insertCapped(t, d, "main", 3) // back at the end: a new insertion
	want := "[5 9 1 7 3]"
	if got := naturalIDs(t, mainSnapshot(t, d), false); got != want {
		t.Fatalf("order %s, want %s", got, want)
	}
	if got := naturalIDs(t, mainSnapshot(t, d), true); got != "[3 7 1 9 5]" {
		t.Fatalf("reverse order %s", got)
	}
	bytesBefore := mainSnapshot(t, d).CappedBytes("cap")
	e2 := openEngine(t, crashCopy(t, dir), Options{})
	defer e2.Close()
	d2, _ := e2.Database(ctx, "db", false)
	if got := naturalIDs(t, mainSnapshot(t, d2), false); got != want {
		t.Fatalf("after replay %s, want %s", got, want)
	}
	if b := mainSnapshot(t, d2).CappedBytes("cap"); b != bytesBefore {
		t.Fatalf("bytes after replay %d, want %d", b, bytesBefore)
	}
	// Replay gives the next insert the record id the crashed server would.
	insertCapped(t, d, "main", 11)
	insertCapped(t, d2, "main", 11)
	a, _ := mainSnapshot(t, d).NaturalAfter(ctx, "cap", 0)
	b, _ := mainSnapshot(t, d2).NaturalAfter(ctx, "cap", 0)
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Fatalf("record ids differ after replay:\n%v\n%v", a, b)
	}
}

func TestCappedOverflowRemovesTheOldest(t *testing.T) {
	d := openDatabase(t, Options{})
	createCapped(t, d, "main", 1<<20, 3)
	insertCapped(t, d, "main", 1, 2, 3, 4, 5)
	if got := naturalIDs(t, mainSnapshot(t, d), false); got != "[3 4 5]" {
		t.Fatalf("by max: %s", got)
	}
	// By size: each doc(id, "v") is 21 bytes.
	err := d.Write(ctx, func(tx *Tx) error {
		if err := tx.DropCollection("cap"); err != nil {
			return err
		}
		_, err := tx.CreateCollection(ctx, "cap", cappedOpts(50, 0))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	insertCapped(t, d, "main", 1, 2, 3)
	if got := naturalIDs(t, mainSnapshot(t, d), false); got != "[2 3]" {
		t.Fatalf("by size: %s", got)
	}
	big := bsoncore.NewDocumentBuilder().AppendInt32("_id", 9).AppendString("v", string(make([]byte, 60))).Build()
	err = d.Write(ctx, func(tx *Tx) error { return tx.Insert(ctx, "cap", big) })
	if err == nil {
		t.Fatal("a document larger than the collection was accepted")
	}
}

func TestCappedMergeKeepsOursThenTheirs(t *testing.T) {
	d := openDatabase(t, Options{})
	createCapped(t, d, "main", 1<<20, 0)
	insertCapped(t, d, "main", 5, 1)
	if _, err := d.Commit(ctx, "main", CommitOptions{Message: "base"}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.CreateBranch(ctx, "f", Revision{Branch: "main"}); err != nil {
		t.Fatal(err)
	}
	insertCapped(t, d, "f", 9, 2)
	err := d.WriteBranch(ctx, "f", func(tx *Tx) error { return tx.Delete(ctx, "cap", idValue(5)) })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Commit(ctx, "f", CommitOptions{Message: "theirs"}); err != nil {
		t.Fatal(err)
	}
	insertCapped(t, d, "main", 8, 0)
	if _, err := d.Commit(ctx, "main", CommitOptions{Message: "ours"}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Merge(ctx, "main", Revision{Branch: "f"}, MergeOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := naturalIDs(t, branchSnap(t, d, "main"), false); got != "[1 8 0 9 2]" {
		t.Fatalf("merged order %s", got)
	}
	// The merged order is kept by the commit and a reset to it.
	insertCapped(t, d, "main", 4)
	head, _ := d.headCommit(ctx, "main")
	if _, err := d.Reset(ctx, "main", Revision{Commit: head.Addr()}, true); err != nil {
		t.Fatal(err)
	}
	if got := naturalIDs(t, branchSnap(t, d, "main"), false); got != "[1 8 0 9 2]" {
		t.Fatalf("after reset %s", got)
	}
}

func TestCappedConflictResolutionKeepsTheOrder(t *testing.T) {
	d := openDatabase(t, Options{})
	createCapped(t, d, "main", 1<<20, 0)
	insertCapped(t, d, "main", 1, 2)
	if _, err := d.Commit(ctx, "main", CommitOptions{Message: "base"}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.CreateBranch(ctx, "f", Revision{Branch: "main"}); err != nil {
		t.Fatal(err)
	}
	err := d.WriteBranch(ctx, "f", func(tx *Tx) error { return tx.Replace(ctx, "cap", doc(1, "theirs")) })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Commit(ctx, "f", CommitOptions{Message: "theirs"}); err != nil {
		t.Fatal(err)
	}
	err = d.WriteBranch(ctx, "main", func(tx *Tx) error { return tx.Delete(ctx, "cap", idValue(1)) })
	if err != nil {
		t.Fatal(err)
	}
	insertCapped(t, d, "main", 3)
	if _, err := d.Commit(ctx, "main", CommitOptions{Message: "ours"}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Merge(ctx, "main", Revision{Branch: "f"}, MergeOptions{}); !errors.Is(err, ErrMergeConflicts) {
		t.Fatalf("merge: %v", err)
	}
	if got := naturalIDs(t, branchSnap(t, d, "main"), false); got != "[2 3]" {
		t.Fatalf("order while conflicting %s", got)
	}
	if err := d.ResolveConflict(ctx, "main", "cap", idValue(1), ResolveTheirs, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := d.MergeContinue(ctx, "main", CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := naturalIDs(t, branchSnap(t, d, "main"), false); got != "[2 3 1]" {
		t.Fatalf("order after resolving %s", got)
	}
	insertCapped(t, d, "main", 0)
	if got := naturalIDs(t, branchSnap(t, d, "main"), false); got != "[2 3 1 0]" {
		t.Fatalf("order after the next insert %s", got)
	}
}

// TestCappedRootWithoutOrderIsRebuilt: a root whose capped collection has
// no order map (none is written today, but a merge builds one from the
// documents) gets one in _id order.
func TestCappedRootWithoutOrderIsRebuilt(t *testing.T) {
	d := openDatabase(t, Options{})
	createCapped(t, d, "main", 1<<20, 0)
	insertCapped(t, d, "main", 7, 3, 5)
	b := d.branchList()[0]
	st := b.state.Load()
	c := *st.colls.get("cap")
	c.base, c.edits, c.capped = mustFold(t, d, &c), nil, nil
	if err := rebuildCapped(ctx, d.ns, &c, nil); err != nil {
		t.Fatal(err)
	}
	entries, err := naturalAfter(ctx, d.ns, c.capped, 0)
	if err != nil || len(entries) != 3 || c.capped.last != 3 || c.capped.bytes != 3*int64(len(doc(1, "v"))) {
		t.Fatalf("rebuilt %v last %d bytes %d: %v", entries, c.capped.last, c.capped.bytes, err)
	}
	for i, id := range []int32{3, 5, 7} {
		if key := encodeID(idValue(id)); !bytes.Equal(entries[i].IDKey, key) || entries[i].RecordID != int64(i+1) {
			t.Fatalf("rebuilt entry %d: %+v, want _id %d", i, entries[i], id)
		}
	}
}

func mustFold(t *testing.T, d *Database, c *collection) prolly.Map {
	t.Helper()
	m, err := foldEdits(ctx, d.ns, c, nil)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestCappedCheckFindsAnInconsistentOrder(t *testing.T) {
	d := openDatabase(t, Options{})
	createCapped(t, d, "main", 1<<20, 0)
	insertCapped(t, d, "main", 1, 2, 3)
	if p, err := mainSnapshot(t, d).CheckCapped(ctx, "cap"); err != nil || len(p) != 0 {
		t.Fatalf("consistent order reported %v %v", p, err)
	}
	// Damage a copy of the state: the order loses a document.
	st := *d.branchList()[0].state.Load()
	c := *st.colls.get("cap")
	c.capped = c.capped.clone()
	c.capped.edits.ReplaceOrInsert(&edit{key: orderKey(2)})
	st.colls = newCollMap(map[string]*collection{"cap": &c})
	snap := &Snapshot{ns: d.ns, st: &st}
	if p, err := snap.CheckCapped(ctx, "cap"); err != nil || len(p) != 2 {
		t.Fatalf("damaged order reported %v %v", p, err)
	}
}
