package server

import (
	"fmt"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// newObjectID is the _id MongoDB generates for documents without one.
func newObjectID() bson.ObjectID { return bson.NewObjectID() }

// docArray appends docs as an array element.
func appendDocArray(dst []byte, key string, docs []bsoncore.Document) []byte {
	idx, dst := bsoncore.AppendArrayElementStart(dst, key)
	for i, d := range docs {
		dst = bsoncore.AppendDocumentElement(dst, strconv.Itoa(i), d)
	}
	dst, _ = bsoncore.AppendArrayEnd(dst, idx)
	return dst
}

// uuidText spells a UUID as mongod prints one: lowercase hexadecimal in
// groups of 8-4-4-4-12.
func uuidText(u []byte) string {
	return fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}
