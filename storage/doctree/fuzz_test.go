package doctree

import (
	"bytes"
	"context"
	"testing"

	"github.com/dumbodb/dumbodb/internal/fuzzbson"

	"github.com/dolthub/dolt/go/store/prolly/tree"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// fuzzDoc is the document a fuzz input stands for: the decoded document
// repeated copies times in an array, and a binary of pad bytes, so that
// small inputs still reach multi-segment trees and split scalars.
func fuzzDoc(doc bsoncore.Document, copies uint8, pad uint16) bsoncore.Document {
	arr := bsoncore.NewArrayBuilder()
	for range copies {
		arr.AppendDocument(doc)
	}
	return bsoncore.NewDocumentBuilder().AppendDocument("d", doc).AppendArray("r", arr.Build()).
		AppendBinary("p", 0, make([]byte, pad)).Build()
}

// FuzzTree checks that a built tree reads back as the document, and that
// projecting it on the paths a second document names keeps what the
// reference projection keeps.
func FuzzTree(f *testing.F) {
	doc := fuzzbson.Encode(bson.D{{Key: "a", Value: bson.A{1, "x", bson.D{{Key: "b", Value: 2.5}}}}, {Key: "c", Value: bson.D{{Key: "a", Value: nil}}}})
	paths := fuzzbson.Encode(bson.D{{Key: "d.a", Value: 1}, {Key: "r.1.c", Value: 1}, {Key: "p", Value: 1}, {Key: "x", Value: 1}})
	f.Add(append(doc, paths...), uint8(0), uint16(0))
	f.Add(append(doc, paths...), uint8(200), uint16(9000))
	f.Add(doc, uint8(30), uint16(5000))
	ctx := context.Background()
	ns := tree.NewTestNodeStore()
	f.Fuzz(func(t *testing.T, data []byte, copies uint8, pad uint16) {
		in := fuzzbson.Documents(data, 2)
		doc := fuzzDoc(in[0], copies, pad)
		m, err := Build(ctx, ns, doc)
		if err != nil {
			t.Fatal(err)
		}
		tr, err := Load(ctx, ns, m.HashOf())
		if err != nil {
			t.Fatal(err)
		}
		if got, err := tr.Document(ctx); err != nil || !bytes.Equal(got, doc) {
			t.Fatalf("round trip differs (%v)", err)
		}
		var paths []string
		keys, _ := in[1].Elements()
		for _, k := range keys {
			paths = append(paths, k.Key())
		}
		fields := NewFields(paths)
		got, err := tr.Project(ctx, fields)
		if err != nil {
			t.Fatalf("project %q: %v", paths, err)
		}
		if want := refProject(doc, fields); !bytes.Equal(got, want) {
			t.Fatalf("project %q: got %v, want %v", paths, bson.Raw(got), bson.Raw(want))
		}
	})
}

// FuzzParseKey checks that segment keys decode without panicking and
// that the paths they hold encode back to the same key prefix.
func FuzzParseKey(f *testing.F) {
	f.Add(pathKey(nil, []int{0, 3, 200}))
	f.Add(appendIndex(pathKey(nil, []int{1 << 20}), 7))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, key []byte) {
		path, _, _, err := parseKey(key, nil)
		if err != nil {
			return
		}
		if enc := pathKey(nil, path); !bytes.HasPrefix(key, enc) {
			t.Fatalf("key %x parses to path %v, which encodes as %x", key, path, enc)
		}
	})
}
