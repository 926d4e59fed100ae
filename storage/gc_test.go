package storage

import (
	"bytes"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// TestGCKeepsOutOfLineDocuments: documents over the inline limit live in
// blob trees referenced from map leaves; GC must keep them.
func TestGCKeepsOutOfLineDocuments(t *testing.T) {
	e := openEngine(t, t.TempDir(), Options{})
	defer e.Close()
	d, _ := e.Database(ctx, "db", true)
	big := bsoncore.NewDocumentBuilder().AppendInt32("_id", 1).AppendString("blob", string(bytes.Repeat([]byte("x"), 100000))).Build()
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
