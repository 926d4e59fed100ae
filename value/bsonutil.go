package value

import (
	"bytes"
	"encoding/binary"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Iter walks the elements of a BSON document or array body without
// allocating; bsoncore's Elements() builds a slice, which hot paths avoid.
type Iter struct{ rem []byte }

func NewIter(doc []byte) Iter {
	if len(doc) < 5 {
		return Iter{}
	}
	return Iter{rem: doc[4 : len(doc)-1]}
}

// EachField calls fn with each field of a document in order and stops at
// the first error fn returns, which it returns.
func EachField(doc []byte, fn func(k string, v bsoncore.Value) error) error {
	it := NewIter(doc)
	for {
		k, v, ok := it.Next()
		if !ok {
			return nil
		}
		if err := fn(string(k), v); err != nil {
			return err
		}
	}
}

// next returns the next key and value; ok=false at the end or on malformed input.
func (it *Iter) Next() (key []byte, v bsoncore.Value, ok bool) {
	if len(it.rem) < 2 {
		return nil, v, false
	}
	t := bsoncore.Type(it.rem[0])
	rest := it.rem[1:]
	i := bytes.IndexByte(rest, 0)
	if i < 0 {
		it.rem = nil
		return nil, v, false
	}
	key = rest[:i]
	v, r, ok := bsoncore.ReadValue(rest[i+1:], t)
	if !ok {
		it.rem = nil
		return nil, v, false
	}
	it.rem = r
	return key, v, true
}

// LookupField returns the value of the first top-level field named name.
// It is on the path of every filter, so it compares keys in place and
// skips the values before the wanted one by their sizes alone.
func LookupField(doc []byte, name string) (bsoncore.Value, bool) {
	if len(doc) < 5 {
		return bsoncore.Value{}, false
	}
	rem := doc[4 : len(doc)-1]
	for len(rem) > 1 {
		t := bsoncore.Type(rem[0])
		rest := rem[1:]
		if len(rest) > len(name) && rest[len(name)] == 0 && string(rest[:len(name)]) == name {
			v, _, ok := bsoncore.ReadValue(rest[len(name)+1:], t)
			return v, ok
		}
		i := bytes.IndexByte(rest, 0)
		if i < 0 {
			return bsoncore.Value{}, false
		}
		n, ok := Size(t, rest[i+1:])
		if !ok {
			return bsoncore.Value{}, false
		}
		rem = rest[i+1+n:]
	}
	return bsoncore.Value{}, false
}

// Size is the byte length of a value of type t at the start of b.
func Size(t bsoncore.Type, b []byte) (int, bool) {
	fixed := -1
	switch t {
	case bsoncore.TypeDouble, bsoncore.TypeDateTime, bsoncore.TypeInt64, bsoncore.TypeTimestamp:
		fixed = 8
	case bsoncore.TypeInt32:
		fixed = 4
	case bsoncore.TypeBoolean:
		fixed = 1
	case bsoncore.TypeNull, bsoncore.TypeUndefined, bsoncore.TypeMinKey, bsoncore.TypeMaxKey:
		fixed = 0
	case bsoncore.TypeObjectID:
		fixed = 12
	case bsoncore.TypeDecimal128:
		fixed = 16
	case bsoncore.TypeString, bsoncore.TypeSymbol, bsoncore.TypeJavaScript:
		return prefixedSize(b, 4)
	case bsoncore.TypeEmbeddedDocument, bsoncore.TypeArray, bsoncore.TypeCodeWithScope:
		return prefixedSize(b, 0)
	case bsoncore.TypeBinary:
		return prefixedSize(b, 5)
	}
	if fixed >= 0 {
		return fixed, len(b) >= fixed
	}
	_, r, ok := bsoncore.ReadValue(b, t)
	return len(b) - len(r), ok
}

// prefixedSize reads an int32 length at the start of b and adds extra (the
// bytes the length does not count).
func prefixedSize(b []byte, extra int) (int, bool) {
	if len(b) < 4 {
		return 0, false
	}
	n := int(int32(binary.LittleEndian.Uint32(b))) + extra
	return n, n >= 4 && n <= len(b)
}

// ArrayElem returns element idx of a BSON array body.
func ArrayElem(arr []byte, idx int) (bsoncore.Value, bool) {
	it := NewIter(arr)
	for i := 0; ; i++ {
		_, v, ok := it.Next()
		if !ok {
			return bsoncore.Value{}, false
		}
		if i == idx {
			return v, true
		}
	}
}

// ArrayLen counts the elements of a BSON array body.
func ArrayLen(arr []byte) int {
	it := NewIter(arr)
	n := 0
	for {
		if _, _, ok := it.Next(); !ok {
			return n
		}
		n++
	}
}

// ArrayValues returns the elements of a BSON array body.
func ArrayValues(arr []byte) []bsoncore.Value {
	var out []bsoncore.Value
	it := NewIter(arr)
	for {
		_, v, ok := it.Next()
		if !ok {
			return out
		}
		out = append(out, v)
	}
}

// FirstKey returns the first field name of doc ("" when empty).
func FirstKey(doc []byte) string {
	it := NewIter(doc)
	k, _, _ := it.Next()
	return string(k)
}

// IsOperatorDoc reports whether v is an embedded document whose first field
// is $-prefixed: MongoDB reads such documents as operator lists, not values.
func IsOperatorDoc(v bsoncore.Value) bool {
	if v.Type != bsoncore.TypeEmbeddedDocument {
		return false
	}
	k := FirstKey(v.Data)
	return len(k) > 0 && k[0] == '$'
}

// ParseIndex reads a path component as an array index; MongoDB only treats
// plain decimal digits as positions (no sign, no leading '+').
func ParseIndex(s string) (int, bool) {
	if s == "" || len(s) > 9 {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(s)
	return n, err == nil
}

// RawString returns the bytes of a string, symbol or code value without copying.
func RawString(v bsoncore.Value) []byte {
	if len(v.Data) < 5 {
		return nil
	}
	return v.Data[4 : len(v.Data)-1]
}

// StringLike reports whether v is a string or symbol, the types regexes match.
func StringLike(v bsoncore.Value) bool {
	return v.Type == bsoncore.TypeString || v.Type == bsoncore.TypeSymbol
}

var Null = bsoncore.Value{Type: bsoncore.TypeNull}

// Truthy reports whether v counts as true in MongoDB's option parsing
// (booleans, nonzero numbers; everything else that is not null/false).
func Truthy(v bsoncore.Value) bool {
	switch v.Type {
	case bsoncore.TypeBoolean:
		return v.Boolean()
	case bsoncore.TypeNull, bsoncore.TypeUndefined:
		return false
	case bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDouble, bsoncore.TypeDecimal128:
		return !IsZero(v)
	}
	return true
}

func IsNumber(v bsoncore.Value) bool {
	switch v.Type {
	case bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDouble, bsoncore.TypeDecimal128:
		return true
	}
	return false
}

// BuildArray encodes values as a BSON array value.
func BuildArray(vals []bsoncore.Value) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeArray, Data: bsoncore.BuildArray(nil, vals...)}
}

// Same reports byte-level identity (type and encoding), which is how
// MongoDB decides whether an update modified a field.
func Same(a, b bsoncore.Value) bool {
	return a.Type == b.Type && bytes.Equal(a.Data, b.Data)
}

func Bool(b bool) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeBoolean, Data: bsoncore.AppendBoolean(nil, b)}
}

func String(s string) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, s)}
}

func Date(ms int64) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeDateTime, Data: bsoncore.AppendDateTime(nil, ms)}
}

// emptyDoc is the empty document, shared: BSON documents are never
// written in place.
var emptyDoc = bsoncore.NewDocumentBuilder().Build()

// OrEmpty is d, or the empty document where d is nil (a reply's field
// that must be a document).
func OrEmpty(d bsoncore.Document) bsoncore.Document {
	if d == nil {
		return emptyDoc
	}
	return d
}

// DocValue is d as an embedded-document value.
func DocValue(d []byte) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: d}
}
