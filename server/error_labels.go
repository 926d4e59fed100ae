package server

import (
	"slices"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/value"
)

// Error labels tell a driver what it may do after an error: run the whole
// transaction again, retry the write, resume the change stream. They are
// decided here, for every command's error and every reply's write concern
// error, real or made by a fail point, as mongod's ErrorLabelBuilder
// (error_labels.cpp) decides them: from the error's code, the command's
// name and its session fields. A failCommand fail point that names
// errorLabels replaces them (labelsOverride).

// Error labels drivers act on.
const (
	labelTransientTransaction     = "TransientTransactionError"
	labelRetryableWrite           = "RetryableWriteError"
	labelResumableChangeStream    = "ResumableChangeStreamError"
	labelNonResumableChangeStream = "NonResumableChangeStreamError"
)

// labelled is a command's outcome with its error labels: on its error, or
// on its reply when the reply carries a write concern error.
func (r *request) labelled(reply bsoncore.Document, err error) (bsoncore.Document, error) {
	if err != nil {
		me := toMongoErr(err)
		return nil, r.withTopologyVersion(r.labelError(me, r.errorLabels(me.Code, 0)))
	}
	wc, ok := reply.Lookup("writeConcernError").DocumentOK()
	if !ok {
		return reply, nil
	}
	labels := r.finalLabels(nil, r.errorLabels(0, errorCode(wc.Lookup("code"))))
	if len(labels) == 0 {
		return reply, nil
	}
	return withField(reply, "errorLabels", labelArray(labels)), nil
}

// withTopologyVersion adds the server's topologyVersion to a
// not-primary error in the replica set, after its labels, as mongod does:
// a driver that finds it no newer than the one it knows takes the error
// as stale and keeps the server, instead of marking it unknown and
// waiting for its next check.
func (r *request) withTopologyVersion(e *mongoerr.Error) *mongoerr.Error {
	if !e.Code.In(mongoerr.NotPrimaryError) || !r.c.s.topo.replicaSet() {
		return e
	}
	out := *e
	out.Info = withField(e.Info, "topologyVersion", bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: r.c.s.topologyVersion()})
	return &out
}

// labelError is e with the labels added to those it has, or with the
// fail point's instead.
func (r *request) labelError(e *mongoerr.Error, labels []string) *mongoerr.Error {
	had := errorLabelsOf(e)
	if r.labelsOverride == nil && len(labels) == 0 {
		return e
	}
	return withErrorLabels(e, r.finalLabels(had, labels))
}

// finalLabels are the labels an error ends with: those it had and those
// decided, once each, or the fail point's alone.
func (r *request) finalLabels(had, decided []string) []string {
	if r.labelsOverride != nil {
		vals, _ := r.labelsOverride.Values()
		out := []string{}
		for _, v := range vals {
			if s, ok := v.StringValueOK(); ok {
				out = append(out, s)
			}
		}
		return out
	}
	for _, l := range decided {
		if !slices.Contains(had, l) {
			had = append(had, l)
		}
	}
	return had
}

// errorLabels are the labels mongod gives a command that failed with code
// (0: it succeeded) and whose reply carries a write concern error of
// wcCode (0: none). A transaction's transient error is not also a
// retryable write's; change-stream labels go to errors that are neither.
func (r *request) errorLabels(code, wcCode mongoerr.Code) []string {
	var labels []string
	switch {
	case r.transientTransactionError(code, wcCode):
		labels = append(labels, labelTransientTransaction)
	case r.retryableWriteError(code, wcCode):
		labels = append(labels, labelRetryableWrite)
	case r.resumableChangeStreamError(code, wcCode):
		return append(labels, labelResumableChangeStream)
	}
	if code.In(mongoerr.NonResumableChangeStreamError) {
		labels = append(labels, labelNonResumableChangeStream)
	}
	return labels
}

// transientTransactionError: a statement of a transaction (txnNumber and
// autocommit given) failed in a way that running the whole transaction
// again may cure.
func (r *request) transientTransactionError(code, wcCode mongoerr.Code) bool {
	txn, autocommit := r.sessionOptions()
	return code != 0 && txn && autocommit && transientInTransaction(code, wcCode != 0, r.commitOrAbort())
}

// transientInTransaction is mongod's isTransientTransactionError: write
// conflicts, lock timeouts, snapshot and routing errors always; for
// commitTransaction and abortTransaction only NoSuchTransaction without a
// write concern error (else the data might yet be rolled back), for the
// other statements NoSuchTransaction and the retriable codes.
func transientInTransaction(code mongoerr.Code, wcError, commitOrAbort bool) bool {
	switch code {
	case mongoerr.InternalTransactionNotSupported:
		return false // retried as a write, not as a transaction
	case mongoerr.WriteConflict, mongoerr.LockTimeout, mongoerr.PreparedTransactionInProgress,
		mongoerr.ShardCannotRefreshDueToLocksHeld, mongoerr.StaleDbVersion:
		return true
	}
	if code.In(mongoerr.SnapshotError | mongoerr.NeedRetargettingError) {
		return true
	}
	if commitOrAbort {
		return code == mongoerr.NoSuchTransaction && !wcError
	}
	return code.In(mongoerr.RetriableError) || code == mongoerr.NoSuchTransaction
}

// retryableWriteError: a retryable write (txnNumber without autocommit),
// or the commit or abort of a transaction, failed or met a write concern
// error with a retriable code.
func (r *request) retryableWriteError(code, wcCode mongoerr.Code) bool {
	txn, autocommit := r.sessionOptions()
	if !txn || (autocommit && !r.commitOrAbort()) {
		return false
	}
	return code.In(mongoerr.RetriableError) || wcCode.In(mongoerr.RetriableError)
}

// resumableChangeStreamError: an aggregate opening a change stream failed
// with a code a driver resumes after. A change stream's getMore labels
// its own errors (labelStreamError): mongod knows a getMore's stream only
// once the getMore has its cursor.
func (r *request) resumableChangeStreamError(code, wcCode mongoerr.Code) bool {
	return code != 0 && wcCode == 0 && r.name == "aggregate" && resumableStreamError(code) && r.opensChangeStream()
}

// opensChangeStream reports whether the command's pipeline begins with
// $changeStream.
func (r *request) opensChangeStream() bool {
	pipeline, ok := r.cmd.Lookup("pipeline").ArrayOK()
	if !ok {
		return false
	}
	v, err := pipeline.IndexErr(0) // an empty pipeline has none
	if err != nil {
		return false
	}
	first, ok := v.DocumentOK()
	return ok && value.FirstKey(first) == "$changeStream"
}

// sessionOptions reports whether the command gives txnNumber and
// autocommit, the session fields labels depend on.
func (r *request) sessionOptions() (txnNumber, autocommit bool) {
	_, errTxn := r.argErr("txnNumber")
	_, errAuto := r.argErr("autocommit")
	return errTxn == nil, errAuto == nil
}

// commitOrAbort reports whether the command ends a transaction.
func (r *request) commitOrAbort() bool {
	return r.name == "commitTransaction" || r.name == "abortTransaction"
}

// errorCode is the code an error document's code field holds (0: none,
// or not a 32-bit number).
func errorCode(v bsoncore.Value) mongoerr.Code {
	n, ok := value.AsInt64(v)
	if !ok || n != int64(int32(n)) {
		return 0
	}
	return mongoerr.Code(n)
}

// errorLabelsOf are the labels e carries.
func errorLabelsOf(e *mongoerr.Error) []string {
	arr, _ := e.Info.Lookup("errorLabels").ArrayOK()
	vals, _ := arr.Values()
	var out []string
	for _, v := range vals {
		if s, ok := v.StringValueOK(); ok {
			out = append(out, s)
		}
	}
	return out
}

// withErrorLabel is a copy of e with the error label added to its
// errorLabels.
func withErrorLabel(e *mongoerr.Error, label string) *mongoerr.Error {
	return withErrorLabels(e, append(errorLabelsOf(e), label))
}

// withErrorLabels is a copy of e whose errorLabels are labels (none: no
// errorLabels field).
func withErrorLabels(e *mongoerr.Error, labels []string) *mongoerr.Error {
	info := bsoncore.NewDocumentBuilder()
	els, _ := e.Info.Elements()
	for _, el := range els {
		if el.Key() != "errorLabels" {
			info.AppendValue(el.Key(), el.Value())
		}
	}
	if len(labels) > 0 {
		info.AppendValue("errorLabels", labelArray(labels))
	}
	out := *e
	out.Info = info.Build()
	return &out
}

// labelArray is labels as a BSON array value.
func labelArray(labels []string) bsoncore.Value {
	b := bsoncore.NewArrayBuilder()
	for _, l := range labels {
		b.AppendString(l)
	}
	return bsoncore.Value{Type: bsoncore.TypeArray, Data: b.Build()}
}
