package index

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/mongoerr"
)

// ValidateID checks that v may be stored as a document's _id, with
// mongod's codes: arrays, regexes and undefined are rejected (53), as are
// $-prefixed top-level field names of an _id subdocument (52), and keys
// whose encoding exceeds MaxKeySize.
func ValidateID(v bsoncore.Value) error {
	switch v.Type {
	case bsoncore.TypeArray:
		return mongoerr.New(mongoerr.InvalidIdField, "The '_id' value cannot be of type array")
	case bsoncore.TypeRegex:
		return mongoerr.New(mongoerr.InvalidIdField, "The '_id' value cannot be of type regex")
	case bsoncore.TypeUndefined:
		return mongoerr.New(mongoerr.InvalidIdField, "can't use a undefined for _id")
	case bsoncore.TypeEmbeddedDocument:
		if err := checkIDFields(v.Data); err != nil {
			return err
		}
	case bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDouble, bsoncore.TypeDecimal128,
		bsoncore.TypeObjectID, bsoncore.TypeBoolean, bsoncore.TypeDateTime, bsoncore.TypeTimestamp,
		bsoncore.TypeNull, bsoncore.TypeMinKey, bsoncore.TypeMaxKey:
		return nil // a fixed size, far below MaxKeySize: no key to encode
	}
	if n := len(EncodeKey(nil, v)); n > MaxKeySize {
		return mongoerr.New(mongoerr.InvalidIdField, "_id key is too large: %d bytes exceeds the %d byte limit", n, MaxKeySize)
	}
	return nil
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
