package index

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/mongoerr"
)

func textSpec(t *testing.T, spec bson.D) (*Spec, error) {
	t.Helper()
	raw, err := bson.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	return ParseSpec(raw, testFilters)
}

func TestTextSpecRoundTrip(t *testing.T) {
	s, err := textSpec(t, bson.D{{Key: "key", Value: bson.D{{Key: "title", Value: "text"}, {Key: "body", Value: "text"}}},
		{Key: "weights", Value: bson.D{{Key: "title", Value: 5}}}})
	if err != nil {
		t.Fatal(err)
	}
	again, err := LoadSpec(s.Raw, testFilters)
	if err != nil {
		t.Fatal(err)
	}
	// Weights are listed in field name order, as mongod does.
	if again.Name != "title_text_body_text" || !again.SameKey(s) || !again.SameOptions(s) || len(again.Text.Fields) != 2 ||
		again.Text.Fields[1].Path != "title" || again.Text.Fields[1].Weight != 5 {
		t.Fatalf("round trip: %v / %v", s.Raw, again.Raw)
	}
	doc, _ := bson.Marshal(bson.D{{Key: "title", Value: "Running runners"}, {Key: "body", Value: "the run"}})
	keys, mk, err := again.Keys(bsoncore.Document(doc))
	if err != nil || mk || len(keys) != 2 { // "run", "runner"
		t.Fatalf("keys: %d %v %v", len(keys), mk, err)
	}
}

func TestCompoundTextSpec(t *testing.T) {
	s, err := textSpec(t, bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: 1}, {Key: "content", Value: "text"}, {Key: "b", Value: -1}}},
		{Key: "default_language", Value: "fr"}, {Key: "language_override", Value: "idioma"}, {Key: "textIndexVersion", Value: 3}})
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "a_1_content_text_b_-1" || len(s.TextPrefix) != 1 || len(s.TextSuffix) != 1 || !s.TextSuffix[0].Desc {
		t.Fatalf("compound: %s %+v %+v", s.Name, s.TextPrefix, s.TextSuffix)
	}
	again, err := LoadSpec(s.Raw, testFilters)
	if err != nil || !again.SameKey(s) || !again.SameOptions(s) || again.Text.Language.Name != "french" || again.Text.LanguageOverride != "idioma" {
		t.Fatalf("reload: %v %v", again, err)
	}
	if got := again.Key.String(); got != `{"a": {"$numberInt":"1"},"_fts": "text","_ftsx": {"$numberInt":"1"},"b": {"$numberInt":"-1"}}` {
		t.Fatalf("key pattern %s", got)
	}
	arr, _ := bson.Marshal(bson.D{{Key: "a", Value: bson.A{1, 2}}, {Key: "content", Value: "chat"}})
	if _, _, err := s.Keys(arr); codeOf(err) != int32(mongoerr.Location16675) {
		t.Fatalf("array prefix: %v", err)
	}
}

func TestTextSpecErrors(t *testing.T) {
	key := bson.E{Key: "key", Value: bson.D{{Key: "content", Value: "text"}}}
	for _, tc := range []struct {
		spec bson.D
		code mongoerr.Code
	}{
		{bson.D{key, {Key: "default_language", Value: "klingon"}}, mongoerr.CannotCreateIndex},
		{bson.D{key, {Key: "language_override", Value: "a.b"}}, mongoerr.CannotCreateIndex},
		{bson.D{key, {Key: "textIndexVersion", Value: 2}}, mongoerr.NotImplemented},
		{bson.D{key, {Key: "textIndexVersion", Value: 7}}, mongoerr.CannotCreateIndex},
		{bson.D{key, {Key: "weights", Value: bson.D{{Key: "x", Value: 0.5}}}}, mongoerr.CannotCreateIndex},
		{bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: "text"}, {Key: "b", Value: 1}, {Key: "c", Value: "text"}}}}, mongoerr.CannotCreateIndex},
		{bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: "hashed"}, {Key: "c", Value: "text"}}}}, mongoerr.CannotCreateIndex},
		{bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: 1}}}, {Key: "default_language", Value: "french"}}, mongoerr.CannotCreateIndex},
	} {
		if _, err := textSpec(t, tc.spec); codeOf(err) != int32(tc.code) {
			t.Errorf("%v: %v, want code %d", tc.spec, err, tc.code)
		}
	}
}

func TestCompoundTextDirections(t *testing.T) {
	for _, v := range []any{2, -3, "hashed"} {
		_, err := textSpec(t, bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: v}, {Key: "c", Value: "text"}}}})
		if codeOf(err) != int32(mongoerr.CannotCreateIndex) {
			t.Errorf("{a: %v, c: text}: %v", v, err)
		}
	}
}

func TestTextEntrySuffix(t *testing.T) {
	s, err := textSpec(t, bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: 1}, {Key: "c", Value: "text"}, {Key: "b", Value: -1}}}})
	if err != nil {
		t.Fatal(err)
	}
	doc, _ := bson.Marshal(bson.D{{Key: "a", Value: "p"}, {Key: "b", Value: 2.5}, {Key: "c", Value: "coffee coffee tea"}})
	keys, _, err := s.Keys(doc)
	if err != nil || len(keys) != 2 {
		t.Fatalf("keys %d %v", len(keys), err)
	}
	prefix := TextPrefixKey(s.TextPrefix, []bsoncore.Value{{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, "p")}})
	b := bsoncore.Value{Type: bsoncore.TypeDouble, Data: bsoncore.AppendDouble(nil, 2.5)}
	want := extend([][]byte{nil}, []bsoncore.Value{b}, true, nil)[0]
	id := []byte{9, 9}
	for _, k := range keys {
		var term string
		for _, t := range []string{"coffe", "tea"} {
			if p := TextTermPrefix(prefix, t); string(k[:len(p)]) == string(p) {
				term = t
			}
		}
		got := TextEntrySuffix(append(append([]byte(nil), k...), id...), TextTermPrefix(prefix, term), id)
		if string(got) != string(want) {
			t.Errorf("term %q: suffix %x, want %x", term, got, want)
		}
	}
}
