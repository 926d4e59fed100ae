package index

import (
	"crypto/sha256"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/mongoerr"
)

// ValidateID checks that v may be stored as a document's _id, with
// mongod's codes: arrays, regexes and undefined are rejected (53), as are
// $-prefixed top-level field names of an _id subdocument (52). Any length
// is accepted, as on mongod: EncodeID keeps long keys bounded.
func ValidateID(v bsoncore.Value) error {
	switch v.Type {
	case bsoncore.TypeArray:
		return mongoerr.New(mongoerr.InvalidIdField, "The '_id' value cannot be of type array")
	case bsoncore.TypeRegex:
		return mongoerr.New(mongoerr.InvalidIdField, "The '_id' value cannot be of type regex")
	case bsoncore.TypeUndefined:
		return mongoerr.New(mongoerr.InvalidIdField, "can't use a undefined for _id")
	case bsoncore.TypeEmbeddedDocument:
		return checkIDFields(v.Data)
	}
	return nil
}

// longIDKeySize is the length of a long _id key: MaxKeySize bytes of the
// encoding, then its SHA-256.
const longIDKeySize = MaxKeySize + sha256.Size

// EncodeID appends v's _id key to dst: the key of the collection's map and
// the suffix of its secondary index entries. It is EncodeKey(v) when that
// is at most MaxKeySize bytes; a longer encoding is cut to MaxKeySize bytes
// and followed by its SHA-256, so that any _id fits a Dolt tuple. No plain
// key is that long, so long keys equal only each other; against a plain
// key a long key keeps its value's order, and long keys sharing their
// first MaxKeySize bytes order by digest (docs/format/root.md).
func EncodeID(dst []byte, v bsoncore.Value) []byte {
	start := len(dst)
	dst = EncodeKey(dst, v)
	if len(dst)-start <= MaxKeySize {
		return dst
	}
	sum := sha256.Sum256(dst[start:])
	return append(dst[:start+MaxKeySize], sum[:]...)
}

func checkIDFields(doc bsoncore.Document) error {
	elems, err := doc.Elements()
	if err != nil {
		return mongoerr.New(mongoerr.InvalidBSON, "invalid _id document: %v", err)
	}
	for _, e := range elems {
		if k := e.Key(); len(k) > 0 && k[0] == '$' {
			return mongoerr.New(mongoerr.DollarPrefixedFieldName, "_id fields may not contain '$'-prefixed fields: %s is not valid for storage.", k)
		}
	}
	return nil
}
