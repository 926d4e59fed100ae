package server

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/storage"
)

// Retryable writes (docs/design/transactions.md): a write command with
// lsid and txnNumber runs each statement at most once; a retry answers the
// statements that ran from their recorded outcomes.

// retryableWrite is a write command's session, txnNumber and statement ids.
type retryableWrite struct {
	session storage.SessionKey
	txn     int64
	first   int32   // stmtId, or 0: the first statement's id
	ids     []int32 // stmtIds, when given: one per statement
}

// stmtID is the id of the i-th statement of the command.
func (w *retryableWrite) stmtID(i int) int32 {
	if i < len(w.ids) {
		return w.ids[i]
	}
	return w.first + int32(i)
}

// sessionFields reads lsid, txnNumber and the transaction fields of a
// command. Both a standalone and a replica set have sessions (a cursor
// belongs to the one it was opened in); a standalone refuses txnNumber
// as mongod's does; a replica set takes it on a retryable write and
// refuses what it does not implement.
func (r *request) sessionFields() error {
	session, hasSession, err := r.requestSession()
	if err != nil {
		return err
	}
	if !r.c.s.topo.replicaSet() {
		return refuseTransactions(r.cmd)
	}
	txn, hasTxn, err := r.txnNumberArg()
	if err != nil {
		return err
	}
	_, errAuto := r.argErr("autocommit")
	_, errStart := r.argErr("startTransaction")
	switch {
	case !hasTxn && (errAuto == nil || errStart == nil):
		return mongoerr.New(mongoerr.InvalidOptions, "txnNumber must be given with autocommit and startTransaction")
	case !hasTxn:
		return nil
	case !hasSession:
		return mongoerr.New(mongoerr.IllegalOperation, "Transaction number requires a session ID to also be specified")
	case errAuto == nil:
		r.endTxnStatement, err = r.joinTransaction(session, txn)
		return err
	case errStart == nil:
		return mongoerr.New(mongoerr.InvalidOptions, "startTransaction needs autocommit: false")
	case !r.spec.retryableWrite:
		return mongoerr.New(mongoerr.Location50768, "txnNumber may only be provided for multi-document transactions and retryable write commands. autocommit:false was not provided, and %s is not a retryable write command.", r.name)
	}
	r.retry = &retryableWrite{session: session, txn: txn}
	return r.parseStatementIDs()
}

// parseStatementIDs reads stmtId or stmtIds (sent by routers; drivers
// leave them out and statements count from 0).
func (r *request) parseStatementIDs() error {
	if v, err := r.argErr("stmtId"); err == nil {
		id, ok := v.Int32OK()
		if !ok {
			return typeMismatch(r.name, "stmtId", v, "int")
		}
		r.retry.first = id
	}
	v, err := r.argErr("stmtIds")
	if err != nil {
		return nil
	}
	arr, ok := v.ArrayOK()
	if !ok {
		return typeMismatch(r.name, "stmtIds", v, "array")
	}
	vals, _ := arr.Values()
	for i, e := range vals {
		id, ok := e.Int32OK()
		if !ok {
			return typeMismatch(r.name, "stmtIds."+itoa(int64(i)), e, "int")
		}
		r.retry.ids = append(r.retry.ids, id)
	}
	return nil
}

// retried returns the recorded outcome of statement i if an earlier try
// of this retryable write ran it.
func (r *request) retried(tx *storage.Tx, i int) (bsoncore.Document, bool, error) {
	if r.retry == nil {
		return nil, false, nil
	}
	return tx.RetryOutcome(r.retry.session, r.retry.txn, r.retry.stmtID(i))
}

// recordOutcome notes statement i's outcome when it changed something
// (the transaction had changes before it: changesBefore).
func (r *request) recordOutcome(tx *storage.Tx, i, changesBefore int, outcome bsoncore.Document) {
	if r.retry != nil && tx.Changes() > changesBefore {
		tx.RecordOutcome(r.retry.session, r.retry.txn, r.retry.stmtID(i), outcome)
	}
}

// refuseMultiRetry is mongod's refusal of a retryable write that may
// change many documents, which a retry could not answer exactly.
func (r *request) refuseMultiRetry(option string) error {
	if r.retry == nil {
		return nil
	}
	return mongoerr.New(mongoerr.InvalidOptions, "Cannot use (or request) retryable writes with %s", option)
}

// batchOutcome is one statement's share of an insert, update or delete
// reply (docs/format/wal.md, "r"): n, nModified and the upserted _id.
func batchOutcome(n, modified int64, upserted bsoncore.Value) bsoncore.Document {
	b := bsoncore.NewDocumentBuilder().AppendInt64("n", n)
	if modified != 0 {
		b.AppendInt64("m", modified)
	}
	if upserted.Type != 0 {
		b.AppendValue("up", upserted)
	}
	return b.Build()
}

// applyOutcome adds a recorded statement outcome to the reply.
func (w *writeResult) applyOutcome(i int, o bsoncore.Document) {
	n, _ := o.Lookup("n").Int64OK()
	m, _ := o.Lookup("m").Int64OK()
	w.n += n
	w.nModified += m
	if up, err := o.LookupErr("up"); err == nil {
		w.upserted = append(w.upserted, bsoncore.NewDocumentBuilder().
			AppendInt32("index", int32(i)).AppendValue("_id", up).Build())
	}
}

// outcomeSince is the outcome of the statement that ran after the result
// held n documents, m modified and u upserted.
func (w *writeResult) outcomeSince(n, m int64, u int) bsoncore.Document {
	var up bsoncore.Value
	if len(w.upserted) > u {
		up = w.upserted[u].Lookup("_id")
	}
	return batchOutcome(w.n-n, w.nModified-m, up)
}
