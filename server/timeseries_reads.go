package server

import (
	"strings"

	"github.com/dumbodb/dumbodb/query"
	"github.com/dumbodb/dumbodb/storage"
	"github.com/dumbodb/dumbodb/timeseries"
	"github.com/dumbodb/dumbodb/value"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Reads of a time-series collection: it is a view of its bucket
// collection whose pipeline unpacks the buckets ($_internalUnpackBucket),
// as on mongod, so find, aggregate, count, distinct and explain take the
// views' path (views.go). A read's filter on the time field and the meta
// field is also turned into a filter on the buckets, ahead of the
// unpacking, so that only the buckets that can match are read.

// timeseriesView is a time-series collection's definition as a view.
func timeseriesView(info storage.CollectionInfo) (viewDef, bool) {
	if !isTimeseries(info) {
		return viewDef{}, false
	}
	o, _ := timeseriesOf(info)
	return viewDef{viewOn: bucketsPrefix + info.Name, pipeline: []bsoncore.Document{o.unpackStage()}}, true
}

// unpackStage is the stage that reads the measurements from the buckets.
func (o tsOptions) unpackStage() bsoncore.Document {
	return query.UnpackBucketStage(o.timeField, o.metaField, o.maxSpan)
}

// unpackOptions reads the options back from an unpack stage; false when
// stage is not one.
func unpackOptions(stage bsoncore.Document) (tsOptions, bool) {
	if value.FirstKey(stage) != "$_internalUnpackBucket" {
		return tsOptions{}, false
	}
	spec, _ := stage.Lookup("$_internalUnpackBucket").DocumentOK()
	o := tsOptions{}
	o.timeField, _ = spec.Lookup("timeField").StringValueOK()
	o.metaField, _ = spec.Lookup("metaField").StringValueOK()
	o.maxSpan, _ = value.AsInt64(spec.Lookup("bucketMaxSpanSeconds"))
	return o, o.timeField != "" && o.maxSpan > 0
}

// timeseriesPipeline puts ahead of a time-series view's unpacking the
// bucket filter of the read's leading $match (which stays after it, as
// the bucket filter only narrows). ok is false when view is not a
// time-series collection's alone.
func timeseriesPipeline(view, read []bsoncore.Document) ([]bsoncore.Document, bool) {
	if len(view) != 1 {
		return nil, false
	}
	o, ok := unpackOptions(view[0])
	if !ok {
		return nil, false
	}
	if len(read) > 0 && value.FirstKey(read[0]) == "$collStats" {
		return read, true // the figures of the buckets, which hold the data
	}
	stages := append(append([]bsoncore.Document(nil), view...), read...)
	if len(read) == 0 || !isMatchStage(read[0]) {
		return stages, true
	}
	filter, _ := read[0].Lookup("$match").DocumentOK()
	bf := o.bucketFilter(filter)
	if bf == nil {
		return stages, true
	}
	match := bsoncore.NewDocumentBuilder().AppendDocument("$match", bf).Build()
	return append([]bsoncore.Document{match}, stages...), true
}

// bucketConds gathers the conditions on buckets a filter implies.
type bucketConds struct {
	o     tsOptions
	conds []bsoncore.Document // each {path: condition}
	idLo  *bson.ObjectID
	idHi  *bson.ObjectID
}

// bucketFilter is the filter on buckets that every bucket holding a
// measurement matching filter passes; nil when filter implies nothing on
// buckets. Only top-level conditions (and those of a top-level $and) on
// the time field and the meta field are used.
func (o tsOptions) bucketFilter(filter bsoncore.Document) bsoncore.Document {
	c := &bucketConds{o: o}
	c.walk(filter)
	if c.idLo != nil || c.idHi != nil {
		ops := bsoncore.NewDocumentBuilder()
		if c.idLo != nil {
			ops.AppendObjectID("$gte", *c.idLo)
		}
		if c.idHi != nil {
			ops.AppendObjectID("$lte", *c.idHi)
		}
		c.conds = append(c.conds, bsoncore.NewDocumentBuilder().AppendDocument("_id", ops.Build()).Build())
	}
	if len(c.conds) == 0 {
		return nil
	}
	arr := bsoncore.NewArrayBuilder()
	for _, d := range c.conds {
		arr.AppendDocument(d)
	}
	return bsoncore.NewDocumentBuilder().AppendArray("$and", arr.Build()).Build()
}

// walk reads a filter's top-level conditions.
func (c *bucketConds) walk(filter bsoncore.Document) {
	els, _ := filter.Elements()
	for _, el := range els {
		k, v := el.Key(), el.Value()
		switch {
		case k == "$and":
			arr, _ := v.ArrayOK()
			vals, _ := arr.Values()
			for _, sub := range vals {
				if d, ok := sub.DocumentOK(); ok {
					c.walk(d)
				}
			}
		case k == c.o.timeField:
			c.timeCondition(v)
		case c.o.metaField != "" && (k == c.o.metaField || strings.HasPrefix(k, c.o.metaField+".")):
			// Every measurement of a bucket has the bucket's meta: the
			// condition holds of the bucket's meta exactly when of theirs.
			path := "meta" + strings.TrimPrefix(k, c.o.metaField)
			c.conds = append(c.conds, bsoncore.NewDocumentBuilder().AppendValue(path, v).Build())
		}
	}
}

// timeCondition reads a condition on the time field: a date or
// comparisons with dates.
func (c *bucketConds) timeCondition(v bsoncore.Value) {
	if t, ok := v.DateTimeOK(); ok {
		c.bound(t, true, true)
		return
	}
	ops, ok := v.DocumentOK()
	if !ok || !strings.HasPrefix(value.FirstKey(ops), "$") {
		return
	}
	els, _ := ops.Elements()
	for _, el := range els {
		t, ok := el.Value().DateTimeOK()
		if !ok {
			continue
		}
		switch el.Key() {
		case "$eq":
			c.bound(t, true, true)
		case "$gt", "$gte":
			c.bound(t, true, false)
		case "$lt", "$lte":
			c.bound(t, false, true)
		}
	}
}

// bound narrows the buckets to those that may hold a time at or after t
// (lower) and at or before t (upper): see "Time-range scans" in
// docs/format/timeseries.md.
func (c *bucketConds) bound(t int64, lower, upper bool) {
	tf := c.o.timeField
	if lower {
		c.conds = append(c.conds, timeCond("control.max."+tf, "$gte", t))
		lo := timeseries.BucketID((secondsOf(t)-c.o.maxSpan)*1000, bson.ObjectID{})
		if c.idLo == nil || string(lo[:]) > string(c.idLo[:]) {
			c.idLo = &lo
		}
	}
	if upper {
		c.conds = append(c.conds, timeCond("control.min."+tf, "$lte", t))
		var rest bson.ObjectID
		for i := 4; i < 12; i++ {
			rest[i] = 0xff
		}
		hi := timeseries.BucketID(t, rest)
		if c.idHi == nil || string(hi[:]) < string(c.idHi[:]) {
			c.idHi = &hi
		}
	}
}

func timeCond(path, op string, t int64) bsoncore.Document {
	return bsoncore.NewDocumentBuilder().
		AppendDocument(path, bsoncore.NewDocumentBuilder().AppendDateTime(op, t).Build()).Build()
}
