package storage

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

var testSession = SessionKey{ID: [16]byte{1, 2, 3}}

// insertRetryable inserts doc as statement stmt of txn, recording outcome.
func insertRetryable(t *testing.T, d *Database, txn int64, stmt int32, id int32, outcome bsoncore.Document) {
	t.Helper()
	mustWrite(t, d, func(tx *Tx) error {
		if _, ok, err := tx.RetryOutcome(testSession, txn, stmt); ok || err != nil {
			t.Fatalf("statement %d of txn %d already ran (%v)", stmt, txn, err)
		}
		if _, err := tx.EnsureCollection(ctx, "c"); err != nil {
			return err
		}
		if err := tx.Insert(ctx, "c", doc(id, "x")); err != nil {
			return err
		}
		tx.RecordOutcome(testSession, txn, stmt, outcome)
		return nil
	})
}

// wantOutcome checks what a retry of statement stmt of txn finds.
func wantOutcome(t *testing.T, d *Database, txn int64, stmt int32, want bsoncore.Document) {
	t.Helper()
	mustWrite(t, d, func(tx *Tx) error {
		got, ok, err := tx.RetryOutcome(testSession, txn, stmt)
		if err != nil || ok != (want != nil) || !bytes.Equal(got, want) {
			t.Fatalf("txn %d stmt %d: outcome %v, %v, %v; want %v", txn, stmt, got, ok, err, want)
		}
		return nil
	})
}

// TestRetryOutcomesSurviveCrashAndCheckpoint checks that the outcomes of
// retryable writes are found after a crash (from the log), after a
// checkpoint and a crash (from the retry file), and after a clean close.
func TestRetryOutcomesSurviveCrashAndCheckpoint(t *testing.T) {
	dir := t.TempDir()
	e := openEngine(t, dir, Options{})
	d, err := e.Database(ctx, "db", true)
	if err != nil {
		t.Fatal(err)
	}
	first := bsoncore.NewDocumentBuilder().AppendInt32("n", 1).Build()
	insertRetryable(t, d, 5, 0, 1, first)
	insertRetryable(t, d, 5, 1, 2, bsoncore.NewDocumentBuilder().Build())

	// A crash: only the log has them.
	crashed := openEngine(t, crashCopy(t, dir), Options{})
	cd, _ := crashed.Database(ctx, "db", false)
	wantOutcome(t, cd, 5, 0, first)
	wantOutcome(t, cd, 5, 2, nil)
	crashed.Close()

	// A checkpoint lets replay skip those records; the file has them.
	if err := d.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	insertRetryable(t, d, 6, 0, 3, first) // a later txnNumber replaces 5
	crashed = openEngine(t, crashCopy(t, dir), Options{})
	cd, _ = crashed.Database(ctx, "db", false)
	wantOutcome(t, cd, 6, 0, first)
	mustWrite(t, cd, func(tx *Tx) error {
		if _, _, err := tx.RetryOutcome(testSession, 5, 0); !errors.Is(err, ErrTransactionTooOld) {
			t.Fatalf("txn 5 after 6: %v, want ErrTransactionTooOld", err)
		}
		return nil
	})
	crashed.Close()

	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e = openEngine(t, dir, Options{})
	defer e.Close()
	d, _ = e.Database(ctx, "db", false)
	wantOutcome(t, d, 6, 0, first)
}

// TestDamagedRetryFileRefusesToOpen checks that a database whose retry
// file is damaged does not open (it could run a retried write twice).
func TestDamagedRetryFileRefusesToOpen(t *testing.T) {
	dir := t.TempDir()
	e := openEngine(t, dir, Options{})
	d, _ := e.Database(ctx, "db", true)
	insertRetryable(t, d, 1, 0, 1, bsoncore.NewDocumentBuilder().Build())
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "db", "retry")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)-2] ^= 0xFF
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	e = openEngine(t, dir, Options{})
	defer e.Close()
	if _, err := e.Database(ctx, "db", false); !errors.Is(err, errBadRetryFile) {
		t.Fatalf("open with a damaged retry file: %v", err)
	}
}

// TestRetryFileKeepsOnlyWhatACheckpointClaims: a checkpoint at an LSN
// saves the outcomes logged up to it only; later ones, whose records a
// crash may still lose while writers go on beside the fold, wait for the
// next save.
func TestRetryFileKeepsOnlyWhatACheckpointClaims(t *testing.T) {
	dir := t.TempDir()
	tab := newRetryTable()
	now := time.Now()
	early, late := SessionKey{ID: [16]byte{1}}, SessionKey{ID: [16]byte{2}}
	ok := bsoncore.NewDocumentBuilder().AppendInt32("ok", 1).Build()
	tab.add(5, &retryLog{session: early, txn: 1, at: now, stmts: []int32{0}, outcomes: []bsoncore.Document{ok}})
	tab.add(10, &retryLog{session: late, txn: 1, at: now, stmts: []int32{0}, outcomes: []bsoncore.Document{ok}})
	if err := tab.save(dir, now, 7); err != nil {
		t.Fatal(err)
	}
	loaded, err := loadRetryTable(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, found, _ := loaded.lookup(early, 1, 0); !found {
		t.Fatal("the outcome the checkpoint claims was not saved")
	}
	if _, found, _ := loaded.lookup(late, 1, 0); found {
		t.Fatal("an outcome logged after the checkpoint was saved")
	}
	if err := tab.save(dir, now, 10); err != nil {
		t.Fatal(err)
	}
	if loaded, err = loadRetryTable(dir); err != nil {
		t.Fatal(err)
	}
	if _, found, _ := loaded.lookup(late, 1, 0); !found {
		t.Fatal("the next checkpoint did not save the later outcome")
	}
}
