package fuzzbson

import (
	"fmt"
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Encode returns the input that Document decodes into doc, a value the
// official bson package marshals into a document (bson.D, bson.M, a
// struct): how seeds are written readably. It panics on what the format
// cannot express (a raw string over 255 bytes, nesting beyond maxDepth),
// which only a mistaken seed contains.
func Encode(doc any) []byte {
	raw, err := bson.Marshal(doc)
	if err != nil {
		panic(fmt.Sprintf("fuzzbson: marshal seed %v: %v", doc, err))
	}
	return encodeElements(nil, bsoncore.Document(raw), false, 0)
}

// EncodeAll is the input that Documents decodes into docs.
func EncodeAll(docs ...any) []byte {
	var out []byte
	for _, d := range docs {
		out = append(out, Encode(d)...)
	}
	return out
}

func encodeElements(dst []byte, doc bsoncore.Document, isArray bool, depth int) []byte {
	if depth >= maxDepth {
		panic("fuzzbson: seed nested deeper than the format allows")
	}
	elems, err := doc.Elements()
	if err != nil {
		panic(fmt.Sprintf("fuzzbson: seed: %v", err))
	}
	for _, e := range elems {
		v := e.Value()
		dst = append(dst, typeByte(v.Type))
		if !isArray {
			dst = encodeWord(dst, e.Key())
		}
		dst = encodeValue(dst, v, depth)
	}
	return append(dst, 0)
}

func typeByte(t bsoncore.Type) byte {
	i := slices.Index(Types, t)
	if i < 0 {
		panic(fmt.Sprintf("fuzzbson: seed has unsupported type %v", t))
	}
	return byte(i + 1)
}

// encodeWord writes s as an index into Words when it is one, else raw.
func encodeWord(dst []byte, s string) []byte {
	i := slices.Index(Words, s)
	switch {
	case i >= 0 && i < rawWord:
		return append(dst, byte(i))
	case i >= rawWord:
		j := i - rawWord
		return append(dst, wordIndex2|byte(j>>8), byte(j))
	case len(s) > 255:
		panic(fmt.Sprintf("fuzzbson: seed string of %d bytes is too long", len(s)))
	}
	return append(append(dst, rawWord, byte(len(s))), s...)
}

func encodeValue(dst []byte, v bsoncore.Value, depth int) []byte {
	switch v.Type {
	case bsoncore.TypeString, bsoncore.TypeJavaScript, bsoncore.TypeSymbol:
		return encodeWord(dst, string(v.Data[4:len(v.Data)-1]))
	case bsoncore.TypeEmbeddedDocument:
		return encodeElements(dst, v.Data, false, depth+1)
	case bsoncore.TypeArray:
		return encodeElements(dst, v.Data, true, depth+1)
	case bsoncore.TypeBoolean:
		return append(dst, v.Data[0])
	case bsoncore.TypeBinary:
		sub, data := v.Binary()
		if len(data) > 255 {
			panic("fuzzbson: seed binary too long")
		}
		return append(append(dst, sub, byte(len(data))), data...)
	case bsoncore.TypeRegex:
		pattern, options := v.Regex()
		return encodeWord(encodeWord(dst, pattern), options)
	case bsoncore.TypeDBPointer:
		ns, oid := v.DBPointer()
		return append(encodeWord(dst, ns), oid[:]...)
	case bsoncore.TypeCodeWithScope:
		code, scope := v.CodeWithScope()
		return encodeElements(encodeWord(dst, code), scope, false, depth+1)
	}
	return append(dst, v.Data...) // fixed-size payloads are copied as they are
}

// D builds a bson.D from alternating keys and values, to keep seeds short.
func D(kv ...any) bson.D {
	doc := make(bson.D, 0, len(kv)/2)
	for i := 0; i < len(kv); i += 2 {
		doc = append(doc, bson.E{Key: kv[i].(string), Value: kv[i+1]})
	}
	return doc
}
