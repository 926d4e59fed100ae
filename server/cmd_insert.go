package server

import (
	"errors"
	"strconv"

	"github.com/dumbodb/dumbodb/index"
	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/storage"
	"github.com/dumbodb/dumbodb/value"
	"github.com/dumbodb/dumbodb/wire"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// writeResult accumulates the reply of a write command.
type writeResult struct {
	n, nModified int64
	upserted     []bsoncore.Document // {index, _id}
	errs         []writeError
	// groupInserts: the statements are documents inserted in groups, as
	// mongod inserts them into a collection that is not capped
	// (statementPasses).
	groupInserts bool
}

func (w *writeResult) reply(withModified bool) bsoncore.Document {
	dst := make([]byte, 0, 128)
	idx, dst := bsoncore.AppendDocumentStart(dst)
	dst = bsoncore.AppendInt32Element(dst, "n", int32(w.n))
	if withModified {
		dst = bsoncore.AppendInt32Element(dst, "nModified", int32(w.nModified))
	}
	if len(w.upserted) > 0 {
		dst = appendDocArray(dst, "upserted", w.upserted)
	}
	if len(w.errs) > 0 {
		aidx, d := bsoncore.AppendArrayElementStart(dst, "writeErrors")
		dst = d
		for i, e := range w.errs {
			dst = e.append(dst, itoa(int64(i)))
		}
		dst, _ = bsoncore.AppendArrayEnd(dst, aidx)
	}
	dst = bsoncore.AppendDoubleElement(dst, "ok", 1)
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return dst
}

// add records err for statement i.
func (w *writeResult) add(i int, err error, ns string, id bsoncore.Value) {
	if me, ok := duplicateKeyError(ns, err, id); ok {
		w.errs = append(w.errs, writeError{index: i, err: me})
		return
	}
	w.errs = append(w.errs, writeError{index: i, err: toMongoErr(err)})
}

// runBatch runs a write command's statements in turn in tx. A statement
// that fails is recorded with the _id run returns (for a duplicate key's
// message); an ordered batch stops there, an unordered one goes on, as
// mongod's do. In a retryable write, statements an earlier try ran answer
// from their outcomes, and the others' outcomes are recorded; the error is
// the command's (a stale txnNumber).
func (w *writeResult) runBatch(r *request, tx *storage.Tx, ns string, statements []bsoncore.Value, ordered bool,
	run func(i int, statement bsoncore.Value) (id bsoncore.Value, err error)) error {
	passes := r.statementPasses(w.groupInserts)
	for i, v := range statements {
		outcome, done, err := r.retried(tx, i)
		if err != nil {
			return err
		}
		if done {
			if err := passes.flush(); err != nil {
				return err
			}
			w.applyOutcome(i, outcome)
			continue
		}
		failed, err := w.runStatement(r, tx, ns, passes, i, v, run)
		if err != nil {
			return err
		}
		if failed && ordered {
			break
		}
	}
	return passes.flush()
}

// runStatement runs statement i of runBatch, through the
// onPrimaryTransactionalWrite fail point: failed when it failed (its
// error recorded), err the command's error.
func (w *writeResult) runStatement(r *request, tx *storage.Tx, ns string, passes *statementPasses, i int, v bsoncore.Value,
	run func(i int, statement bsoncore.Value) (id bsoncore.Value, err error)) (failed bool, err error) {
	stmtErr, err := passes.before(i, len(v.Data))
	if err != nil {
		return false, err
	}
	n, m, u, changes := w.n, w.nModified, len(w.upserted), tx.Changes()
	var id bsoncore.Value
	if stmtErr == nil {
		id, stmtErr = run(i, v)
	}
	if stmtErr != nil {
		if errors.Is(stmtErr, storage.ErrWriteConflict) {
			return false, stmtErr // the whole command's: a transaction holds the document
		}
		w.add(i, stmtErr, ns, id)
		return true, passes.failed()
	}
	if r.retry == nil || tx.Changes() == changes {
		return false, nil
	}
	r.recordOutcome(tx, i, changes, w.outcomeSince(n, m, u))
	return false, passes.wrote(i)
}

// writeBatch holds the arguments of insert, update and delete.
type writeBatch struct {
	coll        string
	statements  bsoncore.Array // documents, updates or deletes
	ordered     bool
	bypass      bool              // bypassDocumentValidation (insert, update)
	keepEmptyTs bool              // bypassEmptyTsReplacement (insert, update)
	let         bsoncore.Document // update, delete
}

// The fields of each write command.
var (
	insertFields = declareArgs(map[string]argReader[writeBatch]{
		"documents":                batchStatements,
		"ordered":                  batchOrdered,
		"bypassDocumentValidation": batchBypass,
		"bypassEmptyTsReplacement": batchKeepEmptyTs,
	})
	updateFields = declareArgs(map[string]argReader[writeBatch]{
		"updates":                  batchStatements,
		"ordered":                  batchOrdered,
		"bypassDocumentValidation": batchBypass,
		"bypassEmptyTsReplacement": batchKeepEmptyTs,
		"let":                      batchLet,
	})
	deleteFields = declareArgs(map[string]argReader[writeBatch]{
		"deletes": batchStatements,
		"ordered": batchOrdered,
		"let":     batchLet,
	})
)

func batchStatements(f argField, b *writeBatch, v bsoncore.Value) error {
	return f.array(v, &b.statements)
}
func batchOrdered(f argField, b *writeBatch, v bsoncore.Value) error { return f.bool(v, &b.ordered) }
func batchBypass(f argField, b *writeBatch, v bsoncore.Value) error  { return f.bool(v, &b.bypass) }
func batchKeepEmptyTs(f argField, b *writeBatch, v bsoncore.Value) error {
	return f.bool(v, &b.keepEmptyTs)
}
func batchLet(f argField, b *writeBatch, v bsoncore.Value) error { return f.optDoc(v, &b.let) }

// parseWriteBatch reads the collection and the arguments of a write
// command, declared in fields.
func (r *request) parseWriteBatch(fields argTable[writeBatch]) (writeBatch, error) {
	b := writeBatch{ordered: true}
	var err error
	if b.coll, err = r.collectionArg(); err != nil {
		return b, err
	}
	return b, parseTable(r.name, r.cmd, fields, &b)
}

// checkWriteBatchSize refuses a batch of more statements than hello's
// maxWriteBatchSize promises to take.
func checkWriteBatchSize(n int) error {
	if n > maxWriteBatchSize {
		return mongoerr.New(mongoerr.InvalidLength, "Write batch sizes must be between 1 and %d. Got %d operations.", maxWriteBatchSize, n)
	}
	return nil
}

func cmdInsert(r *request) (bsoncore.Document, error) {
	batch, err := r.parseWriteBatch(insertFields)
	if err != nil {
		return nil, err
	}
	bypass := batch.bypass
	if err := r.requireBypass(bypass, r.db); err != nil {
		return nil, err
	}
	if batch.statements == nil {
		return nil, mongoerr.New(mongoerr.Location40414, "BSON field 'insert.documents' is missing but a required field")
	}
	buckets, restoring, err := r.bucketsTarget(batch.coll)
	if err != nil {
		return nil, err
	}
	if !restoring {
		if err := validateUserWritable(r.db, batch.coll); err != nil {
			return nil, err
		}
	}
	info, exists, err := r.collectionInfo(batch.coll)
	if err != nil {
		return nil, err
	}
	ts := exists && isTimeseries(info)
	if exists && !ts && info.IsView() {
		return nil, r.viewWriteError(batch.coll)
	}
	vals, err := batch.statements.Values()
	if err != nil {
		return nil, mongoerr.New(mongoerr.InvalidBSON, "%s", err.Error())
	}
	if err := checkWriteBatchSize(len(vals)); err != nil {
		return nil, err
	}
	for i, v := range vals { // the command's shape, refused before any write
		if v.Type != bsoncore.TypeEmbeddedDocument {
			return nil, typeMismatch("insert", "documents."+strconv.Itoa(i), v, "object")
		}
	}
	if ts {
		return r.insertTimeseries(batch.coll, vals, batch.ordered)
	}
	var res writeResult
	coll := batch.coll
	err = r.write(func(tx *storage.Tx) error {
		res = writeResult{groupInserts: !info.Capped()} // a try again after a write conflict starts afresh
		tx.Grow(len(vals))
		if _, err := tx.EnsureCollection(r.ctx, coll); err != nil {
			return err
		}
		dv, err := r.validatorFor(tx, r.db, coll, bypass)
		if err != nil {
			return err
		}
		return res.runBatch(r, tx, r.ns(coll), vals, batch.ordered, func(_ int, v bsoncore.Value) (bsoncore.Value, error) {
			doc, err := prepareInsert(v)
			if err == nil && restoring {
				err = checkBucket(doc, buckets)
			}
			if err == nil && !batch.keepEmptyTs {
				doc = r.c.s.fillEmptyTimestamps(doc)
			}
			if err == nil {
				err = dv.checkInsert(doc)
			}
			if err == nil {
				err = tx.Insert(r.ctx, coll, doc)
			}
			if err != nil {
				return doc.Lookup("_id"), err
			}
			res.n++
			return bsoncore.Value{}, nil
		})
	})
	if err != nil {
		return nil, err
	}
	r.c.s.stats.opInsert.Add(res.n)
	return res.reply(false), nil
}

// prepareInsert validates a document for insertion and returns it with its
// _id first, generating an ObjectId when it has none (as drivers and mongod
// do).
// The command checked that v is a document.
func prepareInsert(v bsoncore.Value) (bsoncore.Document, error) {
	doc := v.Document()
	if len(doc) > wire.MaxDocumentSize {
		return nil, mongoerr.New(mongoerr.BSONObjectTooLarge, "object to insert too large. size in bytes: %d, max size: %d", len(doc), wire.MaxDocumentSize)
	}
	return normalizeDocument(doc)
}

// normalizeDocument checks the _id and moves it to the front. Other
// field names may start with "$" (allowed since MongoDB 5.0).
func normalizeDocument(doc bsoncore.Document) (bsoncore.Document, error) {
	if idFirstAndOnly(doc) {
		return doc, index.ValidateID(doc.Index(0).Value())
	}
	els, err := doc.Elements()
	if err != nil {
		return nil, mongoerr.New(mongoerr.InvalidBSON, "%s", err.Error())
	}
	idPos := -1
	for i, el := range els {
		if el.Key() != "_id" {
			continue
		}
		if idPos >= 0 {
			return nil, mongoerr.New(mongoerr.BadValue, "can't have multiple _id fields in one document")
		}
		idPos = i
	}
	if idPos >= 0 {
		if err := index.ValidateID(els[idPos].Value()); err != nil {
			return nil, err
		}
	}
	if idPos == 0 {
		return doc, nil
	}
	out := make([]byte, 0, len(doc)+17)
	start, out := bsoncore.AppendDocumentStart(out)
	if idPos > 0 {
		out = append(out, els[idPos]...)
	} else {
		out = bsoncore.AppendObjectIDElement(out, "_id", newObjectID())
	}
	for i, el := range els {
		if i != idPos {
			out = append(out, el...)
		}
	}
	out, _ = bsoncore.AppendDocumentEnd(out, start)
	return out, nil
}

// idFirstAndOnly reports whether doc's first field is its one _id, the
// common case of a driver's document, walking it without building its
// element list. The wire layer validated doc.
func idFirstAndOnly(doc bsoncore.Document) bool {
	it := value.NewIter(doc)
	key, _, ok := it.Next()
	if !ok || string(key) != "_id" {
		return false
	}
	for {
		key, _, ok := it.Next()
		if !ok {
			return true
		}
		if string(key) == "_id" {
			return false
		}
	}
}
