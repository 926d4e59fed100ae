package index

import (
	"bytes"
	"fmt"
	"math/rand"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/query"
	"github.com/dumbodb/dumbodb/value"
)

// testFilters compiles partial filters for this package's tests.
func testFilters(filter bsoncore.Document, coll *value.Collation) (Matcher, error) {
	f, err := query.CompilePartialFilter(filter, coll)
	if err != nil {
		return nil, err
	}
	return f, nil
}

// TestCoveredMatchesInclusionProjection checks the covered values against
// the query language's inclusion projection of the key paths, for random
// documents made of the key paths' components.
func TestCoveredMatchesInclusionProjection(t *testing.T) {
	patterns := []bson.D{
		{{Key: "a", Value: 1}},
		{{Key: "a.b", Value: 1}, {Key: "c", Value: -1}},
		{{Key: "a.b", Value: 1}, {Key: "a.c", Value: 1}, {Key: "_id", Value: 1}},
		{{Key: "x.y.z", Value: 1}, {Key: "b", Value: 1}},
	}
	rng := rand.New(rand.NewSource(1))
	for _, p := range patterns {
		raw, _ := bson.Marshal(bson.D{{Key: "key", Value: p}})
		s, err := ParseSpec(raw, nil)
		if err != nil {
			t.Fatal(err)
		}
		proj := bsoncore.NewDocumentBuilder()
		hasID := false
		for _, f := range s.Fields {
			proj.AppendInt32(f.Path, 1)
			hasID = hasID || f.Path == "_id"
		}
		if !hasID {
			proj.AppendInt32("_id", 0)
		}
		want, err := query.CompileProjection(proj.Build())
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 300; i++ {
			doc := randomCoverDoc(rng, 3)
			got := s.Covered(doc, false)
			exp, err := want.Apply(doc)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, exp) {
				t.Fatalf("%v on %v: covered %v, projection %v", p, bson.Raw(doc), bson.Raw(got), bson.Raw(exp))
			}
		}
	}
	raw, _ := bson.Marshal(bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: 1}, {Key: "a.b", Value: 1}}}})
	if s, err := ParseSpec(raw, nil); err != nil || s.CanCover() {
		t.Fatalf("colliding key paths: %v, can cover %v", err, s != nil && s.CanCover())
	}
}

// randomCoverDoc builds a document without arrays (a non-multikey
// document) from the names the patterns use.
func randomCoverDoc(rng *rand.Rand, depth int) bsoncore.Document {
	names := []string{"_id", "a", "b", "c", "x", "y", "z"}
	b := bsoncore.NewDocumentBuilder()
	for _, k := range rng.Perm(len(names))[:rng.Intn(len(names))] {
		switch {
		case depth > 0 && rng.Intn(2) == 0:
			b.AppendDocument(names[k], randomCoverDoc(rng, depth-1))
		default:
			b.AppendString(names[k], fmt.Sprint(rng.Intn(100)))
		}
	}
	return b.Build()
}
