package server

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/plan"
	"github.com/dumbodb/dumbodb/query"
	"github.com/dumbodb/dumbodb/storage"
	"github.com/dumbodb/dumbodb/value"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// deleteStatement is one entry of delete's "deletes".
type deleteStatement struct {
	filter *query.Filter
	limit  int64
}

// deleteArgs are one entry of "deletes" as decoded before anything runs:
// an entry of the wrong shape fails the whole command, as mongod's parser
// does, while a filter that does not compile fails only its statement.
type deleteArgs struct {
	q, collation bsoncore.Document
	hint         bsoncore.Value
	limit        int64
}

// deleteStatementFields are the fields of an entry of "deletes".
var deleteStatementFields = declareArgs(map[string]argReader[deleteArgs]{
	"q":         func(f argField, a *deleteArgs, v bsoncore.Value) error { return f.doc(v, &a.q) },
	"limit":     func(f argField, a *deleteArgs, v bsoncore.Value) error { return f.deleteLimit(v, &a.limit) },
	"collation": func(f argField, a *deleteArgs, v bsoncore.Value) error { return f.collation(v, &a.collation) },
	"hint":      func(f argField, a *deleteArgs, v bsoncore.Value) error { return f.hint(v, &a.hint) },
})

// decodeDeleteStatement decodes entry i of "deletes".
func (r *request) decodeDeleteStatement(i int, v bsoncore.Value) (*deleteArgs, error) {
	doc, ok := v.DocumentOK()
	if !ok {
		return nil, typeMismatch("delete", fmt.Sprintf("deletes.%d", i), v, "object")
	}
	a := &deleteArgs{limit: -1}
	err := parseElement("delete.deletes", i, doc, deleteStatementFields, a)
	switch {
	case err != nil:
		return nil, err
	case a.q == nil:
		return nil, missingField("delete.deletes", "q")
	case a.limit == -1:
		return nil, missingField("delete.deletes", "limit")
	}
	return a, nil
}

// deleteLimit reads a delete's limit: a number, 0 (all) or 1 (one).
func (f argField) deleteLimit(v bsoncore.Value, dst *int64) error {
	if !value.IsNumber(v) {
		return typeMismatch(f.owner(), f.name, v, "long")
	}
	switch n, whole := value.WholeInt64(v); {
	case whole && (n == 0 || n == 1):
		*dst = n
		return nil
	}
	return mongoerr.New(mongoerr.FailedToParse, "The limit field in delete objects must be 0 or 1. Got %s", value.Format(v))
}

// compileDeleteStatement compiles a decoded entry, as it runs.
func (r *request) compileDeleteStatement(a *deleteArgs, let bsoncore.Document) (*deleteStatement, error) {
	if err := r.checkHint(a.hint); err != nil {
		return nil, err
	}
	coll, _ := r.collectionArg()
	env, err := r.collEnv(coll, a.collation, let)
	if err != nil {
		return nil, err
	}
	st := &deleteStatement{limit: a.limit}
	st.filter, err = query.CompileQueryFilter(a.q, env)
	return st, err
}

func cmdDelete(r *request) (bsoncore.Document, error) {
	batch, err := r.parseWriteBatch(deleteFields)
	if err != nil {
		return nil, err
	}
	let := batch.let
	if err := validateUserWritable(r.db, batch.coll); err != nil {
		return nil, err
	}
	ts, err := r.writeTarget(batch.coll)
	if err != nil {
		return nil, err
	}
	vals, _ := batch.statements.Values()
	args := make([]*deleteArgs, len(vals))
	for i, v := range vals {
		if args[i], err = r.decodeDeleteStatement(i, v); err != nil {
			return nil, err
		}
	}
	var res writeResult
	coll := batch.coll
	err = r.writeExisting(func(tx *storage.Tx) error {
		res = writeResult{} // a try again after a write conflict starts afresh
		return res.runBatch(r, tx, r.ns(coll), vals, batch.ordered, func(i int, _ bsoncore.Value) (bsoncore.Value, error) {
			st, err := r.compileDeleteStatement(args[i], let)
			if err == nil && st.limit != 1 {
				err = r.refuseMultiRetry("limit=0")
			}
			var n int64
			switch {
			case err == nil && ts:
				n, err = r.tsDelete(tx, coll, args[i].q, st.filter, st.limit == 1)
			case err == nil:
				n, err = deleteMatching(r.ctx, tx, coll, st.filter, st.limit == 1, nil)
			}
			res.n += n
			return bsoncore.Value{}, err
		})
	})
	if err != nil {
		return nil, err
	}
	r.c.s.stats.opDelete.Add(int64(len(vals)))
	return res.reply(false), nil
}

// deleteMatching deletes the documents matching f (only the first with
// justOne). onDelete, when set, sees each deleted document.
func deleteMatching(ctx context.Context, tx *storage.Tx, coll string, f *query.Filter, justOne bool,
	onDelete func(bsoncore.Document)) (int64, error) {
	if _, ok := tx.Collection(coll); !ok {
		return 0, nil
	}
	src, err := plan.Matching(ctx, tx, coll, f)
	if err != nil {
		return 0, err
	}
	var n int64
	for {
		doc, err := src.Next(ctx)
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		if err := tx.Delete(ctx, coll, doc.Lookup("_id")); err != nil {
			return n, err
		}
		n++
		if onDelete != nil {
			onDelete(doc)
		}
		if justOne {
			return n, nil
		}
	}
}
