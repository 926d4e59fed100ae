package index

import (
	"sort"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/value"
)

// MultikeyMarker is the key of the one entry an index map holds once any
// document made the index multikey. It sorts below every real entry (class
// bytes start at 1; descending fields complement them to at most 0xFE).
var MultikeyMarker = []byte{0}

// AfterPrefix is appended to a key prefix to form a bound above every key
// that extends it: no class byte, plain or complemented, is 0xFF.
const AfterPrefix = 0xFF

var (
	nullValue      = bsoncore.Value{Type: bsoncore.TypeNull}
	undefinedValue = bsoncore.Value{Type: bsoncore.TypeUndefined}
)

// fieldValues is what one key field of a document contributes.
type fieldValues struct {
	vals    []bsoncore.Value
	arrays  []string // array paths expanded on the way
	present bool     // the path reached a value (sparse indexes)
}

// Keys returns the field part of the index entries doc needs (nil when the
// index leaves doc out: sparse, partial) and whether doc makes the index
// multikey. Entries are the encoded field values, descending fields with
// their bytes complemented, concatenated; the caller appends the _id key.
func (s *Spec) Keys(doc bsoncore.Document) ([][]byte, bool, error) {
	if s.Text != nil {
		return s.textKeys(doc)
	}
	if _, ok := s.Wildcard(); ok {
		return s.wildcardKeys(doc)
	}
	if s.partial != nil && !s.partial.Match(doc) {
		return nil, false, nil
	}
	per := make([]fieldValues, len(s.Fields))
	parts := s.fieldParts()
	present, shapes := false, false
	for i, f := range s.Fields {
		if f.Geo != "" {
			vals, nonPoint, err := s.geoKeyValues(doc, f)
			if err != nil || len(vals) == 0 {
				return nil, false, err // no geometry: no entry
			}
			// Several cells are not an array: they may go with an
			// array in another field, as on mongod.
			per[i] = fieldValues{vals: vals, present: true}
			shapes = nonPoint || len(vals) > 1
			continue
		}
		per[i] = collectParts(doc, parts[i])
		present = present || per[i].present
	}
	if s.Sparse && !present {
		return nil, false, nil
	}
	multikey, err := checkParallel(per)
	if err != nil {
		return nil, false, err
	}
	keys := [][]byte{nil}
	for i, f := range s.Fields {
		vals := per[i].vals
		if f.Hashed {
			hv, err := hashedKeyValue(f.Path, per[i])
			if err != nil {
				return nil, false, err
			}
			vals = []bsoncore.Value{hv}
		}
		keys = extend(keys, vals, f.Desc, s.coll)
	}
	for _, k := range keys {
		if len(k) > MaxKeySize {
			return nil, false, mongoerr.New(codeKeyTooLong, "key too large to index: %d bytes exceeds the %d byte limit (index %s)", len(k), MaxKeySize, s.Name)
		}
	}
	// A geo index holding a line or polygon is multikey whatever its
	// number of cells: the planner then also looks for cells above the
	// query's (see geo's cells.go).
	return dedupe(keys), multikey || shapes, nil
}

// checkParallel refuses documents where two key fields expand different
// arrays, as mongod does, and reports whether any array was expanded.
func checkParallel(per []fieldValues) (bool, error) {
	first := ""
	for _, p := range per {
		for _, a := range p.arrays {
			switch {
			case first == "":
				first = a
			case !strings.HasPrefix(a, first) && !strings.HasPrefix(first, a):
				return true, mongoerr.New(codeCannotIndexParallel, "cannot index parallel arrays [%s] [%s]", a, first)
			}
		}
	}
	return first != "", nil
}

// extend appends every value of one field to every key so far, strings
// by their collation keys under a collation c.
func extend(keys [][]byte, vals []bsoncore.Value, desc bool, c *value.Collation) [][]byte {
	out := make([][]byte, 0, len(keys)*len(vals))
	for _, k := range keys {
		for _, v := range vals {
			n := len(k)
			key := EncodeKeyCollated(append(make([]byte, 0, n+len(v.Data)+8), k...), v, c)
			if desc {
				complement(key[n:])
			}
			out = append(out, key)
		}
	}
	return out
}

func complement(b []byte) {
	for i := range b {
		b[i] = ^b[i]
	}
}

// Complement returns b with every byte inverted: the encoding of a
// descending key field.
func Complement(b []byte) []byte {
	out := append([]byte(nil), b...)
	complement(out)
	return out
}

func dedupe(keys [][]byte) [][]byte {
	if len(keys) < 2 {
		return keys
	}
	sort.Slice(keys, func(i, j int) bool { return string(keys[i]) < string(keys[j]) })
	out := keys[:0]
	for i, k := range keys {
		if i == 0 || string(k) != string(keys[i-1]) {
			out = append(out, k)
		}
	}
	return out
}

// collect gathers the values a dotted path reaches for indexing: arrays on
// the way are traversed element by element, an array at the end gives its
// elements (an empty one: undefined), and a path that stops short gives
// null.
func collect(doc bsoncore.Document, path string) fieldValues {
	return collectParts(doc, strings.Split(path, "."))
}

// collectParts is collect of a path already split at its dots.
func collectParts(doc bsoncore.Document, parts []string) fieldValues {
	var fv fieldValues
	walk(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: doc}, parts, "", &fv)
	if len(fv.vals) == 0 {
		fv.vals = []bsoncore.Value{nullValue}
	}
	return fv
}

func walk(cur bsoncore.Value, parts []string, at string, fv *fieldValues) {
	if len(parts) == 0 {
		fv.present = true
		if cur.Type != bsoncore.TypeArray {
			fv.vals = append(fv.vals, cur)
			return
		}
		fv.arrays = append(fv.arrays, at)
		vals, _ := bsoncore.Array(cur.Data).Values()
		if len(vals) == 0 {
			fv.vals = append(fv.vals, undefinedValue)
		}
		fv.vals = append(fv.vals, vals...)
		return
	}
	switch cur.Type {
	case bsoncore.TypeEmbeddedDocument:
		v, err := bsoncore.Document(cur.Data).LookupErr(parts[0])
		if err != nil {
			fv.vals = append(fv.vals, nullValue)
			return
		}
		walk(v, parts[1:], join(at, parts[0]), fv)
	case bsoncore.TypeArray:
		fv.arrays = append(fv.arrays, at)
		vals, _ := bsoncore.Array(cur.Data).Values()
		for _, e := range vals {
			if e.Type == bsoncore.TypeEmbeddedDocument {
				walk(e, parts, at, fv)
			} else {
				fv.vals = append(fv.vals, nullValue)
			}
		}
		if len(vals) == 0 {
			fv.vals = append(fv.vals, nullValue)
		}
	default:
		fv.vals = append(fv.vals, nullValue)
	}
}

func join(at, part string) string {
	if at == "" {
		return part
	}
	return at + "." + part
}

// HasNumericComponent reports a path with a component that could index an
// array position; the planner leaves such indexes alone, since matching
// and key generation treat positions differently.
func HasNumericComponent(path string) bool {
	for _, p := range strings.Split(path, ".") {
		if p != "" && strings.Trim(p, "0123456789") == "" {
			return true
		}
	}
	return false
}
