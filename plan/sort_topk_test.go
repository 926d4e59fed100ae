package plan

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dumbodb/dumbodb/query"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// TestTopKSortKeepsTheFirstOfAStableSort: a sort that keeps k documents
// returns exactly the first k of the stable sort of them all (ties in
// input order, which is _id order in a scan), for every k.
func TestTopKSortKeepsTheFirstOfAStableSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	var docs []bsoncore.Document
	for i := range 500 {
		docs = append(docs, bsoncore.NewDocumentBuilder().AppendInt32("_id", int32(i)).
			AppendInt32("a", rng.Int32N(20)).Build()) // many ties
	}
	srt, err := query.CompileSort(bsoncore.NewDocumentBuilder().AppendInt32("a", -1).Build())
	if err != nil {
		t.Fatal(err)
	}
	ids := func(items []sortItem) []string {
		var out []string
		for _, it := range items {
			out = append(out, fmt.Sprint(it.doc.Lookup("_id").Int32()))
		}
		return out
	}
	all, err := collectSorted(context.Background(), query.NewSliceStream(docs), srt, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := ids(all)
	for _, k := range []int{1, 2, 10, 37, 499, 500, 501} {
		got, err := collectSorted(context.Background(), query.NewSliceStream(docs), srt, k, nil)
		if err != nil {
			t.Fatal(err)
		}
		if n := min(k, len(docs)); !slices.Equal(ids(got), want[:n]) {
			t.Fatalf("keep %d: %v, want %v", k, ids(got), want[:n])
		}
	}
	for i := 1; i < len(all); i++ { // the full sort is stable
		a, b := all[i-1].doc, all[i].doc
		if a.Lookup("a").Int32() == b.Lookup("a").Int32() && a.Lookup("_id").Int32() > b.Lookup("_id").Int32() {
			t.Fatalf("ties out of input order at %d", i)
		}
	}
}
