package index

import (
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

func TestSameEntries(t *testing.T) {
	parse := func(extra ...bsoncore.Element) *Spec {
		b := bsoncore.NewDocumentBuilder().AppendDocument("key", bsoncore.NewDocumentBuilder().AppendInt32("a", 1).Build()).AppendString("name", "a_1")
		for _, e := range extra {
			b.AppendValue(e.Key(), e.Value())
		}
		s, err := ParseSpec(b.Build(), testFilters)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	el := func(k string, v bsoncore.Value) bsoncore.Element {
		return bsoncore.Element(bsoncore.AppendValueElement(nil, k, v))
	}
	hidden := el("hidden", bsoncore.Value{Type: bsoncore.TypeBoolean, Data: []byte{1}})
	ttl := el("expireAfterSeconds", bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, 60)})
	unique := el("unique", bsoncore.Value{Type: bsoncore.TypeBoolean, Data: []byte{1}})
	plain := parse()
	if !SameEntries(plain, parse(hidden)) || !SameEntries(plain, parse(ttl)) || !SameEntries(parse(hidden), parse(ttl)) {
		t.Error("hidden and expireAfterSeconds do not change an index's entries")
	}
	prepare := el("prepareUnique", bsoncore.Value{Type: bsoncore.TypeBoolean, Data: []byte{1}})
	sparse := el("sparse", bsoncore.Value{Type: bsoncore.TypeBoolean, Data: []byte{1}})
	// unique changes what an index admits, not its entries: collMod checks
	// the entries for duplicates, then keeps them.
	if !SameEntries(plain, parse(unique)) || !SameEntries(plain, parse(prepare)) || !SameEntries(parse(unique), parse(prepare)) {
		t.Error("unique and prepareUnique do not change an index's entries")
	}
	if SameEntries(plain, parse(sparse)) || SameEntries(parse(unique), parse(unique, sparse)) {
		t.Error("sparse changes an index's entries")
	}
}

// TestPrepareUniqueSpec: prepareUnique is a kept bool option that makes
// an index refuse duplicates; with unique: true it is refused, as mongod
// refuses it.
func TestPrepareUniqueSpec(t *testing.T) {
	spec := func(opts ...string) bsoncore.Document {
		b := bsoncore.NewDocumentBuilder().AppendDocument("key", bsoncore.NewDocumentBuilder().AppendInt32("a", 1).Build())
		for _, o := range opts {
			b.AppendBoolean(o, true)
		}
		return b.Build()
	}
	s, err := ParseSpec(spec("prepareUnique"), nil)
	if err != nil || !s.PrepareUnique || s.Unique || !s.RefusesDuplicates() || !s.Raw.Lookup("prepareUnique").Boolean() {
		t.Fatalf("prepareUnique: %v %v", s, err)
	}
	if s, _ := ParseSpec(spec(), nil); s.RefusesDuplicates() {
		t.Error("a plain index refuses duplicates")
	}
	if _, err := ParseSpec(spec("unique", "prepareUnique"), nil); err == nil || !strings.Contains(err.Error(), "prepareUnique") {
		t.Errorf("unique and prepareUnique: %v", err)
	}
	// Kinds that cannot be unique cannot prepare for it: their keys are
	// hashes, cells or terms that documents share.
	for _, kind := range []string{"hashed", "text", "2dsphere"} {
		d := bsoncore.NewDocumentBuilder().AppendDocument("key", bsoncore.NewDocumentBuilder().AppendString("a", kind).Build()).
			AppendBoolean("prepareUnique", true).Build()
		if _, err := ParseSpec(d, nil); err == nil {
			t.Errorf("a %s index with prepareUnique was accepted", kind)
		}
	}
}
