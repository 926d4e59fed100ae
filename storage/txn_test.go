package storage

import (
	"errors"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// TestTxnSnapshotAndOwnWrites: a transaction reads its snapshot and its
// own writes; others see nothing of it until it commits, then all of it.
func TestTxnSnapshotAndOwnWrites(t *testing.T) {
	d := openDatabase(t, Options{})
	mustWrite(t, d, func(tx *Tx) error { return insertDocs(tx, doc(1, "a")) })
	txn, err := d.BeginTxn(ctx, DefaultBranch)
	if err != nil {
		t.Fatal(err)
	}
	if err := txn.Tx().Insert(ctx, "c", doc(2, "b")); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, d, func(tx *Tx) error { return tx.Insert(ctx, "c", doc(3, "c")) })
	if got := snapContents(t, txn.Snapshot(), "c"); len(got) != 2 || got[2] != "b" || got[3] != "" {
		t.Fatalf("inside: %v, want its snapshot (1) and its write (2)", got)
	}
	if got := contents(t, d, "c"); len(got) != 2 || got[2] != "" {
		t.Fatalf("outside before commit: %v", got)
	}
	if err := txn.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if got := contents(t, d, "c"); len(got) != 3 || got[2] != "b" {
		t.Fatalf("after commit: %v", got)
	}
}

// TestTxnFirstWriterWins: a second transaction writing a document the
// first holds, or one changed since its snapshot, gets ErrWriteConflict;
// a plain write to a held document too, until the holder ends.
func TestTxnFirstWriterWins(t *testing.T) {
	d := openDatabase(t, Options{})
	mustWrite(t, d, func(tx *Tx) error { return insertDocs(tx, doc(1, "a"), doc(2, "b")) })
	first, _ := d.BeginTxn(ctx, DefaultBranch)
	second, _ := d.BeginTxn(ctx, DefaultBranch)
	if err := first.Tx().Replace(ctx, "c", doc(1, "first")); err != nil {
		t.Fatal(err)
	}
	if err := second.Tx().Replace(ctx, "c", doc(1, "second")); !errors.Is(err, ErrWriteConflict) {
		t.Fatalf("second writer: %v", err)
	}
	err := d.Write(ctx, func(tx *Tx) error { return tx.Replace(ctx, "c", doc(1, "plain")) })
	if !errors.Is(err, ErrWriteConflict) {
		t.Fatalf("plain write to a held document: %v", err)
	}
	mustWrite(t, d, func(tx *Tx) error { return tx.Replace(ctx, "c", doc(2, "plain")) })
	if err := second.Tx().Replace(ctx, "c", doc(2, "second")); !errors.Is(err, ErrWriteConflict) {
		t.Fatalf("write to a document changed since the snapshot: %v", err)
	}
	second.Abort()
	if err := first.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, d, func(tx *Tx) error { return tx.Replace(ctx, "c", doc(1, "after")) })
	if got := contents(t, d, "c"); got[1] != "after" || got[2] != "plain" {
		t.Fatalf("after: %v", got)
	}
}

// TestTxnCommitReplaysOntoNewerState: other writes since the snapshot do
// not stop a commit whose documents they left alone; the committed state
// has both, and survives a crash as one unit.
func TestTxnCommitReplaysOntoNewerState(t *testing.T) {
	dir := t.TempDir()
	e := openEngine(t, dir, Options{})
	defer e.Close()
	d, _ := e.Database(ctx, "db", true)
	mustWrite(t, d, func(tx *Tx) error { return insertDocs(tx, doc(1, "a")) })
	txn, _ := d.BeginTxn(ctx, DefaultBranch)
	for i := int32(10); i < 20; i++ {
		if err := txn.Tx().Insert(ctx, "c", doc(i, "t")); err != nil {
			t.Fatal(err)
		}
	}
	mustWrite(t, d, func(tx *Tx) error { return tx.Insert(ctx, "c", doc(2, "plain")) })
	if err := txn.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if got := contents(t, d, "c"); len(got) != 12 {
		t.Fatalf("after commit: %d documents, want 12", len(got))
	}
	crashed := openEngine(t, crashCopy(t, dir), Options{})
	defer crashed.Close()
	cd, _ := crashed.Database(ctx, "db", false)
	if got := contents(t, cd, "c"); len(got) != 12 {
		t.Fatalf("after a crash: %d documents, want 12", len(got))
	}
}

// TestTxnCommitConflictAppliesNothing: a commit whose document changed
// after it was written (a plain write that checked the holds before the
// transaction claimed it) fails and changes nothing.
func TestTxnCommitConflictAppliesNothing(t *testing.T) {
	d := openDatabase(t, Options{})
	mustWrite(t, d, func(tx *Tx) error { return insertDocs(tx, doc(1, "a")) })
	txn, _ := d.BeginTxn(ctx, DefaultBranch)
	if err := txn.Tx().Insert(ctx, "c", doc(5, "t")); err != nil {
		t.Fatal(err)
	}
	if err := txn.Tx().Replace(ctx, "c", doc(1, "t")); err != nil {
		t.Fatal(err)
	}
	// Write behind the holds' back, as the race between a plain writer's
	// check and a claim can.
	b := txn.b
	b.holds.mu.Lock()
	saved := b.holds.byKey
	b.holds.byKey = nil
	b.holds.n.Store(0)
	b.holds.mu.Unlock()
	mustWrite(t, d, func(tx *Tx) error { return tx.Replace(ctx, "c", doc(1, "plain")) })
	b.holds.mu.Lock()
	b.holds.byKey = saved
	b.holds.n.Store(int64(len(saved)))
	b.holds.mu.Unlock()
	if err := txn.Commit(ctx); !errors.Is(err, ErrWriteConflict) {
		t.Fatalf("commit: %v", err)
	}
	if got := contents(t, d, "c"); len(got) != 1 || got[1] != "plain" {
		t.Fatalf("after the failed commit: %v", got)
	}
	if b.holds.n.Load() != 0 {
		t.Fatalf("%d documents still held", b.holds.n.Load())
	}
}

// insertDocs creates collection c and inserts docs.
func insertDocs(tx *Tx, docs ...bsoncore.Document) error {
	if _, err := tx.EnsureCollection(ctx, "c"); err != nil {
		return err
	}
	for _, d := range docs {
		if err := tx.Insert(ctx, "c", d); err != nil {
			return err
		}
	}
	return nil
}

// snapContents reads a collection of a snapshot as id -> value.
func snapContents(t *testing.T, snap *Snapshot, coll string) map[int32]string {
	t.Helper()
	out := map[int32]string{}
	for id, doc := range scanDocs(t, snap, coll) {
		out[id] = doc.Lookup("v").StringValue()
	}
	return out
}

// TestTxnConcurrentCreateConflicts: two transactions that both create a
// collection (implicitly, by inserting) cannot both commit: the second
// would replace the first's collection.
func TestTxnConcurrentCreateConflicts(t *testing.T) {
	d := openDatabase(t, Options{})
	first, _ := d.BeginTxn(ctx, DefaultBranch)
	second, _ := d.BeginTxn(ctx, DefaultBranch)
	for i, txn := range []*Txn{first, second} {
		if err := insertDocs(txn.Tx(), doc(int32(i), "x")); err != nil {
			t.Fatal(err)
		}
	}
	if err := first.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := second.Commit(ctx); !errors.Is(err, ErrWriteConflict) {
		t.Fatalf("second create: %v", err)
	}
	if got := contents(t, d, "c"); len(got) != 1 || got[0] != "x" {
		t.Fatalf("after: %v", got)
	}
}

// abDoc is document 1 with fields a and b.
func abDoc(a, b int32) bsoncore.Document {
	return bsoncore.NewDocumentBuilder().AppendInt32("_id", 1).AppendInt32("a", a).AppendInt32("b", b).Build()
}

// TestTxnFieldLevelConflicts: first writer wins field by field.
// Transactions changing different fields of one document both commit, the
// later one merging; the same field conflicts at the second write; a write
// committed since the snapshot conflicts only if it changed the same field.
func TestTxnFieldLevelConflicts(t *testing.T) {
	d := openDatabase(t, Options{})
	mustWrite(t, d, func(tx *Tx) error { return insertDocs(tx, abDoc(0, 0)) })
	begin := func() *Txn {
		t.Helper()
		txn, err := d.BeginTxn(ctx, DefaultBranch)
		if err != nil {
			t.Fatal(err)
		}
		return txn
	}
	got := func() string {
		t.Helper()
		doc, _, err := mainSnapshot(t, d).Get(ctx, "c", idValue(1))
		if err != nil {
			t.Fatal(err)
		}
		return doc.String()
	}
	t1, t2 := begin(), begin()
	if err := t1.Tx().Replace(ctx, "c", abDoc(1, 0)); err != nil {
		t.Fatal(err)
	}
	if err := t2.Tx().Replace(ctx, "c", abDoc(0, 1)); err != nil {
		t.Fatalf("a different field of a held document: %v", err)
	}
	if err := t1.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := t2.Commit(ctx); err != nil {
		t.Fatalf("commit merging another field: %v", err)
	}
	if want := abDoc(1, 1).String(); got() != want {
		t.Fatalf("after both: %s, want %s", got(), want)
	}

	t3, t4 := begin(), begin()
	t3.Tx().Replace(ctx, "c", abDoc(2, 1))
	var ce *ConflictError
	if err := t4.Tx().Replace(ctx, "c", abDoc(3, 1)); !errors.As(err, &ce) || ce.Holder == nil {
		t.Fatalf("the same field of a held document: %v", err)
	}
	t3.Abort()
	t4.Abort()

	t5 := begin()
	mustWrite(t, d, func(tx *Tx) error { return tx.Replace(ctx, "c", abDoc(1, 5)) })
	if err := t5.Tx().Replace(ctx, "c", abDoc(7, 1)); err != nil {
		t.Fatalf("a field another committed write left alone: %v", err)
	}
	if err := t5.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if want := abDoc(7, 5).String(); got() != want {
		t.Fatalf("after the merge: %s, want %s", got(), want)
	}

	t6 := begin()
	mustWrite(t, d, func(tx *Tx) error { return tx.Replace(ctx, "c", abDoc(9, 5)) })
	if err := t6.Tx().Replace(ctx, "c", abDoc(10, 5)); !errors.Is(err, ErrWriteConflict) {
		t.Fatalf("a field a committed write changed since the snapshot: %v", err)
	}
	t6.Abort()
}
