package index

import (
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
	if SameEntries(plain, parse(unique)) {
		t.Error("unique changes what an index admits")
	}
}
