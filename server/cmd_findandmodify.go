package server

import (
	"cmp"
	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/plan"
	"github.com/dumbodb/dumbodb/query"
	"github.com/dumbodb/dumbodb/storage"
	"github.com/dumbodb/dumbodb/value"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// famArgs are the parsed arguments of findAndModify.
type famArgs struct {
	filter, sort, fields      bsoncore.Document
	collation, let            bsoncore.Document
	arrayFilters              bsoncore.Array
	update, hint              bsoncore.Value
	remove, returnNew, upsert bool
	bypass                    bool // bypassDocumentValidation
	keepEmptyTs               bool // bypassEmptyTsReplacement
}

func (r *request) parseFindAndModify() (*famArgs, error) {
	a := &famArgs{}
	err := r.parseArgs(map[string]fieldHandler{
		"query":                    r.optDocArg("query", &a.filter),
		"sort":                     r.optDocArg("sort", &a.sort),
		"fields":                   r.optDocArg("fields", &a.fields),
		"update":                   func(v bsoncore.Value) error { a.update = v; return nil },
		"remove":                   r.safeBoolArg("remove", &a.remove),
		"new":                      r.safeBoolArg("new", &a.returnNew),
		"upsert":                   r.safeBoolArg("upsert", &a.upsert),
		"arrayFilters":             r.arrayArg("arrayFilters", &a.arrayFilters),
		"bypassDocumentValidation": r.boolArg("bypassDocumentValidation", &a.bypass),
		"bypassEmptyTsReplacement": r.boolArg("bypassEmptyTsReplacement", &a.keepEmptyTs),
		"collation":                r.optDocArg("collation", &a.collation),
		"hint":                     r.hintArg(&a.hint),
		"let":                      r.optDocArg("let", &a.let),
	})
	if err != nil {
		return nil, err
	}
	hasUpdate := a.update.Type != 0
	switch {
	case a.remove && hasUpdate:
		return nil, mongoerr.New(mongoerr.FailedToParse, "Cannot specify both an update and remove=true")
	case !a.remove && !hasUpdate:
		return nil, mongoerr.New(mongoerr.FailedToParse, "Either an update or remove=true must be specified")
	case a.remove && a.upsert:
		return nil, mongoerr.New(mongoerr.FailedToParse, "Cannot specify both upsert=true and remove=true ")
	case a.remove && a.returnNew:
		return nil, mongoerr.New(mongoerr.FailedToParse, "Cannot specify both new=true and remove=true; 'remove' always returns the deleted document")
	}
	return a, nil
}

func cmdFindAndModify(r *request) (bsoncore.Document, error) {
	coll, err := r.collectionArg()
	if err != nil {
		return nil, err
	}
	ts, err := r.writeTarget(coll)
	if err != nil {
		return nil, err
	}
	a, err := r.parseFindAndModify()
	if err != nil {
		return nil, err
	}
	if err := validateUserWritable(r.db, coll); err != nil {
		return nil, err
	}
	if err := r.checkHint(a.hint); err != nil {
		return nil, err
	}
	if err := r.requireBypass(a.bypass, r.db); err != nil {
		return nil, err
	}
	env, err := r.collEnv(coll, a.collation, a.let)
	if err != nil {
		return nil, err
	}
	f, err := query.CompileQueryFilter(value.OrEmpty(a.filter), env)
	if err != nil {
		return nil, err
	}
	var u *query.Update
	if !a.remove {
		afs, err := arrayFilterDocs(a.arrayFilters)
		if err != nil {
			return nil, err
		}
		update := r.c.s.replacementFilled(a.update, a.keepEmptyTs)
		if u, err = query.CompileUpdateOpts(update, query.UpdateOptions{Env: env, Query: f, ArrayFilters: afs}); err != nil {
			return nil, err
		}
	}
	var proj *query.Projection
	if nonEmpty(a.fields) {
		if proj, err = query.CompileProjectionOpts(a.fields, query.ProjectionOptions{Env: env, Query: f}); err != nil {
			return nil, err
		}
	}
	var srt *query.Sort
	if nonEmpty(a.sort) {
		if srt, err = query.CompileSortEnv(a.sort, env); err != nil {
			return nil, err
		}
	}
	var reply bsoncore.Document
	err = r.write(func(tx *storage.Tx) error {
		outcome, done, err := r.retried(tx, 0)
		if err != nil {
			return err
		}
		if done {
			var ok bool
			if reply, ok = outcome.Lookup("fam").DocumentOK(); !ok {
				return mongoerr.New(mongoerr.Location40606,
					"findAndModify retry request: transaction %d of the session is not compatible with the previous write of that statement, which was not a findAndModify", r.retry.txn)
			}
			return nil
		}
		passes := r.statementPasses(false)
		if stmtErr, err := passes.before(0, 0); stmtErr != nil || err != nil {
			return cmp.Or(stmtErr, err)
		}
		changes := tx.Changes()
		var out famOutcome
		modify := r.findAndModifyIn
		if ts {
			modify = r.tsFindAndModify
		}
		if err := modify(tx, coll, f, srt, u, a, &out); err != nil {
			return err
		}
		if reply, err = out.reply(proj); err != nil {
			return err
		}
		if r.retry == nil || tx.Changes() == changes {
			return nil
		}
		r.recordOutcome(tx, 0, changes, bsoncore.NewDocumentBuilder().AppendDocument("fam", reply).Build())
		return passes.wrote(0)
	})
	return reply, err
}

// famOutcome is what findAndModify did.
type famOutcome struct {
	n               int32
	removed         bool
	updatedExisting bool
	upsertedID      bsoncore.Value
	value           bsoncore.Document // nil: null
}

func (r *request) findAndModifyIn(tx *storage.Tx, coll string, f *query.Filter, srt *query.Sort, u *query.Update, a *famArgs, out *famOutcome) error {
	target, err := r.firstMatch(tx, coll, f, srt)
	if err != nil {
		return err
	}
	dv, err := r.validatorFor(tx, r.db, coll, a.bypass)
	if err != nil {
		return err
	}
	switch {
	case target != nil && a.remove:
		out.n, out.value, out.removed = 1, target, true
		return tx.Delete(r.ctx, coll, target.Lookup("_id"))
	case target != nil:
		after, _, err := applyToDocument(r.ctx, tx, coll, target, u, dv)
		if err != nil {
			return planExecutorError(err)
		}
		out.n, out.updatedExisting, out.value = 1, true, target
		if a.returnNew {
			out.value = after
		}
		return nil
	case a.upsert:
		doc, err := upsertDocument(f, u)
		if err != nil {
			return err
		}
		if _, err := tx.EnsureCollection(r.ctx, coll); err != nil {
			return err
		}
		if err := dv.checkInsert(doc); err != nil {
			return planExecutorError(err)
		}
		if err := tx.Insert(r.ctx, coll, doc); err != nil {
			if me, ok := duplicateKeyError(r.ns(coll), err, doc.Lookup("_id")); ok {
				return planExecutorError(me)
			}
			return err
		}
		out.n, out.upsertedID = 1, doc.Lookup("_id")
		if a.returnNew {
			out.value = doc
		}
	}
	return nil
}

// planExecutorError is an error of findAndModify's write as mongod words
// it: the update or insert failing while the command runs (not while it
// is parsed) carries the executor's context, with its code and details.
func planExecutorError(err error) *mongoerr.Error {
	me := toMongoErr(err)
	return &mongoerr.Error{Code: me.Code, Msg: "Plan executor error during findAndModify :: caused by :: " + me.Msg, Info: me.Info}
}

// firstMatch is the first matching document in sort order (or _id order).
func (r *request) firstMatch(rd storage.Reader, coll string, f *query.Filter, srt *query.Sort) (bsoncore.Document, error) {
	ex, err := plan.Execute(r.ctx, rd, coll, &plan.Read{Filter: f, Sort: srt})
	if err != nil {
		return nil, err
	}
	p := &peekSource{src: ex.Source}
	docs, _, err := fillBatch(r.ctx, p, 1)
	if err != nil || len(docs) == 0 {
		return nil, err
	}
	return docs[0], nil
}

func (o *famOutcome) reply(proj *query.Projection) (bsoncore.Document, error) {
	leo := bsoncore.NewDocumentBuilder().AppendInt32("n", o.n)
	switch {
	case o.removed:
	case o.upsertedID.Type != 0:
		leo.AppendBoolean("updatedExisting", false).AppendValue("upserted", o.upsertedID)
	default:
		leo.AppendBoolean("updatedExisting", o.updatedExisting)
	}
	b := bsoncore.NewDocumentBuilder().AppendDocument("lastErrorObject", leo.Build())
	if o.value == nil {
		b.AppendNull("value")
	} else {
		v := o.value
		if proj != nil {
			var err error
			if v, err = proj.Apply(v); err != nil {
				return nil, err
			}
		}
		b.AppendDocument("value", v)
	}
	return b.AppendDouble("ok", 1).Build(), nil
}
