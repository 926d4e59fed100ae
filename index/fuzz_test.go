package index_test

import (
	"bytes"
	"math"
	"testing"

	"github.com/dumbodb/dumbodb/index"
	"github.com/dumbodb/dumbodb/internal/fuzzbson"
	"github.com/dumbodb/dumbodb/query"
	"github.com/dumbodb/dumbodb/value"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

var d = fuzzbson.D

// FuzzEncodeKey checks EncodeKey's promise on the values of a fuzzed
// document: byte order is value.Compare's order (under a collation too),
// so equal values encode alike. Decimal128 is excluded where EncodeKey
// documents it as best effort.
func FuzzEncodeKey(f *testing.F) {
	vals := d("0", 1, "1", int64(1), "2", 1.0, "3", math.Copysign(0, -1), "4", "abc", "5", "ABC", "6", bson.A{1, "x"},
		"7", d("a", 1), "8", nil, "9", bson.MinKey{}, "10", bson.Regex{Pattern: "a", Options: "i"}, "11", 1.5, "12", int64(1)<<62)
	f.Add(fuzzbson.EncodeAll(vals, d()))
	f.Add(fuzzbson.EncodeAll(vals, d("locale", "en", "strength", 2)))
	f.Fuzz(func(t *testing.T, data []byte) {
		in := fuzzbson.Documents(data, 2)
		coll, err := value.ParseCollation(in[1])
		fuzzbson.CheckUserError(t, "ParseCollation", err)
		vs, _ := in[0].Values()
		for _, a := range vs {
			for _, b := range vs {
				if hasDecimal(a) || hasDecimal(b) {
					continue
				}
				byKey := bytes.Compare(index.EncodeKeyCollated(nil, a, coll), index.EncodeKeyCollated(nil, b, coll))
				if cmp := value.CompareCollated(a, b, coll); sign(cmp) != byKey {
					t.Fatalf("%v vs %v: Compare says %d, keys say %d", a, b, cmp, byKey)
				}
			}
		}
	})
}

func sign(n int) int { return min(max(n, -1), 1) }

func hasDecimal(v bsoncore.Value) bool {
	switch v.Type {
	case bsoncore.TypeDecimal128:
		return true
	case bsoncore.TypeEmbeddedDocument, bsoncore.TypeArray:
		vals, _ := bsoncore.Document(v.Data).Values()
		for _, x := range vals {
			if hasDecimal(x) {
				return true
			}
		}
	}
	return false
}

// FuzzSpecKeys parses a fuzzed index spec and computes the keys of a few
// documents with it: errors must be the client's (with a code), never a
// panic.
func FuzzSpecKeys(f *testing.F) {
	docs := []any{d("_id", 1, "a", bson.A{1, 2}, "b", "x"), d("_id", 2, "a", d("b", bson.A{d("c", 1)})), d("_id", 3, "t", "the quick fox"), d("_id", 4, "t", "Les élèves", "l", "es", "b", d("t", "niños", "l", "xx"))}
	for _, spec := range []bson.D{
		d("key", d("a", 1, "b", -1), "name", "a_b"),
		d("key", d("a.b.c", 1), "name", "abc", "sparse", true, "unique", true),
		d("key", d("a", 1), "name", "p", "partialFilterExpression", d("b", d("$exists", true))),
		d("key", d("t", "text", "a", 1), "name", "t", "weights", d("t", 3), "default_language", "en"),
		d("key", d("b", 1, "t", "text", "a", -1), "name", "ct", "default_language", "fr", "language_override", "l", "textIndexVersion", 3),
		d("key", d("$**", "text"), "name", "wt", "weights", d("t", 5), "default_language", "none"),
		d("key", d("$**", 1), "name", "w", "wildcardProjection", d("a", 1)),
		d("key", d("a.$**", -1), "name", "w2"),
		d("key", d("b", 1), "name", "c", "collation", d("locale", "fr", "strength", 1)),
		d("key", d("a", bson.Undefined{}), "name", "bad"),
	} {
		f.Add(fuzzbson.EncodeAll(append([]any{spec}, docs...)...))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		in := fuzzbson.Documents(data, 1+len(docs))
		spec, err := index.ParseSpec(in[0], func(f bsoncore.Document, c *value.Collation) (index.Matcher, error) {
			return query.CompilePartialFilter(f, c)
		})
		fuzzbson.CheckUserError(t, "ParseSpec", err)
		if err != nil {
			return
		}
		for _, doc := range in[1:] {
			_, _, err := spec.Keys(doc)
			fuzzbson.CheckUserError(t, "Keys", err)
		}
	})
}
