package fuzzbson

import (
	"errors"
	"strconv"
	"testing"

	"github.com/dumbodb/dumbodb/mongoerr"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// CheckUserError fails unless err is nil or a client's mistake: a
// *mongoerr.Error with a code other than InternalError, which the server
// reserves for its own bugs. what names the call for the failure message.
func CheckUserError(t testing.TB, what string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	var me *mongoerr.Error
	if !errors.As(err, &me) {
		t.Fatalf("%s: error without a MongoDB code (the client would see InternalError): %v", what, err)
	}
	if me.Code == mongoerr.InternalError {
		t.Fatalf("%s: InternalError: %v", what, err)
	}
}

// CheckDocument fails unless doc is a document the official decoder reads
// in full, as a client reading the reply would.
func CheckDocument(t testing.TB, what string, doc bsoncore.Document) {
	t.Helper()
	var d bson.D
	if err := bson.Unmarshal(doc, &d); err != nil {
		t.Fatalf("%s: produced an invalid document %x: %v", what, []byte(doc), err)
	}
}

// Array is doc's values as an array, for arguments that must be arrays
// (pipelines, arrayFilters): the fuzz input encodes documents.
func Array(doc bsoncore.Document) bsoncore.Array {
	vals, _ := doc.Values()
	idx, arr := bsoncore.AppendArrayStart(nil)
	for i, v := range vals {
		arr = bsoncore.AppendValueElement(arr, strconv.Itoa(i), v)
	}
	arr, _ = bsoncore.AppendArrayEnd(arr, idx)
	return arr
}
