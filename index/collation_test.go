package index

import (
	"bytes"
	"errors"
	"math/rand"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/value"
)

func mustSpec(t testing.TB, spec bson.D) *Spec {
	t.Helper()
	raw, err := bson.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ParseSpec(raw, testFilters)
	if err != nil {
		t.Fatalf("%v: %v", spec, err)
	}
	return s
}

// TestEncodeKeyCollatedOrder checks, for random values (strings inside
// documents and arrays too), that the byte order of collated encodings is
// the collation's order of the values.
func TestEncodeKeyCollatedOrder(t *testing.T) {
	for _, spec := range []bson.D{
		{{Key: "locale", Value: "en"}, {Key: "strength", Value: 2}},
		{{Key: "locale", Value: "de"}, {Key: "strength", Value: 1}, {Key: "numericOrdering", Value: true}},
	} {
		raw, _ := bson.Marshal(spec)
		c, err := value.ParseCollation(raw)
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewSource(7))
		vals := make([]bsoncore.Value, 2000)
		for i := range vals {
			vals[i] = randValue(r, 2)
		}
		keys := make([][]byte, len(vals))
		for i, v := range vals {
			keys[i] = EncodeKeyCollated(nil, v, c)
		}
		for n := 0; n < 40000; n++ {
			i, j := r.Intn(len(vals)), r.Intn(len(vals))
			want := value.CompareCollated(vals[i], vals[j], c)
			if got := sign(bytes.Compare(keys[i], keys[j])); got != want {
				t.Fatalf("%v: compare(%s, %s) = %d but keys compare %d", spec, vals[i], vals[j], want, got)
			}
		}
	}
}

func TestSpecCollation(t *testing.T) {
	s := mustSpec(t, bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: 1}, {Key: "b", Value: -1}}}, {Key: "name", Value: "ab"},
		{Key: "collation", Value: bson.D{{Key: "locale", Value: "en"}, {Key: "strength", Value: 2}}}, {Key: "unique", Value: true}})
	want := `{"v": {"$numberInt":"2"},"key": {"a": {"$numberInt":"1"},"b": {"$numberInt":"-1"}},"name": "ab","collation": {"locale": "en","caseLevel": false,"caseFirst": "off","strength": {"$numberInt":"2"},"numericOrdering": false,"alternate": "non-ignorable","maxVariable": "punct","normalization": false,"backwards": false,"version": "57.1"},"unique": true}`
	if got := s.Raw.String(); got != want {
		t.Fatalf("raw: %s", got)
	}
	loaded, err := LoadSpec(s.Raw, testFilters)
	if err != nil || !loaded.SameOptions(s) || !loaded.Collation().Equal(s.Collation()) {
		t.Fatalf("reload: %v", err)
	}
	if s.CanCover() {
		t.Fatal("a collated index covers")
	}
	doc := func(d bson.D) bsoncore.Document { raw, _ := bson.Marshal(d); return raw }
	k1, _, _ := s.Keys(doc(bson.D{{Key: "a", Value: "Hello"}, {Key: "b", Value: bson.D{{Key: "x", Value: "ÀB"}}}}))
	k2, _, _ := s.Keys(doc(bson.D{{Key: "a", Value: "hello"}, {Key: "b", Value: bson.D{{Key: "x", Value: "àb"}}}}))
	k3, _, _ := s.Keys(doc(bson.D{{Key: "a", Value: "hellö"}, {Key: "b", Value: bson.D{{Key: "x", Value: "àb"}}}}))
	if !bytes.Equal(k1[0], k2[0]) || bytes.Equal(k1[0], k3[0]) {
		t.Fatalf("keys: %x %x %x", k1, k2, k3)
	}
	kv := s.KeyValue(doc(bson.D{{Key: "a", Value: "HELLO"}, {Key: "b", Value: bson.D{{Key: "x", Value: "àB"}}}}), k1[0])
	if kv.String() != `{"a": "HELLO","b": {"x": "àB"}}` {
		t.Fatalf("keyValue: %s", kv)
	}
	if s.Covered(doc(bson.D{{Key: "a", Value: "x"}}), false) != nil {
		t.Fatal("covered values stored")
	}

	// Simple is no collation; numbers encode as without one.
	simple := mustSpec(t, bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: 1}}}, {Key: "collation", Value: bson.D{{Key: "locale", Value: "simple"}}}})
	if simple.Collation() != nil || bytes.Contains(simple.Raw, []byte("collation")) {
		t.Fatalf("simple: %s", simple.Raw)
	}
	n1, _, _ := s.Keys(doc(bson.D{{Key: "a", Value: 5}, {Key: "b", Value: 1.5}}))
	n2, _, _ := mustSpec(t, bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: 1}, {Key: "b", Value: -1}}}}).Keys(doc(bson.D{{Key: "a", Value: 5}, {Key: "b", Value: 1.5}}))
	if !bytes.Equal(n1[0], n2[0]) {
		t.Fatal("numbers encode differently under a collation")
	}
}

func TestSpecCollationErrors(t *testing.T) {
	for _, c := range []struct {
		spec bson.D
		code int32
	}{
		{bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: 1}}}, {Key: "collation", Value: "en"}}, 14},
		{bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: 1}}}, {Key: "collation", Value: bson.D{}}}, 2},
		{bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: 1}}}, {Key: "collation", Value: bson.D{{Key: "locale", Value: "nope"}}}}, 2},
		{bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: 1}}}, {Key: "collation", Value: bson.D{{Key: "locale", Value: "en"}, {Key: "strength", Value: 9}}}}, 2},
		{bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: "text"}}}, {Key: "collation", Value: bson.D{{Key: "locale", Value: "en"}}}}, 67},
		{bson.D{{Key: "key", Value: bson.D{{Key: "$**", Value: 1}}}, {Key: "collation", Value: bson.D{{Key: "locale", Value: "en"}}}}, 238},
		{bson.D{{Key: "key", Value: bson.D{{Key: "_id", Value: 1}}}, {Key: "collation", Value: bson.D{{Key: "locale", Value: "en"}}}}, 2},
	} {
		raw, _ := bson.Marshal(c.spec)
		_, err := ParseSpec(raw, testFilters)
		if code := codeOf(err); code != c.code {
			t.Errorf("%v: %v, want code %d", c.spec, err, c.code)
		}
	}
}

// BenchmarkSpecKeys measures key generation with and without a collation.
func BenchmarkSpecKeys(b *testing.B) {
	raw, _ := bson.Marshal(bson.D{{Key: "a", Value: "some name"}, {Key: "b", Value: 42}})
	for _, bc := range []struct {
		name string
		spec bson.D
	}{
		{"simple", bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: 1}, {Key: "b", Value: 1}}}}},
		{"collated", bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: 1}, {Key: "b", Value: 1}}}, {Key: "collation", Value: bson.D{{Key: "locale", Value: "en"}, {Key: "strength", Value: 2}}}}},
	} {
		s := mustSpec(b, bc.spec)
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := s.Keys(raw); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func codeOf(err error) int32 {
	var me *mongoerr.Error
	if errors.As(err, &me) {
		return int32(me.Code)
	}
	return 0
}
