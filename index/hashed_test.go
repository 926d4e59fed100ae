package index

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// TestHashValueIsMongods: mongod's own check of its hash function
// (hasher.cpp: hash64 of {check: 42}.check is -944302157085130861), and
// numbers hash as the int64 they truncate to, whatever their type.
func TestHashValueIsMongods(t *testing.T) {
	i32 := func(n int32) bsoncore.Value {
		return bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, n)}
	}
	if got := HashValue(i32(42)); got != -944302157085130861 {
		t.Fatalf("hash of 42: %d, want mongod's -944302157085130861", got)
	}
	f := bsoncore.Value{Type: bsoncore.TypeDouble, Data: bsoncore.AppendDouble(nil, 42.9)}
	l := bsoncore.Value{Type: bsoncore.TypeInt64, Data: bsoncore.AppendInt64(nil, 42)}
	if HashValue(f) != HashValue(i32(42)) || HashValue(l) != HashValue(i32(42)) {
		t.Fatal("42, 42.9 and NumberLong(42) hash differently")
	}
	s := bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, "42")}
	if HashValue(s) == HashValue(i32(42)) {
		t.Fatal(`"42" hashes like 42`)
	}
	a := bsoncore.NewDocumentBuilder().AppendInt32("x", 1).Build()
	b := bsoncore.NewDocumentBuilder().AppendInt32("y", 1).Build()
	if HashValue(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: a}) == HashValue(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: b}) {
		t.Fatal("documents differing in a field name hash alike")
	}
}
