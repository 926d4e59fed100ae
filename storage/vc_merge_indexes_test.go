package storage

import (
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// TestMergeIndexSpecs: index specs merge index by index; a side that left
// an index alone takes the other side's change, creation or drop, and an
// index changed differently on both sides is the clash.
func TestMergeIndexSpecs(t *testing.T) {
	spec := func(name string, opts ...string) bsoncore.Document {
		b := bsoncore.NewDocumentBuilder().AppendInt32("v", 2).AppendString("name", name)
		for _, o := range opts {
			b.AppendBoolean(o, true)
		}
		return b.Build()
	}
	names := func(specs []bsoncore.Document) string {
		var out []string
		for _, s := range specs {
			n := specName(s)
			for _, o := range []string{"hidden", "prepareUnique", "unique"} {
				if s.Lookup(o).Type != 0 {
					n += "+" + o
				}
			}
			out = append(out, n)
		}
		return strings.Join(out, " ")
	}
	a, b, c := spec("a"), spec("b"), spec("c")
	for _, tc := range []struct {
		what               string
		base, ours, theirs []bsoncore.Document
		want, clash        string
	}{
		{"theirs only", []bsoncore.Document{a, b}, []bsoncore.Document{a, b}, []bsoncore.Document{spec("a", "prepareUnique"), b}, "a+prepareUnique b", ""},
		{"ours only", []bsoncore.Document{a}, []bsoncore.Document{spec("a", "unique")}, []bsoncore.Document{a}, "a+unique", ""},
		{"one index each", []bsoncore.Document{a, b}, []bsoncore.Document{spec("a", "hidden"), b}, []bsoncore.Document{a, spec("b", "unique")}, "a+hidden b+unique", ""},
		{"created and dropped", []bsoncore.Document{a, b}, []bsoncore.Document{a, b, c}, []bsoncore.Document{a}, "a c", ""},
		{"created by theirs", []bsoncore.Document{a}, []bsoncore.Document{a, b}, []bsoncore.Document{a, c}, "a b c", ""},
		{"the same change", []bsoncore.Document{a, b}, []bsoncore.Document{spec("a", "unique"), c}, []bsoncore.Document{spec("a", "unique"), b}, "a+unique c", ""},
		{"different changes", []bsoncore.Document{a}, []bsoncore.Document{spec("a", "hidden")}, []bsoncore.Document{spec("a", "unique")}, "", "a"},
		{"dropped and changed", []bsoncore.Document{a, b}, []bsoncore.Document{b}, []bsoncore.Document{spec("a", "prepareUnique"), b}, "", "a"},
	} {
		got, clash := mergeIndexSpecs(tc.base, tc.ours, tc.theirs)
		if names(got) != tc.want || clash != tc.clash {
			t.Errorf("%s: %q (clash %q), want %q (clash %q)", tc.what, names(got), clash, tc.want, tc.clash)
		}
	}
}
