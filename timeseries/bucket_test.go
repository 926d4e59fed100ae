package timeseries

import (
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// TestMergeMeasurements: a measurement the base has B times, ours O and
// theirs T times is kept max(0, O+T-B) times.
func TestMergeMeasurements(t *testing.T) {
	m := func(s string) []bsoncore.Document {
		var out []bsoncore.Document
		for _, f := range strings.Fields(s) {
			out = append(out, bsoncore.NewDocumentBuilder().AppendString("m", f).Build())
		}
		return out
	}
	cases := []struct{ base, ours, theirs, want string }{
		{"a b", "a b c", "a b d", "a b c d"}, // both add
		{"a b", "a", "a b d", "a d"},         // ours deletes, theirs adds
		{"a b", "a b", "b", "b"},             // theirs deletes
		{"a a", "a", "a", ""},                // each deletes one copy
		{"a", "a a", "a", "a a"},             // ours adds a copy
		{"", "a", "a", "a a"},                // both add the same
		{"a", "", "", ""},                    // both delete
	}
	for _, c := range cases {
		base := countOf(m(c.base))
		var got []string
		for _, d := range mergeMeasurements(base, m(c.ours), m(c.theirs)) {
			got = append(got, d.Lookup("m").StringValue())
		}
		if g := strings.Join(got, " "); g != c.want {
			t.Errorf("base %q ours %q theirs %q: %q, want %q", c.base, c.ours, c.theirs, g, c.want)
		}
	}
}

// TestMergeMeasurementsFieldOrder: a measurement whose fields a rewrite of
// its bucket reordered is the same measurement: deleted on the other side,
// it stays deleted.
func TestMergeMeasurementsFieldOrder(t *testing.T) {
	ab := bsoncore.NewDocumentBuilder().AppendInt32("a", 1).AppendInt32("b", 2).Build()
	ba := bsoncore.NewDocumentBuilder().AppendInt32("b", 2).AppendInt32("a", 1).Build()
	if got := mergeMeasurements(countOf([]bsoncore.Document{ab}), []bsoncore.Document{ba}, nil); len(got) != 0 {
		t.Fatalf("kept %v", got)
	}
}
