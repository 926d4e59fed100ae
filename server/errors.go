package server

import (
	"errors"
	"fmt"

	"dumbodb/query/mongoerr"
	"dumbodb/storage"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// toMongoErr turns any error from a command into MongoDB's error shape,
// translating storage sentinels into their MongoDB codes.
func toMongoErr(err error) *mongoerr.Error {
	switch {
	case errors.Is(err, storage.ErrNamespaceNotFound):
		return mongoerr.New(mongoerr.NamespaceNotFound, "ns does not exist")
	case errors.Is(err, storage.ErrNamespaceExists):
		return mongoerr.New(mongoerr.NamespaceExists, "collection already exists")
	case errors.Is(err, storage.ErrDatabaseDiffersInCase):
		return mongoerr.New(mongoerr.Code(13297), "%s", err.Error())
	case errors.Is(err, storage.ErrKeyTooLong):
		return mongoerr.New(mongoerr.Code(17280), "_id value is too long to store (the encoded key may be at most %d bytes)", maxKeySize)
	case errors.Is(err, storage.ErrClosed):
		return mongoerr.New(mongoerr.Code(11600), "interrupted at shutdown")
	}
	return mongoerr.As(err)
}

// errorReply is {ok: 0, errmsg, code, codeName}.
func errorReply(e *mongoerr.Error) bsoncore.Document {
	return bsoncore.NewDocumentBuilder().
		AppendDouble("ok", 0).
		AppendString("errmsg", e.Msg).
		AppendInt32("code", int32(e.Code)).
		AppendString("codeName", e.Code.Name()).
		Build()
}

// writeError is one entry of a write command's writeErrors array.
type writeError struct {
	index int
	err   *mongoerr.Error
	// keyPattern/keyValue accompany duplicate key errors.
	keyPattern, keyValue bsoncore.Document
}

func (w writeError) append(dst []byte, key string) []byte {
	idx, dst := bsoncore.AppendDocumentElementStart(dst, key)
	dst = bsoncore.AppendInt32Element(dst, "index", int32(w.index))
	dst = bsoncore.AppendInt32Element(dst, "code", int32(w.err.Code))
	if w.keyPattern != nil {
		dst = bsoncore.AppendDocumentElement(dst, "keyPattern", w.keyPattern)
		dst = bsoncore.AppendDocumentElement(dst, "keyValue", w.keyValue)
	}
	dst = bsoncore.AppendStringElement(dst, "errmsg", w.err.Msg)
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return dst
}

// duplicateIDError is MongoDB's E11000 for the _id index.
func duplicateIDError(ns string, id bsoncore.Value) (*mongoerr.Error, bsoncore.Document, bsoncore.Document) {
	keyValue := bsoncore.NewDocumentBuilder().AppendValue("_id", id).Build()
	keyPattern := bsoncore.NewDocumentBuilder().AppendInt32("_id", 1).Build()
	msg := fmt.Sprintf("E11000 duplicate key error collection: %s index: _id_ dup key: { _id: %s }", ns, shellString(id))
	return mongoerr.New(mongoerr.DuplicateKey, "%s", msg), keyPattern, keyValue
}
