package storage

import (
	"bytes"
	"context"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// randomValue is a value of a random kind, containers nested to depth.
func randomValue(r *rand.Rand, depth int) bsoncore.Value {
	switch k := r.IntN(5); {
	case k == 0 && depth > 0:
		return bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: randomDoc(r, depth-1, 1+r.IntN(6), 8)}
	case k == 1 && depth > 0:
		arr := bsoncore.NewArrayBuilder()
		for range r.IntN(6) {
			arr.AppendString(fmt.Sprint(r.IntN(1000)))
		}
		return bsoncore.Value{Type: bsoncore.TypeArray, Data: arr.Build()}
	case k == 2:
		return bsoncore.Value{Type: bsoncore.TypeInt64, Data: bsoncore.AppendInt64(nil, r.Int64())}
	default:
		return bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, string(make([]byte, r.IntN(300))))}
	}
}

func randomDoc(r *rand.Rand, depth, fields, pad int) []byte {
	b := bsoncore.NewDocumentBuilder()
	for i := range fields {
		b.AppendString(fmt.Sprintf("pad%d", i), string(bytes.Repeat([]byte{'x'}, pad)))
		b.AppendValue(fmt.Sprintf("f%d", i), randomValue(r, depth))
	}
	return b.Build()
}

// mutate returns doc with a few random edits: fields changed, added,
// removed or moved, at the top or inside a sub-document.
func mutate(r *rand.Rand, doc []byte) []byte {
	els, _ := bsoncore.Document(doc).Elements()
	b := bsoncore.NewDocumentBuilder()
	var moved []bsoncore.Element
	for _, el := range els {
		switch r.IntN(150) {
		case 0: // removed
		case 1:
			b.AppendValue(el.Key(), randomValue(r, 2))
		case 2:
			moved = append(moved, el)
		case 3:
			if v := el.Value(); v.Type == bsoncore.TypeEmbeddedDocument {
				b.AppendDocument(el.Key(), mutate(r, v.Data))
				continue
			}
			b.AppendValue(el.Key(), el.Value())
		case 4:
			b.AppendValue(el.Key(), el.Value())
			b.AppendInt32(fmt.Sprint("new", r.IntN(1e6)), 1)
		default:
			b.AppendValue(el.Key(), el.Value())
		}
	}
	for _, el := range moved {
		b.AppendValue(el.Key(), el.Value())
	}
	return b.Build()
}

// TestPatchRebuildsTheDocument: for random large documents and random
// edits, the patch applied to the base gives the new document byte for
// byte, is logged only when much smaller than it, and refuses a base it
// was not made from.
func TestPatchRebuildsTheDocument(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	patched := 0
	for round := range 300 {
		base := randomDoc(r, 3, 100+r.IntN(300), 100)
		doc := mutate(r, base)
		if round%10 == 0 {
			doc = base
		}
		patch := encodePatch(base, doc)
		if patch == nil {
			continue
		}
		patched++
		if len(patch) > len(doc)/patchMaxShare {
			t.Fatalf("round %d: a patch of %d bytes for a document of %d", round, len(patch), len(doc))
		}
		got, err := applyPatch(base, patch, len(base), crc32.Checksum(doc, castagnoli))
		if err != nil || !bytes.Equal(got, doc) {
			t.Fatalf("round %d: patch rebuilt %d bytes (err %v), want %d", round, len(got), err, len(doc))
		}
		other := mutate(r, base)
		if !bytes.Equal(other, base) {
			if _, err := applyPatch(other, patch, len(base), crc32.Checksum(doc, castagnoli)); err == nil && !bytes.Equal(other, base) {
				t.Fatalf("round %d: a patch applied to another document", round)
			}
		}
	}
	if patched < 200 {
		t.Fatalf("only %d of 300 updates were patches", patched)
	}
	small := randomDoc(r, 1, 3, 10)
	if encodePatch(small, mutate(r, small)) != nil {
		t.Fatal("a small document was patched")
	}
}

// TestPatchRecordsReplay: updates of a large document are logged as
// patches (a few bytes each), and replay after a crash rebuilds every
// document byte for byte, as a model of the writes has them.
func TestPatchRecordsReplay(t *testing.T) {
	dir := t.TempDir()
	e := openEngine(t, dir, Options{LargeDocThreshold: -1})
	d, err := e.Database(ctx, "db", true)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 4))
	model := map[int32][]byte{}
	for id := range int32(4) {
		doc := bsoncore.NewDocumentBuilder().AppendInt32("_id", id).
			AppendDocument("body", randomDoc(r, 3, 300, 200)).Build()
		model[id] = doc
		err := d.Write(ctx, func(tx *Tx) error {
			if _, err := tx.EnsureCollection(ctx, "c"); err != nil {
				return err
			}
			return tx.Insert(ctx, "c", doc)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	logged := e.DatabaseStats().LogBytes
	const updates = 60
	for i := range updates {
		id := int32(r.IntN(4))
		els, _ := bsoncore.Document(model[id]).Elements()
		doc := bsoncore.NewDocumentBuilder().AppendInt32("_id", id).
			AppendDocument("body", mutate(r, els[1].Value().Data)).Build()
		model[id] = doc
		if err := d.Write(ctx, func(tx *Tx) error { return tx.Update(ctx, "c", doc) }); err != nil {
			t.Fatalf("update %d: %v", i, err)
		}
	}
	perUpdate := (e.DatabaseStats().LogBytes - logged) / updates
	if perUpdate > int64(len(model[0]))/10 {
		t.Fatalf("%d log bytes per update of a %d-byte document", perUpdate, len(model[0]))
	}
	crashed := crashCopy(t, dir)
	e.Close()
	e2 := openClosing(t, crashed, Options{LargeDocThreshold: -1})
	d2, err := e2.Database(ctx, "db", false)
	if err != nil {
		t.Fatal(err)
	}
	wantDocs(t, d2, model)
}

func wantDocs(t *testing.T, d *Database, model map[int32][]byte) {
	t.Helper()
	snap, err := d.BranchSnapshot(context.Background(), DefaultBranch)
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range model {
		got, ok, err := snap.Get(ctx, "c", idValue(id))
		if err != nil || !ok || !bytes.Equal(got, want) {
			t.Fatalf("document %d after replay: %d bytes (found %v, err %v), want %d", id, len(got), ok, err, len(want))
		}
	}
}
