package storage

import (
	"bytes"
	"fmt"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// TestGCKeepsOutOfLineDocuments: documents over the inline limit live in
// blob trees or doctrees referenced from map leaves; GC must keep them.
func TestGCKeepsOutOfLineDocuments(t *testing.T) {
	for name, threshold := range map[string]int{"blob": -1, "doctree": 0} {
		t.Run(name, func(t *testing.T) { testGCKeepsOutOfLine(t, threshold) })
	}
}

func testGCKeepsOutOfLine(t *testing.T, threshold int) {
	d := openDatabase(t, Options{LargeDocThreshold: threshold})
	nested := bsoncore.NewDocumentBuilder().AppendString("s", string(bytes.Repeat([]byte("y"), 30000))).Build()
	big := bsoncore.NewDocumentBuilder().AppendInt32("_id", 1).AppendString("blob", string(bytes.Repeat([]byte("x"), 100000))).
		AppendDocument("n", nested).Build()
	put(t, d, "main", big)
	if _, err := d.Commit(ctx, "main", CommitOptions{Message: "big"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := d.GC(ctx); err != nil {
		t.Fatal(err)
	}
	got := get(t, d, Revision{Branch: "main"}, 1)
	if !bytes.Equal(got, big) {
		t.Fatalf("after GC the document has %d bytes", len(got))
	}
}

// TestGCKeepsWhatOpenSnapshotsRead: a cursor opened before a GC reads on
// after it, although checkpoints made its state unreachable from refs.
func TestGCKeepsWhatOpenSnapshotsRead(t *testing.T) {
	d := openDatabase(t, Options{})
	pad := string(bytes.Repeat([]byte("p"), 500))
	err := d.Write(ctx, func(tx *Tx) error {
		tx.EnsureCollection(ctx, "c")
		for i := int32(0); i < 3000; i++ {
			if err := tx.Insert(ctx, "c", docKV(i, "v", 0, "pad", pad)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	d.Checkpoint(ctx)
	it, err := mainSnapshot(t, d).Scan(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := it.Next(ctx); err != nil {
		t.Fatal(err)
	}
	// Rewrite every document, so the old trees are garbage, then collect.
	err = d.Write(ctx, func(tx *Tx) error {
		for i := int32(0); i < 3000; i++ {
			if err := tx.Replace(ctx, "c", docKV(i, "v", 1, "pad", pad)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := d.GC(ctx); err != nil {
		t.Fatal(err)
	}
	n := 1
	for {
		doc, err := it.Next(ctx)
		if err != nil {
			break
		}
		if doc.Lookup("v").Int32() != 0 {
			t.Fatal("the old cursor sees new data")
		}
		n++
	}
	if n != 3000 {
		t.Fatalf("the cursor read %d of 3000 documents after GC", n)
	}
}

// TestGCThenRewriteSameDocument: a large document deleted, collected and
// written again is stored again (the doctree Writer must not trust nodes
// it remembers from before the GC).
func TestGCThenRewriteSameDocument(t *testing.T) {
	e := openEngine(t, t.TempDir(), Options{})
	defer e.Close()
	d, _ := e.Database(ctx, "db", true)
	big := bsoncore.NewDocumentBuilder().AppendInt32("_id", 1)
	for i := 0; i < 3000; i++ {
		big.AppendString(fmt.Sprintf("f%d", i), fmt.Sprintf("value %d", i*7919))
	}
	doc := big.Build()
	put(t, d, "main", doc)
	if err := d.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	if err := d.WriteBranch(ctx, "main", func(tx *Tx) error { return tx.Delete(ctx, "c", doc.Lookup("_id")) }); err != nil {
		t.Fatal(err)
	}
	// Nothing references the document's nodes once the working set moves
	// on (no commit ever held it).
	if _, _, err := d.GC(ctx); err != nil {
		t.Fatal(err)
	}
	put(t, d, "main", doc)
	if err := d.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	e.Close()
	e = openEngine(t, e.Dir(), Options{})
	d, _ = e.Database(ctx, "db", false)
	if got := get(t, d, Revision{Branch: "main"}, 1); !bytes.Equal(got, doc) {
		t.Fatalf("after GC and a rewrite the document has %d bytes", len(got))
	}
}
