package fuzzbson

import (
	"bytes"
	"math"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

func TestEncodeRoundTrip(t *testing.T) {
	seeds := []bson.D{
		{},
		{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "a", Value: bson.D{{Key: "$gt", Value: int32(1)}}}}}},
		{{Key: "a", Value: bson.A{1.5, math.Inf(-1), "raw string not in Words", nil, true, int64(-7)}},
			{Key: "r", Value: bson.Regex{Pattern: "^a", Options: "i"}}, {Key: "o", Value: bson.NewObjectID()},
			{Key: "d", Value: bson.NewDecimal128(1, 2)}, {Key: "bin", Value: bson.Binary{Subtype: 4, Data: []byte{1, 2}}},
			{Key: "t", Value: bson.Timestamp{T: 1, I: 2}}, {Key: "k", Value: bson.MinKey{}}, {Key: "$toUpper", Value: bson.MaxKey{}},
			{Key: "cws", Value: bson.CodeWithScope{Code: "x", Scope: bson.D{{Key: "y", Value: int32(1)}}}}},
	}
	for _, seed := range seeds {
		want, err := bson.Marshal(seed)
		if err != nil {
			t.Fatal(err)
		}
		if got := Document(Encode(seed)); !bytes.Equal(got, want) {
			t.Errorf("%v: decoded to %v", seed, bson.Raw(got))
		}
	}
}

func TestDocumentsSplitsInput(t *testing.T) {
	in := EncodeAll(bson.D{{Key: "a", Value: int32(1)}}, bson.D{{Key: "b", Value: "x"}})
	docs := Documents(in, 3)
	if docs[0].Lookup("a").Int32() != 1 || docs[1].Lookup("b").StringValue() != "x" || len(docs[2]) != 5 {
		t.Fatalf("got %v", docs)
	}
}

// FuzzDocument checks the package's promise: every input is a document
// the official decoder reads in full.
func FuzzDocument(f *testing.F) {
	f.Add([]byte{})
	f.Add(Encode(bson.D{{Key: "a", Value: bson.A{bson.D{{Key: "$eq", Value: 1.0}}}}}))
	f.Fuzz(func(t *testing.T, data []byte) {
		var d bson.D
		if err := bson.Unmarshal(Document(data), &d); err != nil {
			t.Fatalf("decoded an invalid document: %v", err)
		}
	})
}
