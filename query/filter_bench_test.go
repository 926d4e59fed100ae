package query

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

func BenchmarkFilterMatch(b *testing.B) {
	doc := bsoncore.BuildDocument(nil,
		bsoncore.AppendInt32Element(nil, "_id", 1),
		bsoncore.AppendStringElement(nil, "name", "alice"),
		bsoncore.AppendDocumentElement(nil, "addr", bsoncore.BuildDocument(nil,
			bsoncore.AppendStringElement(nil, "city", "Paris"), bsoncore.AppendInt32Element(nil, "zip", 75001))),
		bsoncore.BuildArrayElement(nil, "tags", bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, "x")},
			bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, "y")}))
	cases := map[string]string{
		"eq":     `{"name": "alice"}`,
		"dotted": `{"addr.zip": {"$gte": 75000, "$lt": 76000}}`,
		"array":  `{"tags": {"$in": ["y", "z"]}}`,
	}
	for name, src := range cases {
		f, err := CompileFilter(mustDoc(b, src))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if !f.Match(doc) {
					b.Fatal("no match")
				}
			}
		})
	}
}
