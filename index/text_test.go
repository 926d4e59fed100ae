package index

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

func TestTextSpecRoundTrip(t *testing.T) {
	raw, _ := bson.Marshal(bson.D{{Key: "key", Value: bson.D{{Key: "title", Value: "text"}, {Key: "body", Value: "text"}}},
		{Key: "weights", Value: bson.D{{Key: "title", Value: 5}}}})
	s, err := ParseSpec(raw, testFilters)
	if err != nil {
		t.Fatal(err)
	}
	again, err := LoadSpec(s.Raw, testFilters)
	if err != nil {
		t.Fatal(err)
	}
	if again.Name != "title_text_body_text" || !again.SameKey(s) || !again.SameOptions(s) || len(again.Text.Fields) != 2 || again.Text.Fields[0].Weight != 5 {
		t.Fatalf("round trip: %v / %v", s.Raw, again.Raw)
	}
	doc, _ := bson.Marshal(bson.D{{Key: "title", Value: "Running runners"}, {Key: "body", Value: "the run"}})
	keys, mk, err := again.Keys(bsoncore.Document(doc))
	if err != nil || mk || len(keys) != 2 { // "run", "runner"
		t.Fatalf("keys: %d %v %v", len(keys), mk, err)
	}
}
