package server

import (
	"encoding/binary"
	"math"
	"strconv"

	"dumbodb/query/value"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// A bucket of a time-series collection in memory, as an insert fills it;
// docs/format/timeseries.md describes the document it becomes.

// Bucket limits: mongod's timeseriesBucketMaxCount and
// timeseriesBucketMaxSize defaults.
const (
	bucketMaxCount = 1000
	bucketMaxBytes = 128000
)

// bucket is one bucket being filled.
type bucket struct {
	id      bson.ObjectID
	start   int64 // control.min.<timeField>, ms
	maxTime int64 // control.max.<timeField>, ms
	meta    bsoncore.Value
	count   int
	bytes   int
	fields  []string          // data's fields, in order of appearance
	columns map[string][]byte // each field's {"i": value} elements
	min     map[string]bsoncore.Value
	max     map[string]bsoncore.Value
	stored  bool // already in the bucket collection: replaced, not inserted
}

// newBucket starts a bucket for a first measurement at t (ms).
func newBucket(o tsOptions, t int64, meta bsoncore.Value) *bucket {
	start := roundDown(t, o.rounding*1000)
	b := &bucket{start: start, maxTime: t, meta: meta, columns: map[string][]byte{},
		min: map[string]bsoncore.Value{}, max: map[string]bsoncore.Value{}}
	b.id = bucketID(start, bson.NewObjectID())
	return b
}

// roundDown rounds ms down to a multiple of unit, towards the past even
// before 1970.
func roundDown(ms, unit int64) int64 {
	r := ms - ms%unit
	if r > ms {
		r -= unit
	}
	return r
}

// bucketID is an ObjectId whose time is start's seconds (clamped to what
// an ObjectId holds, which keeps _id bounds of time ranges sound) and
// whose other 8 bytes are rest's.
func bucketID(startMS int64, rest bson.ObjectID) bson.ObjectID {
	binary.BigEndian.PutUint32(rest[:4], oidSeconds(floorDiv(startMS, 1000)))
	return rest
}

// oidSeconds clamps seconds since 1970 into an ObjectId's 4 bytes.
func oidSeconds(s int64) uint32 {
	switch {
	case s < 0:
		return 0
	case s > math.MaxUint32:
		return math.MaxUint32
	}
	return uint32(s)
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// fits reports whether a measurement at t (ms) of size bytes may go into
// b (its meta already equal).
func (b *bucket) fits(o tsOptions, t int64, size int) bool {
	return b.start <= t && t < b.start+o.maxSpan*1000 && b.count < bucketMaxCount && b.bytes+size <= bucketMaxBytes
}

// add appends a measurement: every field but the metaField becomes a
// column entry, and the control's min and max follow.
func (b *bucket) add(o tsOptions, doc bsoncore.Document, t int64) {
	key := strconv.Itoa(b.count)
	els, _ := doc.Elements()
	for _, el := range els {
		k := el.Key()
		if k == o.metaField && o.metaField != "" {
			continue
		}
		v := el.Value()
		col, seen := b.columns[k]
		if !seen {
			b.fields = append(b.fields, k)
		}
		b.columns[k] = bsoncore.AppendValueElement(col, key, v)
		if k != o.timeField {
			b.widen(k, v)
		}
	}
	if t > b.maxTime {
		b.maxTime = t
	}
	b.count++
	b.bytes += len(doc)
}

// widen takes v into field k's min and max.
func (b *bucket) widen(k string, v bsoncore.Value) {
	if cur, ok := b.min[k]; !ok || value.Compare(v, cur) < 0 {
		b.min[k] = v
	}
	if cur, ok := b.max[k]; !ok || value.Compare(v, cur) > 0 {
		b.max[k] = v
	}
}

// doc is the bucket document.
func (b *bucket) doc(o tsOptions) bsoncore.Document {
	control := bsoncore.NewDocumentBuilder().AppendInt32("version", 1).
		AppendDocument("min", b.bounds(o, b.min, b.start)).
		AppendDocument("max", b.bounds(o, b.max, b.maxTime)).
		AppendInt32("count", int32(b.count)).Build()
	out := bsoncore.NewDocumentBuilder().AppendObjectID("_id", b.id).AppendDocument("control", control)
	if b.meta.Type != 0 {
		out.AppendValue("meta", b.meta)
	}
	data := bsoncore.NewDocumentBuilder()
	for _, k := range b.fields {
		data.AppendDocument(k, columnDoc(b.columns[k]))
	}
	return out.AppendDocument("data", data.Build()).Build()
}

// bounds is control.min or control.max: the time field's, then the other
// fields' in data's order.
func (b *bucket) bounds(o tsOptions, vals map[string]bsoncore.Value, t int64) bsoncore.Document {
	d := bsoncore.NewDocumentBuilder()
	for _, k := range b.fields {
		if k == o.timeField {
			d.AppendDateTime(k, t)
		} else if v, ok := vals[k]; ok {
			d.AppendValue(k, v)
		}
	}
	return d.Build()
}

// columnDoc wraps a column's elements as a document.
func columnDoc(elems []byte) bsoncore.Document {
	idx, d := bsoncore.AppendDocumentStart(make([]byte, 0, len(elems)+5))
	d = append(d, elems...)
	d, _ = bsoncore.AppendDocumentEnd(d, idx)
	return d
}

// loadBucket reads a stored bucket back for more measurements; false for
// a document that is not a well-formed bucket of o (left alone).
func loadBucket(o tsOptions, doc bsoncore.Document) (*bucket, bool) {
	id, ok := doc.Lookup("_id").ObjectIDOK()
	if !ok {
		return nil, false
	}
	start, ok1 := doc.Lookup("control", "min", o.timeField).DateTimeOK()
	maxT, ok2 := doc.Lookup("control", "max", o.timeField).DateTimeOK()
	data, ok3 := doc.Lookup("data").DocumentOK()
	if !ok1 || !ok2 || !ok3 {
		return nil, false
	}
	b := &bucket{id: id, start: start, maxTime: maxT, columns: map[string][]byte{},
		min: map[string]bsoncore.Value{}, max: map[string]bsoncore.Value{}, stored: true, bytes: len(doc)}
	if m, err := doc.LookupErr("meta"); err == nil {
		b.meta = m
	}
	cols, _ := data.Elements()
	for _, c := range cols {
		cd, ok := c.Value().DocumentOK()
		if !ok || len(cd) < 5 {
			return nil, false
		}
		b.fields = append(b.fields, c.Key())
		b.columns[c.Key()] = append([]byte(nil), cd[4:len(cd)-1]...)
	}
	b.count = bucketCount(o, doc, data)
	b.loadBounds(doc)
	return b, b.count > 0
}

// loadBounds reads control.min and max of the fields other than time.
func (b *bucket) loadBounds(doc bsoncore.Document) {
	for name, dst := range map[string]map[string]bsoncore.Value{"min": b.min, "max": b.max} {
		d, _ := doc.Lookup("control", name).DocumentOK()
		els, _ := d.Elements()
		for _, el := range els {
			dst[el.Key()] = el.Value()
		}
	}
}

// bucketCount is a bucket's number of measurements: DumboDB's
// control.count, else (a bucket written otherwise) the time column's.
func bucketCount(o tsOptions, doc, data bsoncore.Document) int {
	if n, ok := doc.Lookup("control", "count").Int32OK(); ok && n > 0 {
		return int(n)
	}
	times, _ := data.Lookup(o.timeField).DocumentOK()
	vals, _ := times.Values()
	return len(vals)
}
