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

// Inserts into a time-series collection: each measurement goes into a
// bucket of system.buckets.<name> (docs/format/timeseries.md says which).
// A batch fills its buckets in memory and writes each once at its end, so
// that a thousand measurements into one bucket write it once, not a
// thousand times (each write of a bucket logs a patch of it).

// tsBatch is the buckets one insert command fills.
type tsBatch struct {
	o       tsOptions
	coll    string                          // the bucket collection
	open    map[string][]*timeseries.Bucket // by metaKey
	touched []*timeseries.Bucket            // changed since the last flush, in order of first change
	dirty   map[bson.ObjectID]bool
	inOpen  map[bson.ObjectID]bool
}

// insertTimeseries runs an insert into the time-series collection coll.
func (r *request) insertTimeseries(coll string, vals []bsoncore.Value, ordered bool) (bsoncore.Document, error) {
	if err := r.refuseTimeseriesTxn(coll); err != nil {
		return nil, err
	}
	var res writeResult
	err := r.write(func(tx *storage.Tx) error {
		res = writeResult{}
		info, ok := tx.Collection(coll)
		o, isTS := timeseriesOf(info)
		if !ok || !isTS {
			return mongoerr.New(mongoerr.NamespaceNotFound, "time-series collection %s was dropped", r.ns(coll))
		}
		b := &tsBatch{o: o, coll: bucketsPrefix + coll, dirty: map[bson.ObjectID]bool{}, inOpen: map[bson.ObjectID]bool{}}
		err := res.runBatch(r, tx, r.ns(coll), vals, ordered, func(i int, v bsoncore.Value) (bsoncore.Value, error) {
			if err := b.add(r, tx, v); err != nil {
				return bsoncore.Value{}, err
			}
			res.n++
			if r.retry != nil {
				// runBatch records an outcome for a statement that changed
				// the transaction, which this one does only at the flush:
				// record it here. The flush is in the same transaction,
				// so the outcomes and the buckets commit together.
				tx.RecordOutcome(r.retry.session, r.retry.txn, r.retry.stmtID(i), batchOutcome(1, 0, bsoncore.Value{}))
			}
			return bsoncore.Value{}, nil
		})
		if err != nil {
			return err
		}
		if err := b.flush(r, tx); err != nil || res.n == 0 {
			return err
		}
		return r.primaryWrites.commandWrote(r.retry)
	})
	if err != nil {
		return nil, err
	}
	r.c.s.stats.opInsert.Add(res.n)
	return res.reply(false), nil
}

// add puts one measurement into its bucket.
func (b *tsBatch) add(r *request, tx *storage.Tx, v bsoncore.Value) error {
	doc, err := prepareInsert(v)
	if err != nil {
		return err
	}
	t, ok := doc.Lookup(b.o.timeField).DateTimeOK()
	if !ok {
		return mongoerr.New(mongoerr.BadValue, "'%s' must be present and contain a valid BSON UTC datetime value", b.o.timeField)
	}
	var meta bsoncore.Value
	if b.o.metaField != "" {
		meta, _ = value.LookupField(doc, b.o.metaField)
	}
	bk, err := b.bucketFor(r, tx, t, meta, len(doc))
	if err != nil {
		return err
	}
	bk.Add(b.o.spec(), doc, t)
	if !b.dirty[bk.ID] {
		b.dirty[bk.ID] = true
		b.touched = append(b.touched, bk)
	}
	return nil
}

// bucketFor finds the bucket a measurement at t with meta goes into: an
// open one of this batch, else a stored one, else a new one.
func (b *tsBatch) bucketFor(r *request, tx *storage.Tx, t int64, meta bsoncore.Value, size int) (*timeseries.Bucket, error) {
	for _, bk := range b.open[metaKey(meta)] {
		if bk.Fits(b.o.spec(), t, size) {
			return bk, nil
		}
	}
	bk, err := b.storedBucket(r, tx, t, meta, size)
	if err != nil || bk != nil {
		return bk, err
	}
	bk = timeseries.NewBucket(b.o.spec(), t, meta)
	b.keepOpen(bk)
	return bk, nil
}

// storedBucket looks for a stored bucket the measurement fits into. A
// bucket holding t starts less than the span before it, and its _id's time
// is its start: only that range of _ids is read, or with the meta index
// (mongod's default one) only that range of the meta's buckets.
func (b *tsBatch) storedBucket(r *request, tx *storage.Tx, t int64, meta bsoncore.Value, size int) (*timeseries.Bucket, error) {
	f, err := query.CompileFilter(b.candidates(t, meta))
	if err != nil {
		return nil, err
	}
	src, err := plan.Matching(r.ctx, tx, b.coll, f)
	if err != nil {
		return nil, err
	}
	for {
		doc, err := src.Next(r.ctx)
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		id, _ := doc.Lookup("_id").ObjectIDOK()
		if b.inOpen[id] {
			continue // already open in this batch, and it did not fit
		}
		m, _ := doc.LookupErr("meta")
		if !value.Same(m, meta) {
			continue
		}
		if bk, ok := timeseries.LoadBucket(b.o.spec(), doc); ok && bk.Fits(b.o.spec(), t, size) {
			b.keepOpen(bk)
			return bk, nil
		}
	}
}

// candidates is the filter of the buckets a measurement at t with meta may
// go into: those starting in the span before t, of its meta.
func (b *tsBatch) candidates(t int64, meta bsoncore.Value) bsoncore.Document {
	secs := secondsOf(t)
	var hi bson.ObjectID
	for i := 4; i < 12; i++ {
		hi[i] = 0xff
	}
	lo, hi := timeseries.BucketID((secs-b.o.maxSpan)*1000, bson.ObjectID{}), timeseries.BucketID(secs*1000, hi)
	f := bsoncore.NewDocumentBuilder().AppendDocument("_id", bsoncore.NewDocumentBuilder().
		AppendObjectID("$gte", lo).AppendObjectID("$lte", hi).Build())
	switch {
	case meta.Type != 0:
		// $eq: a meta document whose first field starts with $ is a value.
		f.AppendDocument("meta", bsoncore.NewDocumentBuilder().AppendValue("$eq", meta).Build())
	case b.o.metaField != "":
		f.AppendDocument("meta", bsoncore.NewDocumentBuilder().AppendBoolean("$exists", false).Build())
	}
	start := bsoncore.NewDocumentBuilder().AppendDateTime("$gt", t-b.o.maxSpan*1000).AppendDateTime("$lte", t).Build()
	return f.AppendDocument("control.min."+b.o.timeField, start).Build()
}

// keepOpen keeps bk for the batch's next measurements.
func (b *tsBatch) keepOpen(bk *timeseries.Bucket) {
	if b.open == nil {
		b.open = map[string][]*timeseries.Bucket{}
	}
	k := metaKey(bk.Meta)
	b.open[k] = append(b.open[k], bk)
	b.inOpen[bk.ID] = true
}

// metaKey identifies a meta value (Type 0: absent) as mongod groups
// measurements: by its BSON type and bytes.
func metaKey(v bsoncore.Value) string {
	return string(append([]byte{byte(v.Type)}, v.Data...))
}

// flush writes the buckets the batch changed since the last flush.
func (b *tsBatch) flush(r *request, tx *storage.Tx) error {
	defer func() { b.touched, b.dirty = nil, map[bson.ObjectID]bool{} }()
	for _, bk := range b.touched {
		doc := bk.Doc(b.o.spec())
		var err error
		if bk.Stored {
			err = tx.Replace(r.ctx, b.coll, doc)
		} else {
			err = tx.Insert(r.ctx, b.coll, doc)
		}
		if err != nil {
			return err
		}
		bk.Stored = true
	}
	return nil
}
