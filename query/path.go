package query

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// visitKind tells a predicate how a value was reached, because some
// operators ($size, $elemMatch) only look at whole arrays and null
// equality also matches missing fields.
type visitKind uint8

const (
	kindMissing visitKind = iota // the path ends at a missing field
	kindValue                    // the value stored at the path
	kindElem                     // an element of an array stored at the path
)

// visitFn receives each value a path reaches; returning true stops the walk.
type visitFn func(v bsoncore.Value, k visitKind) bool

// splitPath splits a dotted path into components.
func splitPath(path string) []string { return strings.Split(path, ".") }

// LookupPath returns the value at a dotted path. Numeric components index
// arrays, but arrays are not otherwise traversed.
func LookupPath(doc bsoncore.Document, path string) (bsoncore.Value, bool) {
	v := bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: doc}
	for _, p := range splitPath(path) {
		var ok bool
		switch v.Type {
		case bsoncore.TypeEmbeddedDocument:
			v, ok = lookupField(v.Data, p)
		case bsoncore.TypeArray:
			if i, isIdx := parseIndex(p); isIdx {
				v, ok = arrayElem(v.Data, i)
			}
		}
		if !ok {
			return bsoncore.Value{}, false
		}
	}
	return v, true
}

// walkPath visits what a path reaches in doc, following MongoDB's matching
// rules: a component applied to an array is applied to every document
// element (and, when numeric, also selects that position); a value at the
// end of the path is visited whole and, if it is an array, per element.
// Nested arrays are not flattened. It returns true when fn stopped the walk.
func walkPath(doc []byte, parts []string, fn visitFn) bool {
	v, ok := lookupField(doc, parts[0])
	if !ok {
		return fn(bsoncore.Value{}, kindMissing)
	}
	return walkValue(v, parts[1:], fn)
}

func walkValue(v bsoncore.Value, rest []string, fn visitFn) bool {
	if len(rest) == 0 {
		if fn(v, kindValue) {
			return true
		}
		if v.Type != bsoncore.TypeArray {
			return false
		}
		it := newIter(v.Data)
		for {
			_, e, ok := it.next()
			if !ok {
				return false
			}
			if fn(e, kindElem) {
				return true
			}
		}
	}
	switch v.Type {
	case bsoncore.TypeEmbeddedDocument:
		return walkPath(v.Data, rest, fn)
	case bsoncore.TypeArray:
		return walkArray(v.Data, rest, fn)
	}
	return fn(bsoncore.Value{}, kindMissing)
}

// walkArray applies rest to each element. A numeric first component selects
// that position instead of being looked up as a field of that element.
func walkArray(arr []byte, rest []string, fn visitFn) bool {
	pos, isIdx := parseIndex(rest[0])
	if !isIdx {
		pos = -1
	}
	it := newIter(arr)
	for i := 0; ; i++ {
		_, e, ok := it.next()
		if !ok {
			return false
		}
		if i == pos {
			if walkValue(e, rest[1:], fn) {
				return true
			}
			continue
		}
		if e.Type == bsoncore.TypeEmbeddedDocument && walkPath(e.Data, rest, fn) {
			return true
		}
	}
}
