package server

import (
	"context"
	"testing"

	"github.com/dumbodb/dumbodb/storage"

	"github.com/rs/zerolog"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// TestUpdateLookupNotOlderThanItsEvent: a batch reads the log as it
// goes, so an entry logged after the batch took its updateLookup
// snapshot must be looked up afresh: the document as its write left it,
// not as the snapshot holds it.
func TestUpdateLookupNotOlderThanItsEvent(t *testing.T) {
	ctx := context.Background()
	e := openIdleEngine(t, t.TempDir())
	s := New(Config{}, e, zerolog.Nop(), nil)
	d, err := e.Database(ctx, "app", true)
	if err != nil {
		t.Fatal(err)
	}
	cs := &changeStream{s: s, scope: streamScope{db: "app", branch: "main"}, skipIdx: -1}
	if err := cs.open(); err != nil {
		t.Fatal(err)
	}
	write := func(v int32) storage.ChangeEntry {
		t.Helper()
		err := d.Write(ctx, func(tx *storage.Tx) error {
			if _, err := tx.EnsureCollection(ctx, "c"); err != nil {
				return err
			}
			return tx.Replace(ctx, "c", bsoncore.NewDocumentBuilder().AppendInt32("_id", 1).AppendInt32("v", v).Build())
		})
		if err != nil {
			t.Fatal(err)
		}
		entry, ok, err := cs.reader.Next()
		if err != nil || !ok {
			t.Fatalf("the write's entry: %v %v", ok, err)
		}
		return entry
	}
	lookedUp := func(entry storage.ChangeEntry) int32 {
		t.Helper()
		doc, err := cs.lookup(ctx, entry, entry.Events[len(entry.Events)-1])
		if err != nil {
			t.Fatal(err)
		}
		return doc.Document().Lookup("v").Int32()
	}
	first := write(1)
	if v := lookedUp(first); v != 1 {
		t.Fatalf("first lookup: v %d, want 1", v)
	}
	second := write(2) // logged after the batch's snapshot was taken
	if v := lookedUp(second); v != 2 {
		t.Errorf("lookup of an entry logged after the snapshot: v %d, want 2", v)
	}
}
