package server

import (
	"errors"

	"github.com/dumbodb/dumbodb/index"
	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/storage"
	"github.com/dumbodb/dumbodb/wire"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// toMongoErr turns any error from a command into MongoDB's error shape,
// translating storage sentinels into their MongoDB codes.
func toMongoErr(err error) *mongoerr.Error {
	switch {
	case errors.Is(err, storage.ErrNamespaceNotFound):
		return mongoerr.New(mongoerr.NamespaceNotFound, "ns does not exist")
	case errors.Is(err, storage.ErrIsView):
		return mongoerr.New(mongoerr.CommandNotSupportedOnView, "Namespace %s", err.Error())
	case errors.Is(err, storage.ErrNamespaceExists):
		return mongoerr.New(mongoerr.NamespaceExists, "collection already exists")
	case errors.Is(err, storage.ErrInvalidDatabaseName):
		return mongoerr.New(mongoerr.InvalidNamespace, "%s", err.Error())
	case errors.Is(err, storage.ErrDatabaseDiffersInCase):
		return mongoerr.New(mongoerr.Location13297, "%s", err.Error())
	case errors.Is(err, storage.ErrClosed):
		return mongoerr.New(mongoerr.InterruptedAtShutdown, "interrupted at shutdown")
	case errors.Is(err, storage.ErrOutOfDiskSpace):
		return mongoerr.New(mongoerr.OutOfDiskSpace, "%s", err.Error())
	case errors.Is(err, storage.ErrDocumentValidation):
		return mongoerr.New(mongoerr.DocumentValidationFailure, "Document failed validation")
	case errors.Is(err, storage.ErrWriteConflict):
		return mongoerr.New(mongoerr.WriteConflict, "%s", err.Error())
	}
	if me := messageError(err); me != nil {
		return me
	}
	if me := vcError(err); me != nil {
		return me
	}
	return mongoerr.As(err)
}

// messageError maps the refusals of an OP_MSG that Read accepted but
// whose sections do not fold into one command (wire.Msg.Document), with
// mongod's codes and words.
func messageError(err error) *mongoerr.Error {
	var se *wire.SequenceError
	var pe *wire.ProtocolError
	switch {
	case errors.As(err, &se) && se.InBody:
		return mongoerr.New(mongoerr.Location40433, "Duplicate field between body and document sequence %s", se.Identifier)
	case errors.As(err, &se):
		return mongoerr.New(mongoerr.Location40431, "Duplicate document sequence: %s", se.Identifier)
	case errors.As(err, &pe):
		return mongoerr.New(mongoerr.ProtocolError, "%s", pe.Msg)
	}
	return nil
}

// errorReply is {ok: 0, errmsg, code, codeName} plus any extra fields.
func errorReply(e *mongoerr.Error) bsoncore.Document {
	b := bsoncore.NewDocumentBuilder().
		AppendDouble("ok", 0).
		AppendString("errmsg", e.Msg).
		AppendInt32("code", int32(e.Code)).
		AppendString("codeName", e.Code.Name())
	els, _ := e.Info.Elements()
	for _, el := range els {
		b.AppendValue(el.Key(), el.Value())
	}
	return b.Build()
}

// writeError is one entry of a write command's writeErrors array.
type writeError struct {
	index int
	err   *mongoerr.Error
}

func (w writeError) append(dst []byte, key string) []byte {
	idx, dst := bsoncore.AppendDocumentElementStart(dst, key)
	dst = bsoncore.AppendInt32Element(dst, "index", int32(w.index))
	dst = bsoncore.AppendInt32Element(dst, "code", int32(w.err.Code))
	els, _ := w.err.Info.Elements() // keyPattern and keyValue of E11000
	for _, el := range els {
		dst = append(dst, el...)
	}
	dst = bsoncore.AppendStringElement(dst, "errmsg", w.err.Msg)
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return dst
}

// duplicateKeyError turns a storage duplicate (of _id, whose value is id,
// or of a unique index) into MongoDB's E11000 error, with keyPattern and
// keyValue. ok is false when err is no duplicate.
func duplicateKeyError(ns string, err error, id bsoncore.Value) (*mongoerr.Error, bool) {
	var dup *storage.DuplicateKeyError
	switch {
	case errors.As(err, &dup):
		return e11000("", ns, dup.Index, dup.KeyPattern, dup.KeyValue), true
	case errors.Is(err, storage.ErrDuplicateKey):
		keyPattern := bsoncore.NewDocumentBuilder().AppendInt32("_id", 1).Build()
		keyValue := bsoncore.NewDocumentBuilder().AppendValue("_id", id).Build()
		return e11000("", ns, "_id_", keyPattern, keyValue), true
	}
	return nil, false
}

// e11000 is mongod's duplicate key error; prefix names the operation when
// it is not a plain write ("Index build failed: ").
func e11000(prefix, ns, indexName string, keyPattern, keyValue bsoncore.Document) *mongoerr.Error {
	me := mongoerr.New(mongoerr.DuplicateKey, "%sE11000 duplicate key error collection: %s index: %s dup key: %s",
		prefix, ns, indexName, index.ShellDoc(keyValue))
	me.Info = bsoncore.NewDocumentBuilder().AppendDocument("keyPattern", keyPattern).
		AppendDocument("keyValue", keyValue).Build()
	return me
}

// vcErrors maps version-control (and retryable-write) sentinels to their
// codes, keeping storage's message.
var vcErrors = []struct {
	err  error
	code mongoerr.Code
}{
	{storage.ErrRevisionNotFound, mongoerr.RevisionNotFound},
	{storage.ErrBranchNotFound, mongoerr.RevisionNotFound},
	{storage.ErrTagNotFound, mongoerr.RevisionNotFound},
	{storage.ErrNothingToCommit, mongoerr.NothingToCommit},
	{storage.ErrBranchExists, mongoerr.RefExists},
	{storage.ErrTagExists, mongoerr.RefExists},
	{storage.ErrBranchUnmerged, mongoerr.BranchUnmerged},
	{storage.ErrBranchDirty, mongoerr.DirtyWorkingSet},
	{storage.ErrDeleteDefault, mongoerr.IllegalOperation},
	{storage.ErrInvalidRefName, mongoerr.BadValue},
	{storage.ErrInvalidCommitMeta, mongoerr.BadValue},
	{storage.ErrNotSingleParent, mongoerr.BadValue},
	{storage.ErrMergeInProgress, mongoerr.MergeInProgress},
	{storage.ErrNoMergeInProgress, mongoerr.NoMergeInProgress},
	{storage.ErrUnresolved, mongoerr.UnresolvedConflicts},
	{storage.ErrNotFastForward, mongoerr.NotFastForward},
	{storage.ErrRemoteNotFound, mongoerr.RemoteNotFound},
	{storage.ErrBadBundle, mongoerr.BadValue},
	{storage.ErrBundleBase, mongoerr.IllegalOperation},
	{storage.ErrUpload, mongoerr.BadValue},
	{storage.ErrBulkTarget, mongoerr.CommandNotSupportedOnView},
	{storage.ErrRemoteExists, mongoerr.RemoteExists},
	{storage.ErrNoUpstream, mongoerr.NoUpstream},
	{storage.ErrRemoteScheme, mongoerr.NotImplemented},
	{storage.ErrBadRemoteURL, mongoerr.BadValue},
	{storage.ErrBadRemoteRequest, mongoerr.BadValue},
	{storage.ErrRemoteUnreachable, mongoerr.HostUnreachable},
	{storage.ErrDatabaseExists, mongoerr.NamespaceExists},
	{storage.ErrNotDropped, mongoerr.NamespaceNotFound},
	{storage.ErrCollectionNotDropped, mongoerr.NamespaceNotFound},
	{storage.ErrConflictMissing, mongoerr.NoSuchKey},
	{storage.ErrDocumentNotFound, mongoerr.NoSuchKey},
	{storage.ErrMergeConflicts, mongoerr.MergeConflict},
	{storage.ErrOptionsConflict, mongoerr.MergeConflict},
	{storage.ErrTransactionTooOld, mongoerr.TransactionTooOld},
	{storage.ErrSnapshotTooOld, mongoerr.SnapshotTooOld},
}

func vcError(err error) *mongoerr.Error {
	for _, m := range vcErrors {
		if errors.Is(err, m.err) {
			return mongoerr.New(m.code, "%s", err.Error())
		}
	}
	return nil
}
