package storage

import (
	"bytes"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// mergeIndexSpecs merges a collection's index specs three ways, index by
// name, each spec a whole value as each option is in mergeOptions: a side
// that left an index as in base takes the other side's version of it
// (changed options such as hidden, prepareUnique or unique, an index
// created, an index dropped). An index both sides changed differently is
// returned as the clash, with nil specs. Ours' order is kept; indexes only
// theirs has come after, in theirs' order.
func mergeIndexSpecs(base, ours, theirs []bsoncore.Document) ([]bsoncore.Document, string) {
	if sameSpecs(ours, base) {
		return theirs, ""
	}
	if sameSpecs(theirs, base) || sameSpecs(ours, theirs) {
		return ours, ""
	}
	var out []bsoncore.Document
	seen := map[string]bool{}
	for _, s := range append(append([]bsoncore.Document(nil), ours...), theirs...) {
		name := specName(s)
		if seen[name] {
			continue
		}
		seen[name] = true
		b, o, t := specNamed(base, name), specNamed(ours, name), specNamed(theirs, name)
		v := o
		switch {
		case bytes.Equal(o, b):
			v = t
		case !bytes.Equal(t, b) && !bytes.Equal(o, t):
			return nil, name
		}
		if v != nil {
			out = append(out, v)
		}
	}
	return out, ""
}

func specName(s bsoncore.Document) string {
	return s.Lookup("name").StringValue()
}

// specNamed is the spec of the index called name, or nil.
func specNamed(specs []bsoncore.Document, name string) bsoncore.Document {
	for _, s := range specs {
		if specName(s) == name {
			return s
		}
	}
	return nil
}
