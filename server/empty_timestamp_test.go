package server

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

func TestHasEmptyTimestamp(t *testing.T) {
	for _, c := range []struct {
		doc  bsoncore.Document
		want bool
	}{
		{bsoncore.NewDocumentBuilder().Build(), false},
		{bsoncore.NewDocumentBuilder().AppendInt32("_id", 1).AppendString("s", "x").Build(), false},
		{bsoncore.NewDocumentBuilder().AppendTimestamp("_id", 0, 0).Build(), false},
		{bsoncore.NewDocumentBuilder().AppendInt32("_id", 1).AppendTimestamp("t", 1, 0).Build(), false},
		{bsoncore.NewDocumentBuilder().AppendInt32("_id", 1).AppendString("s", "x").AppendTimestamp("t", 0, 0).Build(), true},
		{bsoncore.NewDocumentBuilder().AppendDocument("d", bsoncore.NewDocumentBuilder().AppendTimestamp("t", 0, 0).Build()).Build(), false},
	} {
		if got := hasEmptyTimestamp(c.doc); got != c.want {
			t.Errorf("hasEmptyTimestamp(%v) = %v, want %v", c.doc, got, c.want)
		}
	}
	doc := bsoncore.NewDocumentBuilder().AppendInt32("_id", 1).AppendString("s", "x").Build()
	if n := testing.AllocsPerRun(100, func() { hasEmptyTimestamp(doc) }); n != 0 {
		t.Errorf("hasEmptyTimestamp allocates %v times a document", n)
	}
}
