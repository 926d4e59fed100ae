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
	"github.com/dumbodb/dumbodb/wire"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// updateStatement is one entry of update's "updates".
type updateStatement struct {
	filter        *query.Filter
	update        *query.Update
	upsert, multi bool
	sort          *query.Sort // MongoDB 8's updateOne sort: which document (nil: the first found)
}

// updateArgs are one entry of "updates" as decoded before anything runs:
// an entry of the wrong shape fails the whole command, as mongod's parser
// does, while an update or filter that does not compile fails only its
// statement.
type updateArgs struct {
	q, collation, sort bsoncore.Document
	constants          bsoncore.Document // c: the $$ variables of a pipeline update
	u, hint            bsoncore.Value
	arrayFilters       []bsoncore.Document
	filters            bsoncore.Array // arrayFilters as given
	upsert, multi      bool
}

// updateStatementFields are the fields of an entry of "updates".
var updateStatementFields = declareArgs(map[string]argReader[updateArgs]{
	"q":            func(f argField, a *updateArgs, v bsoncore.Value) error { return f.doc(v, &a.q) },
	"u":            func(f argField, a *updateArgs, v bsoncore.Value) error { a.u = v; return nil }, // checked as it compiles
	"upsert":       func(f argField, a *updateArgs, v bsoncore.Value) error { return f.bool(v, &a.upsert) },
	"multi":        func(f argField, a *updateArgs, v bsoncore.Value) error { return f.bool(v, &a.multi) },
	"arrayFilters": func(f argField, a *updateArgs, v bsoncore.Value) error { return f.array(v, &a.filters) },
	"collation":    func(f argField, a *updateArgs, v bsoncore.Value) error { return f.collation(v, &a.collation) },
	"hint":         func(f argField, a *updateArgs, v bsoncore.Value) error { return f.hint(v, &a.hint) },
	"c":            func(f argField, a *updateArgs, v bsoncore.Value) error { return f.optDoc(v, &a.constants) },
	"sort":         func(f argField, a *updateArgs, v bsoncore.Value) error { return f.optDoc(v, &a.sort) },
})

// decodeUpdateStatement decodes entry i of "updates".
func (r *request) decodeUpdateStatement(i int, v bsoncore.Value) (*updateArgs, error) {
	doc, ok := v.DocumentOK()
	if !ok {
		return nil, typeMismatch("update", fmt.Sprintf("updates.%d", i), v, "object")
	}
	a := &updateArgs{}
	err := parseElement("update.updates", i, doc, updateStatementFields, a)
	switch {
	case err != nil:
		return nil, err
	case a.q == nil:
		return nil, missingField("update.updates", "q")
	case a.u.Type == 0:
		return nil, missingField("update.updates", "u")
	case a.constants != nil && a.u.Type != bsoncore.TypeArray:
		return nil, mongoerr.New(mongoerr.Location51198, "Constant values may only be specified for pipeline updates")
	case a.u.Type == bsoncore.TypeArray:
		if err := query.CheckUpdatePipeline(a.u.Array()); err != nil {
			return nil, err
		}
	}
	if a.arrayFilters, err = arrayFilterDocs(a.filters); err != nil {
		return nil, err
	}
	return a, nil
}

// compileUpdateStatement compiles a decoded entry, as it runs.
func (r *request) compileUpdateStatement(a *updateArgs, let bsoncore.Document) (*updateStatement, error) {
	if err := r.checkHint(a.hint); err != nil {
		return nil, err
	}
	coll, _ := r.collectionArg()
	env, err := r.collEnv(coll, a.collation, let)
	if err != nil {
		return nil, err
	}
	st := &updateStatement{upsert: a.upsert, multi: a.multi}
	if st.filter, err = query.CompileQueryFilter(a.q, env); err != nil {
		return nil, err
	}
	if a.constants != nil { // c's variables are the update's, beside let's
		if env, err = r.collEnv(coll, a.collation, withVariables(let, a.constants)); err != nil {
			return nil, err
		}
	}
	opts := query.UpdateOptions{Env: env, Query: st.filter, ArrayFilters: a.arrayFilters}
	if st.update, err = query.CompileUpdateOpts(a.u, opts); err != nil {
		return nil, err
	}
	if st.multi && st.update.IsReplacement() {
		return nil, mongoerr.New(mongoerr.FailedToParse, "multi update is not supported for replacement-style update")
	}
	if nonEmpty(a.sort) {
		if st.multi {
			return nil, mongoerr.New(mongoerr.FailedToParse, "Cannot specify sort with multi=true")
		}
		if st.sort, err = query.CompileSortEnv(a.sort, env); err != nil {
			return nil, err
		}
	}
	return st, nil
}

// arrayFilterDocs checks that every entry of arrayFilters is a document.
func arrayFilterDocs(arr bsoncore.Array) ([]bsoncore.Document, error) {
	vals, _ := arr.Values()
	out := make([]bsoncore.Document, 0, len(vals))
	for _, v := range vals {
		d, ok := v.DocumentOK()
		if !ok {
			return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field 'arrayFilters' is the wrong type '%s', expected type 'object'", v.Type)
		}
		out = append(out, d)
	}
	return out, nil
}

func cmdUpdate(r *request) (bsoncore.Document, error) {
	batch, err := r.parseWriteBatch(updateFields)
	if err != nil {
		return nil, err
	}
	let, bypass := batch.let, batch.bypass
	if err := r.requireBypass(bypass, r.db); err != nil {
		return nil, err
	}
	if err := validateUserWritable(r.db, batch.coll); err != nil {
		return nil, err
	}
	ts, err := r.writeTarget(batch.coll)
	if err != nil {
		return nil, err
	}
	vals, _ := batch.statements.Values()
	if err := checkWriteBatchSize(len(vals)); err != nil {
		return nil, err
	}
	args := make([]*updateArgs, len(vals))
	for i, v := range vals {
		if args[i], err = r.decodeUpdateStatement(i, v); err != nil {
			return nil, err
		}
		args[i].u = r.c.s.replacementFilled(args[i].u, batch.keepEmptyTs)
	}
	var res writeResult
	coll := batch.coll
	err = r.write(func(tx *storage.Tx) error {
		res = writeResult{} // a try again after a write conflict starts afresh
		dv, err := r.validatorFor(tx, r.db, coll, bypass)
		if err != nil {
			return err
		}
		return res.runBatch(r, tx, r.ns(coll), vals, batch.ordered, func(i int, _ bsoncore.Value) (bsoncore.Value, error) {
			st, err := r.compileUpdateStatement(args[i], let)
			if err == nil && st.multi {
				err = r.refuseMultiRetry("multi=true")
			}
			var upsertedID bsoncore.Value
			switch {
			case err == nil && ts:
				upsertedID, err = r.tsUpdate(tx, coll, args[i].q, st, &res)
			case err == nil:
				upsertedID, err = r.applyUpdate(tx, coll, st, &res, dv)
			}
			if err != nil {
				return upsertedID, err
			}
			if upsertedID.Type != 0 {
				res.upserted = append(res.upserted, bsoncore.NewDocumentBuilder().
					AppendInt32("index", int32(i)).AppendValue("_id", upsertedID).Build())
			}
			return bsoncore.Value{}, nil
		})
	})
	if err != nil {
		return nil, err
	}
	r.c.s.stats.opUpdate.Add(int64(len(vals)))
	return res.reply(true), nil
}

// applyUpdate runs one update statement; it returns the _id of an upserted
// document (zero Value when none was upserted). dv checks what it stores.
func (r *request) applyUpdate(tx *storage.Tx, coll string, st *updateStatement, res *writeResult, dv *docValidator) (bsoncore.Value, error) {
	matched, modified, err := r.updateStatementDocs(tx, coll, st, dv)
	res.n += matched
	res.nModified += modified
	if err != nil || matched > 0 || !st.upsert {
		return bsoncore.Value{}, err
	}
	doc, err := upsertDocument(st.filter, st.update)
	if err != nil {
		return bsoncore.Value{}, err
	}
	if _, err := tx.EnsureCollection(r.ctx, coll); err != nil {
		return bsoncore.Value{}, err
	}
	id := doc.Lookup("_id")
	if err := dv.checkInsert(doc); err != nil {
		return id, err
	}
	if err := tx.Insert(r.ctx, coll, doc); err != nil {
		return id, err
	}
	res.n++
	return id, nil
}

// updateStatementDocs updates what a statement selects: with a sort, the
// first matching document in that order; else as updateMatching.
func (r *request) updateStatementDocs(tx *storage.Tx, coll string, st *updateStatement, dv *docValidator) (matched, modified int64, err error) {
	if st.sort == nil {
		return updateMatching(r.ctx, tx, coll, st.filter, st.update, st.multi, nil, dv)
	}
	if _, ok := tx.Collection(coll); !ok {
		return 0, 0, nil
	}
	target, err := r.firstMatch(tx, coll, st.filter, st.sort)
	if err != nil || target == nil {
		return 0, 0, err
	}
	_, changed, err := applyToDocument(r.ctx, tx, coll, target, st.update, dv)
	if changed {
		modified = 1
	}
	return 1, modified, err
}

// updateMatching applies u to the documents matching f (the first one only
// unless multi). onUpdate, when set, sees each document before and after;
// dv checks each new version.
func updateMatching(ctx context.Context, tx *storage.Tx, coll string, f *query.Filter, u *query.Update, multi bool,
	onUpdate func(before, after bsoncore.Document), dv *docValidator) (matched, modified int64, err error) {
	if _, ok := tx.Collection(coll); !ok {
		return 0, 0, nil
	}
	if onUpdate == nil {
		if handled, matched, modified, err := updateByFields(ctx, tx, coll, f, u, dv); handled || err != nil {
			return matched, modified, err
		}
	}
	src, err := plan.Matching(ctx, tx, coll, f)
	if err != nil {
		return 0, 0, err
	}
	for {
		doc, err := src.Next(ctx)
		if errors.Is(err, io.EOF) {
			return matched, modified, nil
		}
		if err != nil {
			return matched, modified, err
		}
		matched++
		after, changed, err := applyToDocument(ctx, tx, coll, doc, u, dv)
		if err != nil {
			return matched, modified, err
		}
		if changed {
			modified++
		}
		if onUpdate != nil {
			onUpdate(doc, after)
		}
		if !multi {
			return matched, modified, nil
		}
	}
}

// applyToDocument updates one stored document and writes it back if it
// changed and dv lets it.
func applyToDocument(ctx context.Context, tx *storage.Tx, coll string, doc bsoncore.Document, u *query.Update, dv *docValidator) (bsoncore.Document, bool, error) {
	after, changed, err := u.Apply(doc, false)
	if err != nil || !changed {
		return doc, false, err
	}
	if len(after) > wire.MaxDocumentSize {
		return nil, false, mongoerr.New(mongoerr.Location17419, "Resulting document after update is larger than %d", wire.MaxDocumentSize)
	}
	if after, err = normalizeDocument(after); err != nil {
		return nil, false, err
	}
	if err := dv.checkUpdate(doc, after); err != nil {
		return nil, false, err
	}
	if u.IsReplacement() {
		return after, true, tx.Replace(ctx, coll, after)
	}
	return after, true, tx.Update(ctx, coll, after)
}

// upsertDocument builds the document an upsert inserts.
func upsertDocument(f *query.Filter, u *query.Update) (bsoncore.Document, error) {
	doc, err := query.Upsert(f, u)
	if err != nil {
		return nil, err
	}
	if len(doc) > wire.MaxDocumentSize {
		return nil, mongoerr.New(mongoerr.Location17419, "Resulting document after update is larger than %d", wire.MaxDocumentSize)
	}
	return normalizeDocument(doc)
}

// withVariables is let with the variables of extra added, extra's winning
// where both name one.
func withVariables(let, extra bsoncore.Document) bsoncore.Document {
	b := bsoncore.NewDocumentBuilder()
	if let != nil {
		els, _ := let.Elements()
		for _, el := range els {
			if _, err := extra.LookupErr(el.Key()); err != nil {
				b.AppendValue(el.Key(), el.Value())
			}
		}
	}
	els, _ := extra.Elements()
	for _, el := range els {
		b.AppendValue(el.Key(), el.Value())
	}
	return b.Build()
}
