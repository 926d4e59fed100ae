package storage

import (
	"errors"
	"fmt"
	"io"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/index"
)

func indexSpec(name string, unique bool, key ...string) bsoncore.Document {
	kb := bsoncore.NewDocumentBuilder()
	for _, k := range key {
		kb.AppendInt32(k, 1)
	}
	b := bsoncore.NewDocumentBuilder().AppendInt32("v", 2).AppendDocument("key", kb.Build()).AppendString("name", name)
	if unique {
		b.AppendBoolean("unique", true)
	}
	return b.Build()
}

// indexEntries lists an index's entries (key bytes and _id) as a reader
// sees them.
func indexEntries(t *testing.T, d *Database, name string) []string {
	t.Helper()
	it, err := mainSnapshot(t, d).IndexScan(ctx, "c", name, index.Interval{Start: []byte{1}, Stop: []byte{0xFF, 0xFF}})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for {
		e, id, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%x/%x", e, id))
	}
}

func ahDoc(id, a, u int32) bsoncore.Document {
	return bsoncore.NewDocumentBuilder().AppendInt32("_id", id).AppendInt32("a", a).AppendInt32("u", u).Build()
}

// insertIndexedOnA writes ahDoc(id, a(id), id) for each id from from to
// to-1, in order, into collection c, which it creates if need be and gives
// the index a_1: documents for the tests of index scans over checkpoints
// and edits.
func insertIndexedOnA(t *testing.T, d *Database, from, to int32, a func(id int32) int32) {
	t.Helper()
	mustWrite(t, d, func(tx *Tx) error {
		tx.EnsureCollection(ctx, "c")
		if err := tx.SetIndexes(ctx, "c", []bsoncore.Document{indexSpec("a_1", false, "a")}); err != nil {
			return err
		}
		for id := from; id < to; id++ {
			if err := tx.Insert(ctx, "c", ahDoc(id, a(id), id)); err != nil {
				return err
			}
		}
		return nil
	})
}

// TestPreparedIndexesCatchUp: indexes built from a snapshot, then caught up
// with updates, deletes and inserts made during the build (one taking a
// unique key a deleted document gave up), equal indexes built under the
// lock from the final documents.
func TestPreparedIndexesCatchUp(t *testing.T) {
	raws := []bsoncore.Document{indexSpec("a_1", false, "a"), indexSpec("u_1", true, "u")}
	var results [2][2][]string
	for run, prepare := range []bool{true, false} {
		e := openEngine(t, t.TempDir(), Options{})
		d, _ := e.Database(ctx, "db", true)
		write := func(fn func(tx *Tx) error) {
			t.Helper()
			if err := d.Write(ctx, fn); err != nil {
				t.Fatal(err)
			}
		}
		write(func(tx *Tx) error {
			tx.EnsureCollection(ctx, "c")
			for i := int32(0); i < 2000; i++ {
				if err := tx.Insert(ctx, "c", ahDoc(i, i%100, i)); err != nil {
					return err
				}
			}
			return nil
		})
		if run == 0 {
			d.Checkpoint(ctx) // some documents checkpointed, some edits
		}
		write(func(tx *Tx) error {
			for i := int32(2000); i < 2500; i++ {
				if err := tx.Insert(ctx, "c", ahDoc(i, i%100, i)); err != nil {
					return err
				}
			}
			return nil
		})
		var prepared *PreparedIndexes
		if prepare {
			var err error
			if prepared, err = PrepareIndexes(ctx, mainSnapshot(t, d), "c", raws); err != nil {
				t.Fatal(err)
			}
		}
		write(func(tx *Tx) error { // what writers do during the build
			for i := int32(0); i < 100; i++ {
				if err := tx.Replace(ctx, "c", ahDoc(i, i+1000, i+100000)); err != nil {
					return err
				}
			}
			for i := int32(100); i < 200; i++ {
				if err := tx.Delete(ctx, "c", ahDoc(i, 0, 0).Lookup("_id")); err != nil {
					return err
				}
			}
			for i := int32(3000); i < 3100; i++ {
				if err := tx.Insert(ctx, "c", ahDoc(i, 7, i-2900)); err != nil { // u 100..199, freed above
					return err
				}
			}
			return nil
		})
		if run == 0 {
			d.Checkpoint(ctx)
		}
		write(func(tx *Tx) error { return tx.SetIndexes(ctx, "c", raws, prepared) })
		results[run] = [2][]string{indexEntries(t, d, "a_1"), indexEntries(t, d, "u_1")}
		e.Close()
	}
	for i, name := range []string{"a_1", "u_1"} {
		got, want := results[0][i], results[1][i]
		if len(got) != 2500 || len(got) != len(want) {
			t.Fatalf("%s: %d entries prepared, %d built under the lock", name, len(got), len(want))
		}
		for j := range got {
			if got[j] != want[j] {
				t.Fatalf("%s: entry %d differs: %s vs %s", name, j, got[j], want[j])
			}
		}
	}
}

// TestPreparedIndexesTakenAsBuilt: with no write between the build and
// its installation the built map is installed as it is, while a document
// the installing transaction itself wrote first is still indexed.
func TestPreparedIndexesTakenAsBuilt(t *testing.T) {
	d := openDatabase(t, Options{})
	raws := []bsoncore.Document{indexSpec("a_1", false, "a")}
	insertIndexedOnA(t, d, 0, 100, func(id int32) int32 { return id })
	for _, writeFirst := range []bool{false, true} {
		mustWrite(t, d, func(tx *Tx) error { return tx.SetIndexes(ctx, "c", nil) })
		prepared, err := PrepareIndexes(ctx, mainSnapshot(t, d), "c", raws)
		if err != nil {
			t.Fatal(err)
		}
		mustWrite(t, d, func(tx *Tx) error {
			if writeFirst {
				if err := tx.Insert(ctx, "c", ahDoc(1000, 5, 0)); err != nil {
					return err
				}
			}
			return tx.SetIndexes(ctx, "c", raws, prepared)
		})
		built := prepared.built[string(raws[0])].base.HashOf()
		installed := mainSnapshot(t, d).st.colls.get("c").index("a_1")
		if taken := installed.base.HashOf() == built && installed.edits.Len() == 0; taken == writeFirst {
			t.Fatalf("written first %v: the built map installed untouched %v", writeFirst, taken)
		}
		if n := len(indexEntries(t, d, "a_1")); writeFirst && n != 101 {
			t.Fatalf("%d entries, not 101 with the document written first", n)
		}
	}
}

// TestPreparedUniqueClash: a document written during the build that
// clashes with a unique key fails the index's installation.
func TestPreparedUniqueClash(t *testing.T) {
	d := openDatabase(t, Options{})
	raws := []bsoncore.Document{indexSpec("u_1", true, "u")}
	d.Write(ctx, func(tx *Tx) error {
		tx.EnsureCollection(ctx, "c")
		return tx.Insert(ctx, "c", ahDoc(1, 0, 5))
	})
	prepared, err := PrepareIndexes(ctx, mainSnapshot(t, d), "c", raws)
	if err != nil {
		t.Fatal(err)
	}
	d.Write(ctx, func(tx *Tx) error { return tx.Insert(ctx, "c", ahDoc(2, 0, 5)) })
	err = d.Write(ctx, func(tx *Tx) error { return tx.SetIndexes(ctx, "c", raws, prepared) })
	var dup *DuplicateKeyError
	if !errors.As(err, &dup) {
		t.Fatalf("installing a clashing unique index: %v", err)
	}
	if len(mainSnapshot(t, d).Indexes("c")) != 0 {
		t.Fatal("the failed index was installed")
	}
}

// TestPrepareIndexesNeedsNoLock: the build runs while a writer holds the
// branch's lock (so writers never wait for it).
func TestPrepareIndexesNeedsNoLock(t *testing.T) {
	d := openDatabase(t, Options{})
	d.Write(ctx, func(tx *Tx) error {
		tx.EnsureCollection(ctx, "c")
		for i := int32(0); i < 500; i++ {
			if err := tx.Insert(ctx, "c", ahDoc(i, i, i)); err != nil {
				return err
			}
		}
		return nil
	})
	snap := mainSnapshot(t, d)
	held, release, done := make(chan struct{}), make(chan struct{}), make(chan error)
	go func() {
		done <- d.Write(ctx, func(tx *Tx) error {
			close(held)
			<-release
			return tx.Insert(ctx, "c", ahDoc(1000, 1, 1000))
		})
	}()
	<-held
	prepared, err := PrepareIndexes(ctx, snap, "c", []bsoncore.Document{indexSpec("a_1", false, "a")})
	close(release)
	if err != nil || prepared == nil {
		t.Fatalf("prepare while the lock is held: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := d.Write(ctx, func(tx *Tx) error {
		return tx.SetIndexes(ctx, "c", []bsoncore.Document{indexSpec("a_1", false, "a")}, prepared)
	}); err != nil {
		t.Fatal(err)
	}
	if n := len(indexEntries(t, d, "a_1")); n != 501 {
		t.Fatalf("%d entries, want 501", n)
	}
}
