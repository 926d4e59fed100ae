package value

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/mongoerr"
)

// VisitKind tells a predicate how a value was reached, because some
// operators ($size, $elemMatch) only look at whole arrays and null
// equality also matches missing fields.
type VisitKind uint8

const (
	KindMissing VisitKind = iota // the path ends at a missing field
	KindValue                    // the value stored at the path
	KindElem                     // an element of an array stored at the path
)

// VisitFn receives each value a path reaches; returning true stops the walk.
type VisitFn func(v bsoncore.Value, k VisitKind) bool

// SplitPath splits a dotted path into components.
func SplitPath(path string) []string { return strings.Split(path, ".") }

// LookupPath returns the value at a dotted path. Numeric components index
// arrays, but arrays are not otherwise traversed.
func LookupPath(doc bsoncore.Document, path string) (bsoncore.Value, bool) {
	v := bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: doc}
	for _, p := range SplitPath(path) {
		var ok bool
		switch v.Type {
		case bsoncore.TypeEmbeddedDocument:
			v, ok = LookupField(v.Data, p)
		case bsoncore.TypeArray:
			if i, isIdx := ParseIndex(p); isIdx {
				v, ok = ArrayElem(v.Data, i)
			}
		}
		if !ok {
			return bsoncore.Value{}, false
		}
	}
	return v, true
}

// WalkPath visits what a path reaches in doc, following MongoDB's matching
// rules: a component applied to an array is applied to every document
// element (and, when numeric, also selects that position); a value at the
// end of the path is visited whole and, if it is an array, per element.
// Nested arrays are not flattened. It returns true when fn stopped the walk.
func WalkPath(doc []byte, parts []string, fn VisitFn) bool {
	v, ok := LookupField(doc, parts[0])
	if !ok {
		return fn(bsoncore.Value{}, KindMissing)
	}
	return WalkValue(v, parts[1:], fn)
}

func WalkValue(v bsoncore.Value, rest []string, fn VisitFn) bool {
	if len(rest) == 0 {
		if fn(v, KindValue) {
			return true
		}
		if v.Type != bsoncore.TypeArray {
			return false
		}
		it := NewIter(v.Data)
		for {
			_, e, ok := it.Next()
			if !ok {
				return false
			}
			if fn(e, KindElem) {
				return true
			}
		}
	}
	switch v.Type {
	case bsoncore.TypeEmbeddedDocument:
		return WalkPath(v.Data, rest, fn)
	case bsoncore.TypeArray:
		return walkArray(v.Data, rest, fn)
	}
	return fn(bsoncore.Value{}, KindMissing)
}

// walkArray applies rest to each element. A numeric first component selects
// that position instead of being looked up as a field of that element.
func walkArray(arr []byte, rest []string, fn VisitFn) bool {
	pos, isIdx := ParseIndex(rest[0])
	if !isIdx {
		pos = -1
	}
	it := NewIter(arr)
	for i := 0; ; i++ {
		_, e, ok := it.Next()
		if !ok {
			return false
		}
		if i == pos {
			if WalkValue(e, rest[1:], fn) {
				return true
			}
			continue
		}
		if e.Type == bsoncore.TypeEmbeddedDocument && WalkPath(e.Data, rest, fn) {
			return true
		}
	}
}

// CheckFieldPath returns the error mongod's FieldPath gives for a field
// path it refuses, in mongod's order: an empty path, a trailing '.',
// then each component as CheckFieldName.
func CheckFieldPath(path string) error {
	if path == "" {
		return mongoerr.New(mongoerr.Location40352, "FieldPath cannot be constructed with empty string")
	}
	if strings.HasSuffix(path, ".") {
		return mongoerr.New(mongoerr.Location40353, "FieldPath must not end with a '.'.")
	}
	for _, p := range SplitPath(path) {
		if err := CheckFieldName(p); err != nil {
			return err
		}
	}
	return nil
}

// CheckFieldName returns the error mongod gives for one field name of a
// path or of an expression object, in mongod's order: empty, starting
// with '$' (other than the fields of a DBRef), holding a NUL (only a name
// read from a string can) or a '.'.
func CheckFieldName(name string) error {
	switch {
	case name == "":
		return mongoerr.New(mongoerr.Location15998, "FieldPath field names may not be empty strings.")
	case name[0] == '$' && name != "$id" && name != "$ref" && name != "$db":
		return mongoerr.New(mongoerr.Location16410, "FieldPath field names may not start with '$'. Consider using $getField or $setField.")
	case strings.IndexByte(name, 0) >= 0:
		return CheckNoNul(name)
	case strings.Contains(name, "."):
		return mongoerr.New(mongoerr.Location16412, "FieldPath field names may not contain '.'. Consider using $getField or $setField.")
	}
	return nil
}

// CheckNoNul refuses a field name or path taken from a string value that
// holds a NUL, with the error mongod's FieldPath gives. A string may hold
// one; a BSON key cannot, since a NUL ends it.
func CheckNoNul(path string) error {
	if strings.IndexByte(path, 0) >= 0 {
		return mongoerr.New(mongoerr.Location16411, "FieldPath field names may not contain '\\0'.")
	}
	return nil
}
