package server

import (
	"errors"
	"io"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/plan"
	"github.com/dumbodb/dumbodb/query"
	"github.com/dumbodb/dumbodb/storage"
	"github.com/dumbodb/dumbodb/timeseries"
	"github.com/dumbodb/dumbodb/value"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Deletes and updates of a time-series collection, as mongod 8 runs them:
// with any filter. The buckets that may hold matching measurements (the
// read's bucket filter) are unpacked; a bucket that loses measurements is
// rewritten without them (or deleted when none are left), and the new
// versions of updated measurements are inserted again as measurements, so
// that one whose meta or time changed goes into the bucket it now belongs
// in.

// tsPos is a measurement's place: its bucket's _id and its number there.
type tsPos struct {
	bucket bsoncore.Value
	i      int
}

// is reports whether the measurement i of bucket id is at p (any is, for
// a nil p).
func (p *tsPos) is(id bsoncore.Value, i int) bool {
	return p == nil || p.i == i && p.bucket.Equal(id)
}

// tsFirst finds the place of the first measurement matching f in srt's
// order (nil when none matches).
func (r *request) tsFirst(tx *storage.Tx, coll string, q bsoncore.Document, f *query.Filter, srt *query.Sort) (*tsPos, error) {
	o, src, err := r.tsBuckets(tx, coll, q)
	if err != nil {
		return nil, err
	}
	var best bsoncore.Document
	var at *tsPos
	for {
		b, err := src.Next(r.ctx)
		if errors.Is(err, io.EOF) {
			return at, nil
		}
		if err != nil {
			return nil, err
		}
		for i, m := range timeseries.Unpack(b, o.timeField, o.metaField) {
			if f.Match(m) && (best == nil || srt.Compare(m, best) < 0) {
				best, at = m, &tsPos{bucket: b.Lookup("_id"), i: i}
			}
		}
	}
}

// tsBuckets reads the buckets of coll that may hold measurements
// matching the filter q (its bucket filter's), with coll's options.
func (r *request) tsBuckets(tx *storage.Tx, coll string, q bsoncore.Document) (tsOptions, query.Stream, error) {
	info, _ := tx.Collection(coll)
	o, _ := timeseriesOf(info)
	bf, err := query.CompileFilter(cmpOr(o.bucketFilter(q), emptyDoc))
	if err != nil {
		return o, nil, err
	}
	src, err := plan.Matching(r.ctx, tx, bucketsPrefix+coll, bf)
	return o, src, err
}

// cmpOr is d, or def when d is nil.
func cmpOr(d, def bsoncore.Document) bsoncore.Document {
	if d == nil {
		return def
	}
	return d
}

// tsVisit decides a matching measurement's fate: its new version (nil:
// deleted), whether it changed, whether to look for more.
type tsVisit func(m bsoncore.Document) (after bsoncore.Document, changed, more bool, err error)

// tsRewrite runs visit on the measurements of coll matching f (q is its
// filter document) and writes the changes; matched counts the
// measurements visit saw.
func (r *request) tsRewrite(tx *storage.Tx, coll string, q bsoncore.Document, f *query.Filter, only *tsPos, visit tsVisit) (matched int64, err error) {
	o, src, err := r.tsBuckets(tx, coll, q)
	if err != nil {
		return 0, err
	}
	buckets := bucketsPrefix + coll
	var moved []bsoncore.Document
	matched, err = r.tsRewriteAll(tx, o, buckets, src, f, only, visit, &moved)
	// The measurements moved so far go in even after an error: their old
	// versions are gone from their buckets, as a multi-document write
	// that fails keeps what it did before the failure.
	if insErr := r.tsInsertMoved(tx, o, buckets, moved); err == nil {
		err = insErr
	}
	return matched, err
}

// tsRewriteAll runs tsRewriteBucket over the buckets src reads.
func (r *request) tsRewriteAll(tx *storage.Tx, o tsOptions, buckets string, src query.Stream, f *query.Filter,
	only *tsPos, visit tsVisit, moved *[]bsoncore.Document) (matched int64, err error) {
	for more := true; more; {
		b, err := src.Next(r.ctx)
		if errors.Is(err, io.EOF) {
			return matched, nil
		}
		if err != nil {
			return matched, err
		}
		var n int64
		n, more, err = r.tsRewriteBucket(tx, o, buckets, b, f, only, visit, moved)
		matched += n
		if err != nil {
			return matched, err
		}
	}
	return matched, nil
}

// tsRewriteBucket visits one bucket's matching measurements and rewrites
// it if any changed; the changed ones' new versions are added to moved.
func (r *request) tsRewriteBucket(tx *storage.Tx, o tsOptions, buckets string, b bsoncore.Document, f *query.Filter,
	only *tsPos, visit tsVisit, moved *[]bsoncore.Document) (matched int64, more bool, err error) {
	more = true
	var kept, out []bsoncore.Document // out: moved, once the bucket is rewritten
	changedAny := false
	id := b.Lookup("_id")
	for i, m := range timeseries.Unpack(b, o.timeField, o.metaField) {
		if !more || !only.is(id, i) || !f.Match(m) {
			kept = append(kept, m)
			continue
		}
		matched++
		after, changed, goOn, err := visit(m)
		if err != nil {
			return matched, false, err
		}
		more = goOn
		switch {
		case !changed:
			kept = append(kept, m)
		case after != nil:
			out = append(out, after)
		}
		changedAny = changedAny || changed
	}
	if !changedAny {
		return matched, more, nil
	}
	if err := r.tsWriteKept(tx, o, buckets, b, kept); err != nil {
		return matched, false, err
	}
	*moved = append(*moved, out...)
	return matched, more, nil
}

// tsWriteKept rewrites bucket b with only the measurements kept, in the
// same bucket (_id and start kept), or deletes it when none are left.
func (r *request) tsWriteKept(tx *storage.Tx, o tsOptions, buckets string, b bsoncore.Document, kept []bsoncore.Document) error {
	if len(kept) == 0 {
		return tx.Delete(r.ctx, buckets, b.Lookup("_id"))
	}
	old, ok := timeseries.LoadBucket(o.spec(), b)
	if !ok {
		return mongoerr.New(mongoerr.InternalError, "malformed bucket %s in %s", b.Lookup("_id"), r.ns(buckets))
	}
	nb := old.Emptied()
	for _, m := range kept {
		t, _ := m.Lookup(o.timeField).DateTimeOK()
		nb.Add(o.spec(), m, t)
	}
	return tx.Replace(r.ctx, buckets, nb.Doc(o.spec()))
}

// tsInsertMoved inserts updated measurements again.
func (r *request) tsInsertMoved(tx *storage.Tx, o tsOptions, buckets string, docs []bsoncore.Document) error {
	if len(docs) == 0 {
		return nil
	}
	b := &tsBatch{o: o, coll: buckets, dirty: map[bson.ObjectID]bool{}, inOpen: map[bson.ObjectID]bool{}}
	for _, d := range docs {
		if err := b.add(r, tx, value.DocValue(d)); err != nil {
			return err
		}
	}
	return b.flush(r, tx)
}

// tsDelete runs one delete statement on a time-series collection.
func (r *request) tsDelete(tx *storage.Tx, coll string, q bsoncore.Document, f *query.Filter, justOne bool) (int64, error) {
	return r.tsRewrite(tx, coll, q, f, nil, func(bsoncore.Document) (bsoncore.Document, bool, bool, error) {
		return nil, true, !justOne, nil
	})
}

// tsUpdate runs one update statement on a time-series collection,
// upserting a measurement when asked and none matched.
func (r *request) tsUpdate(tx *storage.Tx, coll string, q bsoncore.Document, st *updateStatement, res *writeResult) (bsoncore.Value, error) {
	var only *tsPos
	sorted := st.sort != nil && st.sort.HasKeys()
	if sorted {
		var err error
		if only, err = r.tsFirst(tx, coll, q, st.filter, st.sort); err != nil {
			return bsoncore.Value{}, err
		}
	}
	var matched, modified int64
	var err error
	if !sorted || only != nil {
		matched, err = r.tsRewrite(tx, coll, q, st.filter, only, r.tsUpdateVisit(tx, coll, st, &modified))
	}
	res.n += matched
	res.nModified += modified
	if err != nil || matched > 0 || !st.upsert {
		return bsoncore.Value{}, err
	}
	return r.tsUpsert(tx, coll, st, res)
}

// tsUpdateVisit applies an update statement to one measurement.
func (r *request) tsUpdateVisit(tx *storage.Tx, coll string, st *updateStatement, modified *int64) tsVisit {
	return func(m bsoncore.Document) (bsoncore.Document, bool, bool, error) {
		after, changed, err := st.update.Apply(m, false)
		if err != nil || !changed {
			return nil, false, st.multi, err
		}
		if after, err = normalizeDocument(after); err != nil {
			return nil, false, false, err
		}
		if _, ok := after.Lookup(tsTimeField(tx, coll)).DateTimeOK(); !ok {
			return nil, false, false, mongoerr.New(mongoerr.BadValue, "'%s' must be present and contain a valid BSON UTC datetime value", tsTimeField(tx, coll))
		}
		*modified++
		return after, true, st.multi, nil
	}
}

// tsUpsert inserts an update statement's upserted measurement.
func (r *request) tsUpsert(tx *storage.Tx, coll string, st *updateStatement, res *writeResult) (bsoncore.Value, error) {
	doc, err := upsertDocument(st.filter, st.update)
	if err != nil {
		return bsoncore.Value{}, err
	}
	info, _ := tx.Collection(coll)
	o, _ := timeseriesOf(info)
	if err := r.tsInsertMoved(tx, o, bucketsPrefix+coll, []bsoncore.Document{doc}); err != nil {
		return doc.Lookup("_id"), err
	}
	res.n++
	return doc.Lookup("_id"), nil
}

// tsTimeField is a time-series collection's time field.
func tsTimeField(tx *storage.Tx, coll string) string {
	info, _ := tx.Collection(coll)
	o, _ := timeseriesOf(info)
	return o.timeField
}

// writeTarget reports whether a delete or update goes to a time-series
// collection, and refuses one to a view.
func (r *request) writeTarget(coll string) (ts bool, err error) {
	info, ok, err := r.collectionInfo(coll)
	if err != nil || !ok {
		return false, err
	}
	if isTimeseries(info) {
		return true, r.refuseTimeseriesTxn(coll)
	}
	if info.IsView() {
		return false, r.viewWriteError(coll)
	}
	return false, nil
}

// tsFindAndModify runs findAndModify on a time-series collection: on the
// first matching measurement in the sort's order (without one, in bucket
// order), as tsDelete and tsUpdate change it.
func (r *request) tsFindAndModify(tx *storage.Tx, coll string, f *query.Filter, srt *query.Sort, u *query.Update, a *famArgs, out *famOutcome) error {
	var only *tsPos
	if srt != nil && srt.HasKeys() {
		var err error
		if only, err = r.tsFirst(tx, coll, value.OrEmpty(a.filter), f, srt); err != nil {
			return err
		}
		if only == nil {
			if !a.upsert {
				return nil
			}
			return r.tsFindAndModifyUpsert(tx, coll, f, u, a, out)
		}
	}
	timeField := tsTimeField(tx, coll)
	matched, err := r.tsRewrite(tx, coll, value.OrEmpty(a.filter), f, only, func(m bsoncore.Document) (bsoncore.Document, bool, bool, error) {
		out.n, out.value = 1, m
		if a.remove {
			out.removed = true
			return nil, true, false, nil
		}
		out.updatedExisting = true
		after, changed, err := u.Apply(m, false)
		if err != nil || !changed {
			return nil, false, false, err
		}
		if after, err = normalizeDocument(after); err != nil {
			return nil, false, false, err
		}
		if _, ok := after.Lookup(timeField).DateTimeOK(); !ok {
			return nil, false, false, mongoerr.New(mongoerr.BadValue, "'%s' must be present and contain a valid BSON UTC datetime value", timeField)
		}
		if a.returnNew {
			out.value = after
		}
		return after, true, false, nil
	})
	if err != nil {
		return planExecutorError(err)
	}
	if matched > 0 || !a.upsert {
		return nil
	}
	return r.tsFindAndModifyUpsert(tx, coll, f, u, a, out)
}

// tsFindAndModifyUpsert inserts findAndModify's upserted measurement.
func (r *request) tsFindAndModifyUpsert(tx *storage.Tx, coll string, f *query.Filter, u *query.Update, a *famArgs, out *famOutcome) error {
	doc, err := upsertDocument(f, u)
	if err != nil {
		return err
	}
	info, _ := tx.Collection(coll)
	o, _ := timeseriesOf(info)
	if err := r.tsInsertMoved(tx, o, bucketsPrefix+coll, []bsoncore.Document{doc}); err != nil {
		return planExecutorError(err)
	}
	out.n, out.upsertedID = 1, doc.Lookup("_id")
	if a.returnNew {
		out.value = doc
	}
	return nil
}
