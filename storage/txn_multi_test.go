package storage

import (
	"errors"
	"testing"
)

// openTwo opens databases "a" and "b" of one engine with a collection c
// holding document 1 in each.
func openTwo(t *testing.T, dir string) (*Engine, *Database, *Database) {
	t.Helper()
	e := openEngine(t, dir, Options{})
	var dbs [2]*Database
	for i, name := range []string{"a", "b"} {
		d, err := e.Database(ctx, name, true)
		if err != nil {
			t.Fatal(err)
		}
		dbs[i] = d
	}
	return e, dbs[0], dbs[1]
}

// beginTwo starts a transaction's parts on a and b, each inserting doc.
func beginTwo(t *testing.T, a, b *Database, id int32) []*Txn {
	t.Helper()
	var txns []*Txn
	for _, d := range []*Database{a, b} {
		txn, err := d.BeginTxn(ctx, DefaultBranch)
		if err != nil {
			t.Fatal(err)
		}
		if err := insertDocs(txn.Tx(), doc(id, d.Name())); err != nil {
			t.Fatal(err)
		}
		txns = append(txns, txn)
	}
	return txns
}

// TestCommitTxnsAcrossDatabases: both parts become visible at once and
// survive a crash (replayed with their commit marks) and a clean restart.
func TestCommitTxnsAcrossDatabases(t *testing.T) {
	dir := t.TempDir()
	e, a, b := openTwo(t, dir)
	if err := CommitTxns(ctx, beginTwo(t, a, b, 1)); err != nil {
		t.Fatal(err)
	}
	for _, d := range []*Database{a, b} {
		if got := contents(t, d, "c"); got[1] != d.Name() {
			t.Fatalf("%s after commit: %v", d.Name(), got)
		}
	}
	crashed := crashCopy(t, dir)
	e.Close()
	e2, a2, b2 := openTwo(t, crashed)
	defer e2.Close()
	for _, d := range []*Database{a2, b2} {
		if got := contents(t, d, "c"); got[1] != d.Name() {
			t.Fatalf("%s after a crash: %v", d.Name(), got)
		}
	}
}

// TestCommitTxnsCrashAtCommitPoint: a crash after every part is durable
// but before the decision leaves none of the transaction; a crash after
// the decision but before any part is published or marked leaves all of
// it, and recovery cuts the decision log back.
func TestCommitTxnsCrashAtCommitPoint(t *testing.T) {
	for _, c := range []struct {
		step string
		want bool
	}{{"txn.prepared", false}, {"txn.decided", true}} {
		t.Run(c.step, func(t *testing.T) {
			dir := t.TempDir()
			e, a, b := openTwo(t, dir)
			txns := beginTwo(t, a, b, 1)
			if err := e.InjectPanic(c.step, 1); err != nil {
				t.Fatal(err)
			}
			func() {
				defer func() { recover() }()
				CommitTxns(ctx, txns)
				t.Fatal("no panic")
			}()
			crashed := crashCopy(t, dir)
			e.InjectPanic(c.step, 0)
			e.Close()
			e2, a2, b2 := openTwo(t, crashed)
			defer e2.Close()
			for _, d := range []*Database{a2, b2} {
				if got := contents(t, d, "c"); (got[1] == d.Name()) != c.want {
					t.Fatalf("%s after a crash at %s: %v", d.Name(), c.step, got)
				}
			}
			if e2.decisions.size > decisionLogHeader {
				t.Fatalf("decision log not cut back after recovery: %d bytes", e2.decisions.size)
			}
		})
	}
}

// TestCommitTxnsConflict: a part that meets a conflict at commit (here a
// collection it creates was created meanwhile) fails the whole commit with
// ErrWriteConflict, and no part is applied.
func TestCommitTxnsConflict(t *testing.T) {
	e, a, b := openTwo(t, t.TempDir())
	defer e.Close()
	txns := beginTwo(t, a, b, 2)
	if _, err := txns[1].Tx().EnsureCollection(ctx, "n"); err != nil {
		t.Fatal(err)
	}
	if err := txns[1].Tx().Insert(ctx, "n", doc(1, "txn")); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, b, func(tx *Tx) error {
		if _, err := tx.EnsureCollection(ctx, "n"); err != nil {
			return err
		}
		return tx.Insert(ctx, "n", doc(9, "raced"))
	})
	if err := CommitTxns(ctx, txns); !errors.Is(err, ErrWriteConflict) {
		t.Fatalf("commit: %v, want a write conflict", err)
	}
	if got := contents(t, a, "c"); got[2] != "" {
		t.Fatalf("a kept its part of the failed transaction: %v", got)
	}
	if got := contents(t, b, "n"); got[1] != "" || got[9] != "raced" {
		t.Fatalf("b after the failed transaction: %v", got)
	}
}
