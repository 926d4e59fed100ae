package storage

import (
	"errors"
	"fmt"
	"io"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// docsOf yields docs, then io.EOF.
func docsOf(docs []bsoncore.Document) func() (bsoncore.Document, error) {
	return func() (bsoncore.Document, error) {
		if len(docs) == 0 {
			return nil, io.EOF
		}
		d := docs[0]
		docs = docs[1:]
		return d, nil
	}
}

// TestBulkLoadIsDurableAndRefusesDuplicates: a bulk load of documents in
// no particular order, one a duplicate, loads the rest, survives a
// restart without its log, and beside documents written before; with
// stopOnError it keeps what came before the duplicate.
func TestBulkLoadIsDurableAndRefusesDuplicates(t *testing.T) {
	dir := t.TempDir()
	e, d := engineDatabase(t, dir, Options{}, true)
	mustWrite(t, d, func(tx *Tx) error {
		if _, err := tx.EnsureCollection(ctx, "c"); err != nil {
			return err
		}
		return tx.Insert(ctx, "c", doc(-1, "before"))
	})
	var docs []bsoncore.Document
	for i := int32(0); i < 20000; i++ {
		docs = append(docs, doc((i*7919)%20000, "v"))
	}
	docs = append(docs, doc(5, "dup"))
	res, err := d.BulkLoad(ctx, DefaultBranch, "c", nil, docsOf(docs), false)
	if err != nil {
		t.Fatal(err)
	}
	if res.Inserted != 20000 || len(res.Refused) != 1 || res.Refused[0].Index != 20000 || !errors.Is(res.Refused[0].Err, ErrDuplicateKey) {
		t.Fatalf("bulk load: %d inserted, refused %+v", res.Inserted, res.Refused)
	}
	e.Close()

	e, d = engineDatabase(t, dir, Options{}, false)
	defer e.Close()
	got := contents(t, d, "c")
	if len(got) != 20001 || got[-1] != "before" || got[5] != "v" {
		t.Fatalf("after a restart: %d documents, -1=%q, 5=%q", len(got), got[-1], got[5])
	}
	res, err = d.BulkLoad(ctx, DefaultBranch, "d", nil, docsOf([]bsoncore.Document{doc(1, "a"), doc(2, "b"), doc(1, "again"), doc(3, "c")}), true)
	if err != nil || res.Inserted != 2 || len(res.Refused) != 1 {
		t.Fatalf("stopOnError: %+v %v", res, err)
	}
	if got := contents(t, d, "d"); len(got) != 2 || got[3] != "" {
		t.Errorf("stopOnError kept %v", got)
	}
}

// TestBulkLoadFoldsPastHalfTheBudget: a load larger than half the edit
// budget is folded into trees as it goes, so that it holds no more than
// that in memory; a duplicate of a document folded earlier is still
// refused, and the collection and its index hold every document once.
func TestBulkLoadFoldsPastHalfTheBudget(t *testing.T) {
	dir := t.TempDir()
	e, d := engineDatabase(t, dir, Options{CacheBytes: 1 << 20}, true)
	m := ckModel{"a": {}}
	createIndexed(t, d, m)
	folds := 0
	e.panics.mu.Lock()
	e.panics.hook = func(step string) {
		if step == "bulk.fold" {
			folds++
		}
	}
	e.panics.mu.Unlock()
	e.panics.armed.Store(true)
	var docs []bsoncore.Document
	for i := int32(0); i < 20000; i++ {
		id := (i * 7919) % 20000
		docs = append(docs, doc(id, fmt.Sprintf("v%d", id%97)))
		m["a"][id] = fmt.Sprintf("v%d", id%97)
	}
	docs = append(docs, doc(5, "dup"))
	res, err := d.BulkLoad(ctx, DefaultBranch, "a", nil, docsOf(docs), false)
	e.panics.armed.Store(false)
	if err != nil {
		t.Fatal(err)
	}
	if res.Inserted != 20000 || len(res.Refused) != 1 || !errors.Is(res.Refused[0].Err, ErrDuplicateKey) {
		t.Fatalf("bulk load: %d inserted, refused %+v", res.Inserted, res.Refused)
	}
	if folds < 2 {
		t.Fatalf("%d folds during a load of 20,000 documents with a budget of 1 MiB", folds)
	}
	checkCkModel(t, d, m, "after the load")
	e.Close()
	e, d = engineDatabase(t, dir, Options{CacheBytes: 1 << 20}, false)
	defer e.Close()
	checkCkModel(t, d, m, "after a restart")
}
