package doctree

import (
	"bytes"
	"context"
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/dolthub/dolt/go/store/prolly/tree"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/storage/doctree/doctreetest"
)

// randomDoc builds a document of roughly size bytes with nested documents,
// arrays and the occasional long string.
func randomDoc(rng *rand.Rand, size, depth int) []byte {
	b := bsoncore.NewDocumentBuilder()
	for i := 0; size > 0; i++ {
		name := fmt.Sprintf("f%d", rng.Intn(1000))
		switch k := rng.Intn(10); {
		case k < 4 || depth > 20:
			b.AppendInt32(name, rng.Int31())
			size -= 10
		case k < 6:
			n := rng.Intn(40)
			if rng.Intn(20) == 0 {
				n = rng.Intn(20000)
			}
			b.AppendString(name, strings.Repeat(string(rune('a'+rng.Intn(26))), n))
			size -= n + 10
		case k < 8:
			sub := rng.Intn(size/2 + 1)
			b.AppendDocument(name, randomDoc(rng, sub, depth+1))
			size -= sub + 10
		default:
			arr := bsoncore.NewArrayBuilder()
			for j := rng.Intn(300); j > 0; j-- {
				arr.AppendInt64(rng.Int63())
			}
			b.AppendArray(name, arr.Build())
			size -= 3000
		}
	}
	return b.Build()
}

func TestRoundTripAndProject(t *testing.T) {
	ctx := context.Background()
	ns := tree.NewTestNodeStore()
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < 40; i++ {
		doc := randomDoc(rng, rng.Intn(400_000), 0)
		m, err := Build(ctx, ns, doc)
		if err != nil {
			t.Fatal(err)
		}
		tr, err := Load(ctx, ns, m.HashOf())
		if err != nil {
			t.Fatal(err)
		}
		got, err := tr.Document(ctx)
		if err != nil || !bytes.Equal(got, doc) {
			t.Fatalf("doc %d: round trip differs (%v)", i, err)
		}
		paths := pickPaths(rng, doc)
		f := NewFields(paths)
		part, err := tr.Project(ctx, f)
		if err != nil {
			t.Fatalf("doc %d: project %v: %v", i, paths, err)
		}
		want := refProject(doc, f)
		if !bytes.Equal(part, want) {
			t.Fatalf("doc %d: project %v: got %d bytes, want %d", i, paths, len(part), len(want))
		}
	}
}

// pickPaths picks existing and missing dotted paths of doc.
func pickPaths(rng *rand.Rand, doc bsoncore.Document) []string {
	var paths []string
	var walk func(prefix string, d bsoncore.Document)
	walk = func(prefix string, d bsoncore.Document) {
		els, _ := d.Elements()
		for _, el := range els {
			p := prefix + el.Key()
			if rng.Intn(6) == 0 {
				paths = append(paths, p)
			}
			if el.Value().Type == bsoncore.TypeEmbeddedDocument && rng.Intn(2) == 0 {
				walk(p+".", el.Value().Document())
			}
		}
	}
	walk("", doc)
	return append(paths, "missing", "f1.missing")
}

// refProject is Project over the document bytes.
func refProject(doc bsoncore.Document, f *Fields) []byte {
	if f.Whole() {
		return doc
	}
	b := bsoncore.NewDocumentBuilder()
	els, _ := doc.Elements()
	seen := map[string]bool{}
	for _, el := range els {
		sub, ok := f.children[el.Key()]
		first := !seen[el.Key()]
		seen[el.Key()] = true
		switch {
		case !ok || !first:
		case sub.whole || el.Value().Type != bsoncore.TypeEmbeddedDocument:
			b.AppendValue(el.Key(), el.Value())
		default:
			b.AppendDocument(el.Key(), refProject(el.Value().Document(), sub))
		}
	}
	return b.Build()
}

// TestProjectReadsOnlyItsPath: reading one field of a 4 MB document reads
// a few distinct nodes (the path to it and to the keys of the elements
// before it), not the document.
func TestProjectReadsOnlyItsPath(t *testing.T) {
	ctx := context.Background()
	ns := doctreetest.NewCountingStore()
	doc := ordinal(18) // 4 MB
	m, err := Build(ctx, ns, doc)
	if err != nil {
		t.Fatal(err)
	}
	nodes := 0
	if err := m.WalkNodes(ctx, func(context.Context, *tree.Node) error { nodes++; return nil }); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"l", "k3.k1.l", "k17.l"} {
		tr, _ := Load(ctx, ns, m.HashOf())
		ns.Reset()
		part, err := tr.Project(ctx, NewFields([]string{path}))
		if err != nil {
			t.Fatal(err)
		}
		if want := refProject(doc, NewFields([]string{path})); !bytes.Equal(part, want) {
			t.Fatalf("%s: got %v want %v", path, bsoncore.Document(part), bsoncore.Document(want))
		}
		t.Logf("%s: %d of %d nodes read", path, ns.NodesRead(), nodes)
		if ns.NodesRead() > nodes/10 {
			t.Errorf("%s: read %d of the tree's %d nodes", path, ns.NodesRead(), nodes)
		}
	}
}

// TestWideDocuments: containers with more elements than the one- and
// two-byte index widths hold.
func TestWideDocuments(t *testing.T) {
	ctx := context.Background()
	ns := tree.NewTestNodeStore()
	b := bsoncore.NewDocumentBuilder()
	arr := bsoncore.NewArrayBuilder()
	for i := 0; i < 70000; i++ {
		arr.AppendInt32(int32(i))
	}
	b.AppendArray("a", arr.Build())
	for i := 0; i < 3000; i++ {
		b.AppendString(fmt.Sprintf("f%d", i), strings.Repeat("v", i%50))
	}
	doc := b.Build()
	m, err := Build(ctx, ns, doc)
	if err != nil {
		t.Fatal(err)
	}
	tr := FromMap(m)
	if got, err := tr.Document(ctx); err != nil || !bytes.Equal(got, doc) {
		t.Fatalf("round trip: %v", err)
	}
	for _, paths := range [][]string{{"f2999"}, {"f300", "f1500"}, {"a"}, {"missing"}} {
		f := NewFields(paths)
		got, err := tr.Project(ctx, f)
		if err != nil || !bytes.Equal(got, refProject(doc, f)) {
			t.Fatalf("project %v: %v", paths, err)
		}
	}
}

// TestTopElements: a tree's top-level elements are the document's, byte
// for byte, for random documents and for elements that span segments: a
// container of many segments, a string cut into pieces, a long name.
func TestTopElements(t *testing.T) {
	ctx := context.Background()
	ns := tree.NewTestNodeStore()
	rng := rand.New(rand.NewSource(2))
	var docs [][]byte
	for range 30 {
		docs = append(docs, randomDoc(rng, rng.Intn(300_000), 0))
	}
	big := bsoncore.NewArrayBuilder()
	for i := range 100_000 {
		big.AppendInt64(int64(i))
	}
	docs = append(docs, bsoncore.NewDocumentBuilder().AppendInt32("_id", 1).AppendArray("a", big.Build()).
		AppendString("s", strings.Repeat("p", 50_000)).AppendString(strings.Repeat("k", 6000), "v").
		AppendInt32("last", 1).Build())
	for i, doc := range docs {
		m, err := Build(ctx, ns, doc)
		if err != nil {
			t.Fatal(err)
		}
		got, size, err := FromMap(m).TopElements(ctx)
		if err != nil {
			t.Fatalf("doc %d: %v", i, err)
		}
		want, _ := bsoncore.Document(doc).Elements()
		if size != len(doc) || len(got) != len(want) {
			t.Fatalf("doc %d: %d elements of a %d-byte document, want %d of %d", i, len(got), size, len(want), len(doc))
		}
		for k := range want {
			if !bytes.Equal(got[k], want[k]) {
				t.Fatalf("doc %d: element %d (%q) differs", i, k, want[k].Key())
			}
		}
	}
}
