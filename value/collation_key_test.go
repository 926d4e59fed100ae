package value

import (
	"bytes"
	"math/rand"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/dumbodb/dumbodb/mongoerr"
)

func mustCollation(t *testing.T, spec bson.D) *Collation {
	t.Helper()
	raw, err := bson.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	c, err := ParseCollation(raw)
	if err != nil {
		t.Fatalf("%v: %v", spec, err)
	}
	return c
}

// TestCollationKeyAgreesWithCompare checks that index keys order and equate
// strings exactly as the collation's comparison does, for every option the
// collator honours.
func TestCollationKeyAgreesWithCompare(t *testing.T) {
	specs := []bson.D{
		{{Key: "locale", Value: "en"}},
		{{Key: "locale", Value: "en"}, {Key: "strength", Value: 1}},
		{{Key: "locale", Value: "en"}, {Key: "strength", Value: 2}},
		{{Key: "locale", Value: "en"}, {Key: "strength", Value: 1}, {Key: "caseLevel", Value: true}},
		{{Key: "locale", Value: "en"}, {Key: "strength", Value: 4}},
		{{Key: "locale", Value: "en"}, {Key: "strength", Value: 5}},
		{{Key: "locale", Value: "en"}, {Key: "numericOrdering", Value: true}},
		{{Key: "locale", Value: "en"}, {Key: "alternate", Value: "shifted"}},
		{{Key: "locale", Value: "en"}, {Key: "alternate", Value: "shifted"}, {Key: "strength", Value: 4}},
		{{Key: "locale", Value: "fr_CA"}},
		{{Key: "locale", Value: "de"}, {Key: "strength", Value: 2}, {Key: "numericOrdering", Value: true}},
		{{Key: "locale", Value: "sv"}},
	}
	alphabet := []string{"a", "A", "b", "B", "e", "é", "É", "ß", "s", "ss", "z", "Z", "å", "ä", "ö", "1", "2", "10", "0", " ", "-", ".", "ø", "\x00", "æ", "ﬁ", "ǆ"}
	rng := rand.New(rand.NewSource(1))
	var words [][]byte
	for i := 0; i < 400; i++ {
		n := rng.Intn(5)
		var w []byte
		for j := 0; j < n; j++ {
			w = append(w, alphabet[rng.Intn(len(alphabet))]...)
		}
		words = append(words, w)
	}
	for _, spec := range specs {
		c := mustCollation(t, spec)
		keys := make([][]byte, len(words))
		for i, w := range words {
			keys[i] = c.AppendKey(nil, w)
		}
		bad := 0
		for i := range words {
			for j := range words {
				want := c.compareStrings(words[i], words[j])
				if got := bytes.Compare(keys[i], keys[j]); got != want {
					if bad++; bad < 4 {
						t.Errorf("%v: %q vs %q: compare %d, keys %d", spec, words[i], words[j], want, got)
					}
				}
			}
		}
	}
}

func TestCollationKeyStrength2(t *testing.T) {
	c := mustCollation(t, bson.D{{Key: "locale", Value: "en"}, {Key: "strength", Value: 2}})
	if !bytes.Equal(c.AppendKey(nil, []byte("abc")), c.AppendKey(nil, []byte("ABC"))) {
		t.Fatal("strength 2: case variants differ")
	}
	if bytes.Equal(c.AppendKey(nil, []byte("abc")), c.AppendKey(nil, []byte("ábc"))) {
		t.Fatal("strength 2: accents equal")
	}
}

func TestParseCollationErrors(t *testing.T) {
	cases := []struct {
		spec bson.D
		code int32
	}{
		{bson.D{{Key: "locale", Value: "xx"}}, 2},
		{bson.D{{Key: "locale", Value: "en-US"}}, 2},
		{bson.D{{Key: "locale", Value: ""}}, 2},
		{bson.D{{Key: "locale", Value: 1}}, 14},
		{bson.D{{Key: "locale", Value: "en"}, {Key: "strength", Value: 0}}, 2},
		{bson.D{{Key: "locale", Value: "en"}, {Key: "strength", Value: 6}}, 2},
		{bson.D{{Key: "locale", Value: "en"}, {Key: "caseFirst", Value: "middle"}}, 2},
		{bson.D{{Key: "locale", Value: "en"}, {Key: "alternate", Value: "x"}}, 2},
		{bson.D{{Key: "locale", Value: "en"}, {Key: "maxVariable", Value: "x"}}, 2},
		{bson.D{{Key: "locale", Value: "en"}, {Key: "caseLevel", Value: 1}}, 14},
		{bson.D{{Key: "locale", Value: "en"}, {Key: "strength", Value: 1}, {Key: "backwards", Value: true}}, 2},
		{bson.D{{Key: "locale", Value: "en"}, {Key: "strength", Value: 2}, {Key: "caseFirst", Value: "upper"}}, 2},
		{bson.D{{Key: "locale", Value: "en"}, {Key: "version", Value: "1.0"}}, 161},
		{bson.D{{Key: "locale", Value: "simple"}, {Key: "strength", Value: 1}}, 2},
		{bson.D{{Key: "locale", Value: "en"}, {Key: "bogus", Value: 1}}, 40415},
	}
	for _, c := range cases {
		raw, _ := bson.Marshal(c.spec)
		_, err := ParseCollation(raw)
		me, ok := err.(*mongoerr.Error)
		if !ok || int32(me.Code) != c.code {
			t.Errorf("%v: got %v, want code %d", c.spec, err, c.code)
		}
	}
	for _, ok := range []string{"en", "en_US", "fr_CA", "de", "zh_Hant", "sv", "da"} {
		mustCollation(t, bson.D{{Key: "locale", Value: ok}})
	}
	c := mustCollation(t, bson.D{{Key: "locale", Value: "en"}, {Key: "strength", Value: 2}, {Key: "version", Value: "57.1"}})
	want := `{"locale": "en","caseLevel": false,"caseFirst": "off","strength": {"$numberInt":"2"},"numericOrdering": false,"alternate": "non-ignorable","maxVariable": "punct","normalization": false,"backwards": false,"version": "57.1"}`
	if got := c.Expanded().String(); got != want {
		t.Fatalf("expanded: %s", got)
	}
	if !c.Equal(mustCollation(t, bson.D{{Key: "strength", Value: int64(2)}, {Key: "locale", Value: "en"}, {Key: "caseLevel", Value: false}})) {
		t.Fatal("equal collations differ")
	}
	if c.Equal(nil) || c.Equal(mustCollation(t, bson.D{{Key: "locale", Value: "en"}})) {
		t.Fatal("different collations equal")
	}
}
