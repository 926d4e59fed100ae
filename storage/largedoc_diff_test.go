package storage

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"reflect"
	"testing"

	"github.com/dolthub/dolt/go/store/prolly/tree"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/storage/doctree"
	"github.com/dumbodb/dumbodb/storage/doctree/doctreetest"
)

// editDoc makes one random edit somewhere in doc: a changed, longer or
// shorter value, a new field, a removed field, an array append.
func editDoc(rng *rand.Rand, doc bsoncore.Document, depth int) bsoncore.Document {
	els, _ := doc.Elements()
	if len(els) == 0 {
		return setField(doc, "new", bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, 1)})
	}
	el := els[rng.Intn(len(els))]
	v := el.Value()
	switch k := rng.Intn(10); {
	case v.Type == bsoncore.TypeEmbeddedDocument && k < 6 && depth < 30:
		return setField(doc, el.Key(), bsoncore.Value{Type: v.Type, Data: editDoc(rng, v.Document(), depth+1)})
	case v.Type == bsoncore.TypeArray && k < 4:
		vals, _ := v.Array().Values()
		ab := bsoncore.NewArrayBuilder()
		for _, x := range vals {
			ab.AppendValue(x)
		}
		return setField(doc, el.Key(), bsoncore.Value{Type: v.Type, Data: ab.AppendString("appended").Build()})
	case k < 7:
		s := fmt.Sprintf("changed-%d", rng.Intn(1<<20))
		return setField(doc, el.Key(), bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, s)})
	case k < 9:
		return setField(doc, fmt.Sprintf("added%d", rng.Intn(1000)), bsoncore.Value{Type: bsoncore.TypeBoolean, Data: []byte{1}})
	}
	b := bsoncore.NewDocumentBuilder()
	for _, x := range els {
		if x.Key() != el.Key() {
			b.AppendValue(x.Key(), x.Value())
		}
	}
	return b.Build()
}

// TestDoctreeDiffMatchesFieldDiff: the tree diff reports what the
// byte-level FieldDiff reports, for random edits of large documents.
func TestDoctreeDiffMatchesFieldDiff(t *testing.T) {
	ns := tree.NewTestNodeStore()
	rng := rand.New(rand.NewSource(7))
	base := vonNeumann(14)
	for i := 0; i < 60; i++ {
		a := base
		b := a
		for n := 1 + rng.Intn(3); n > 0; n-- {
			b = editDoc(rng, b, 0)
		}
		ta, tb := buildTree(t, ns, a), buildTree(t, ns, b)
		got, err := doctree.Diff(ctx, ta, tb, false, diffValues)
		if err != nil {
			t.Fatal(err)
		}
		if want := FieldDiff(a, b); !reflect.DeepEqual(normalize(got), normalize(want)) {
			t.Fatalf("case %d:\n got %v\nwant %v", i, describe(got), describe(want))
		}
		base = b
	}
}

func buildTree(t *testing.T, ns tree.NodeStore, doc []byte) doctree.Tree {
	t.Helper()
	m, err := doctree.Build(ctx, ns, doc)
	if err != nil {
		t.Fatal(err)
	}
	return doctree.FromMap(m)
}

func normalize(cs []FieldChange) []string {
	out := describe(cs)
	if out == nil {
		return []string{}
	}
	return out
}

func describe(cs []FieldChange) []string {
	var out []string
	for _, c := range cs {
		out = append(out, fmt.Sprintf("%s: %v -> %v", c.Path, c.From, c.To))
	}
	return out
}

// TestDoctreeDiffCostFollowsTheChange: diffing two 16 MB documents that
// differ in one field reads about as many nodes as diffing two 100 KB ones.
func TestDoctreeDiffCostFollowsTheChange(t *testing.T) {
	reads := map[int]int{}
	for _, n := range []int{13, 20} {
		ns := doctreetest.NewCountingStore()
		a := vonNeumann(n)
		k := a.Lookup("k5").Document()
		k = setField(k, "l", bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, "changed")})
		b := setField(a, "k5", bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: k})
		ta, tb := buildTree(t, ns, a), buildTree(t, ns, b)
		ns.Reset()
		got, err := doctree.Diff(ctx, ta, tb, false, diffValues)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0].Path != "k5.l" {
			t.Fatalf("doc(%d): changes %v", n, describe(got))
		}
		reads[n] = ns.NodesRead()
		t.Logf("doc(%d), %d bytes: the diff read %d nodes", n, len(a), ns.NodesRead())
	}
	if reads[20] > 3*reads[13]+10 {
		t.Errorf("a 16 MB diff read %d nodes, a 100 KB one %d", reads[20], reads[13])
	}
}

// TestLargeDocMergeMatchesWholeDocuments: three-way merges of large
// documents give, byte for byte, what the same merges of whole documents
// give (clean merges, identical changes on both sides, conflicts).
func TestLargeDocMergeMatchesWholeDocuments(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	outcomes := map[bool]int{}
	for round := 0; round < 12; round++ {
		base := setField(vonNeumann(14), "_id", bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, 1)})
		ours, theirs := base, base
		for n := 1 + rng.Intn(2); n > 0; n-- {
			ours = editDoc(rng, ours, 0)
			theirs = editDoc(rng, theirs, 0)
		}
		switch round % 4 {
		case 0:
			theirs = ours // the same change on both sides
		case 1: // one field changed differently on both sides
			ours = setField(ours, "l", bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, 100)})
			theirs = setField(theirs, "l", bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, 200)})
		}
		ours = setField(ours, "_id", base.Lookup("_id"))
		theirs = setField(theirs, "_id", base.Lookup("_id"))
		tree, treeErr := mergeOnce(t, 0, base, ours, theirs)
		whole, wholeErr := mergeOnce(t, -1, base, ours, theirs)
		if (treeErr == nil) != (wholeErr == nil) || !bytes.Equal(tree, whole) {
			t.Fatalf("round %d: doctree merge %v (%d bytes), whole-document merge %v (%d bytes)",
				round, treeErr, len(tree), wholeErr, len(whole))
		}
		outcomes[treeErr == nil]++
	}
	if outcomes[true] == 0 || outcomes[false] == 0 {
		t.Fatalf("the rounds did not cover clean merges and conflicts: %v", outcomes)
	}
}

// mergeOnce merges theirs into ours over base on a fresh engine and
// returns the merged document (nil and the error on conflict).
func mergeOnce(t *testing.T, threshold int, base, ours, theirs bsoncore.Document) ([]byte, error) {
	e := openEngine(t, t.TempDir(), Options{LargeDocThreshold: threshold})
	defer e.Close()
	d, _ := e.Database(ctx, "db", true)
	put(t, d, "main", base)
	commit(t, d)
	if _, err := d.CreateBranch(ctx, "side", Revision{Branch: "main"}); err != nil {
		t.Fatal(err)
	}
	put(t, d, "side", theirs)
	if _, err := d.Commit(ctx, "side", CommitOptions{Message: "theirs"}); err != nil && !errors.Is(err, ErrNothingToCommit) {
		t.Fatal(err)
	}
	put(t, d, "main", ours)
	if _, err := d.Commit(ctx, "main", CommitOptions{Message: "ours"}); err != nil && !errors.Is(err, ErrNothingToCommit) {
		t.Fatal(err)
	}
	if _, err := d.Merge(ctx, "main", Revision{Branch: "side"}, MergeOptions{}); err != nil {
		return nil, err
	}
	return get(t, d, Revision{Branch: "main"}, 1), nil
}
