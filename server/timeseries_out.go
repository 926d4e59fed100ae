package server

import (
	"context"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/storage"
	"github.com/dumbodb/dumbodb/value"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// $out into a time-series collection (MongoDB 7.0.3): with $out's
// timeseries option it creates one, or replaces the measurements of one
// with the same options; without it, an existing time-series collection
// keeps its options and gets the pipeline's documents as measurements.
// $merge into one is refused as into any view.

// refuseWriteToView refuses $out and $merge into a view, and $merge into a
// time-series collection (mongod's are views).
func refuseWriteToView(info storage.CollectionInfo, db, coll string) error {
	if info.IsView() {
		return mongoerr.New(mongoerr.CommandNotSupportedOnView, "Namespace %s.%s is a view, not a collection", db, coll)
	}
	return nil
}

// ReplaceTimeseries is $out with timeseries.
func (w aggWriter) ReplaceTimeseries(ctx context.Context, db, coll string, ts bsoncore.Document, docs []bsoncore.Document) error {
	o, err := parseTimeseries(value.DocValue(ts))
	if err != nil {
		return err
	}
	return w.tx(ctx, db, coll, func(tx *storage.Tx) error {
		return w.r.replaceTimeseries(ctx, tx, coll, &o, docs)
	})
}

// replaceTimeseries makes docs the measurements of the time-series
// collection coll, made with o when it does not exist; o nil: coll exists
// and keeps its options.
func (r *request) replaceTimeseries(ctx context.Context, tx *storage.Tx, coll string, o *tsOptions, docs []bsoncore.Document) error {
	own, opts, err := r.outTimeseriesOptions(tx, coll, o)
	if err != nil {
		return err
	}
	if _, exists := tx.Collection(coll); exists {
		if err := dropTimeseries(tx, coll); err != nil {
			return err
		}
		if err := tx.DropCollection(coll); err != nil {
			return err
		}
	}
	if err := createTimeseriesIn(ctx, tx, coll, opts, own); err != nil {
		return toMongoErr(err)
	}
	b := &tsBatch{o: opts, coll: bucketsPrefix + coll, dirty: map[bson.ObjectID]bool{}, inOpen: map[bson.ObjectID]bool{}}
	for _, d := range docs {
		if err := b.add(r, tx, value.DocValue(d)); err != nil {
			return err
		}
	}
	return b.flush(r, tx)
}

// outTimeseriesOptions are the options of $out's target: an existing
// time-series collection's (which o, when given, must equal), or o's for a
// new one.
func (r *request) outTimeseriesOptions(tx *storage.Tx, coll string, o *tsOptions) (bsoncore.Document, tsOptions, error) {
	info, exists := tx.Collection(coll)
	if !exists {
		own, err := o.entryOptions(bsoncore.Value{})
		return own, *o, err
	}
	cur, ts := timeseriesOf(info)
	switch {
	case !isTimeseries(info) || !ts:
		return nil, tsOptions{}, mongoerr.New(mongoerr.InvalidOptions,
			"Cannot create a time-series collection %s with $out: a collection of that name exists", r.ns(coll))
	case o != nil && *o != cur:
		return nil, tsOptions{}, mongoerr.New(mongoerr.InvalidOptions,
			"Time-series options %s of $out differ from those of the existing collection %s: %s", o.doc(), r.ns(coll), cur.doc())
	}
	return info.Options, cur, nil
}
