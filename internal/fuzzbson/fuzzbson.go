// Package fuzzbson turns fuzz input into BSON, so that fuzz targets of
// every package spend their time past the parsers' first length check:
// any byte string decodes into a well-formed document, and Encode writes
// a document (a readable bson.D seed) as the bytes that decode back to it.
//
// The byte format is a tree of elements. An element is a type byte (0 ends
// the enclosing document or array; other values are folded onto the BSON
// types), a key, and the value's payload. Keys and strings are usually
// words: an index into Words, which holds field names, operators and
// command arguments, so that mutations swap one operator for another
// instead of producing noise. Words is append-only: checked-in corpus
// entries name words by index.
package fuzzbson

import (
	"slices"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// maxDepth bounds nesting: deeper documents and arrays decode empty.
// It stays well below mongod's 100-level limit for stored documents and
// the wire's 200, so generated commands pass framing.
const maxDepth = 20

// rawWord marks a key or string that follows as length-prefixed bytes
// rather than as an index into Words; wordIndex2 marks a two-byte index.
const (
	rawWord    = 0x7f
	wordIndex2 = 0x80
)

// Types are all the BSON types a document can hold (the deprecated ones
// too), in BSON's own order: type bytes 1..len(Types) of fuzz input map to
// them.
var Types = []bsoncore.Type{
	bsoncore.TypeDouble, bsoncore.TypeString, bsoncore.TypeEmbeddedDocument, bsoncore.TypeArray,
	bsoncore.TypeBinary, bsoncore.TypeUndefined, bsoncore.TypeObjectID, bsoncore.TypeBoolean,
	bsoncore.TypeDateTime, bsoncore.TypeNull, bsoncore.TypeRegex, bsoncore.TypeDBPointer,
	bsoncore.TypeJavaScript, bsoncore.TypeSymbol, bsoncore.TypeCodeWithScope, bsoncore.TypeInt32,
	bsoncore.TypeTimestamp, bsoncore.TypeInt64, bsoncore.TypeDecimal128, bsoncore.TypeMinKey,
	bsoncore.TypeMaxKey,
}

// Document decodes fuzz input into a document. Input that runs out ends
// every open document, so all input is valid.
func Document(data []byte) bsoncore.Document { return Documents(data, 1)[0] }

// Documents decodes fuzz input into n documents, one after another.
func Documents(data []byte, n int) []bsoncore.Document {
	d := &decoder{data: data}
	docs := make([]bsoncore.Document, n)
	for i := range docs {
		docs[i] = d.document(0)
	}
	return docs
}

type decoder struct{ data []byte }

func (d *decoder) byte() byte {
	if len(d.data) == 0 {
		return 0
	}
	b := d.data[0]
	d.data = d.data[1:]
	return b
}

// bytes returns the next n bytes, zero-padded once the input runs out.
func (d *decoder) bytes(n int) []byte {
	out := make([]byte, n)
	copy(out, d.data)
	d.data = d.data[min(n, len(d.data)):]
	return out
}

func (d *decoder) word() string {
	b := d.byte()
	switch {
	case b == rawWord:
		return string(d.bytes(int(d.byte())))
	case b&wordIndex2 != 0:
		i := int(b&^wordIndex2)<<8 | int(d.byte())
		return Words[(rawWord+i)%len(Words)]
	default:
		return Words[int(b)%len(Words)]
	}
}

// key is a word without NUL, which BSON keys cannot hold.
func (d *decoder) key() string {
	return string(slices.DeleteFunc([]byte(d.word()), func(c byte) bool { return c == 0 }))
}

func (d *decoder) document(depth int) bsoncore.Document {
	idx, doc := bsoncore.AppendDocumentStart(nil)
	doc = d.elements(doc, depth, false)
	doc, _ = bsoncore.AppendDocumentEnd(doc, idx)
	return doc
}

func (d *decoder) array(depth int) bsoncore.Array {
	idx, arr := bsoncore.AppendArrayStart(nil)
	arr = d.elements(arr, depth, true)
	arr, _ = bsoncore.AppendArrayEnd(arr, idx)
	return arr
}

// elements appends elements until a 0 type byte or the end of input;
// array elements are keyed by position and carry no key in the input.
func (d *decoder) elements(dst []byte, depth int, isArray bool) []byte {
	if depth >= maxDepth {
		return dst
	}
	for i := 0; ; i++ {
		tb := d.byte()
		if tb == 0 {
			return dst
		}
		t := Types[int(tb-1)%len(Types)]
		key := strconv.Itoa(i)
		if !isArray {
			key = d.key()
		}
		dst = bsoncore.AppendHeader(dst, t, key)
		dst = d.value(dst, t, depth)
	}
}

// value appends the payload of a value of type t.
func (d *decoder) value(dst []byte, t bsoncore.Type, depth int) []byte {
	switch t {
	case bsoncore.TypeDouble, bsoncore.TypeDateTime, bsoncore.TypeTimestamp, bsoncore.TypeInt64:
		return append(dst, d.bytes(8)...)
	case bsoncore.TypeInt32:
		return append(dst, d.bytes(4)...)
	case bsoncore.TypeDecimal128:
		return append(dst, d.bytes(16)...)
	case bsoncore.TypeObjectID:
		return append(dst, d.bytes(12)...)
	case bsoncore.TypeBoolean:
		return bsoncore.AppendBoolean(dst, d.byte()&1 == 1)
	case bsoncore.TypeString, bsoncore.TypeJavaScript, bsoncore.TypeSymbol:
		return bsoncore.AppendString(dst, d.word())
	case bsoncore.TypeEmbeddedDocument:
		return append(dst, d.document(depth+1)...)
	case bsoncore.TypeArray:
		return append(dst, d.array(depth+1)...)
	case bsoncore.TypeBinary:
		sub := d.byte()
		return bsoncore.AppendBinary(dst, sub, d.bytes(int(d.byte())))
	case bsoncore.TypeRegex:
		return bsoncore.AppendRegex(dst, d.key(), d.key())
	case bsoncore.TypeDBPointer:
		return append(bsoncore.AppendString(dst, d.word()), d.bytes(12)...)
	case bsoncore.TypeCodeWithScope:
		return bsoncore.AppendCodeWithScope(dst, d.word(), d.document(depth+1))
	}
	return dst // undefined, null, minKey, maxKey have no payload
}
