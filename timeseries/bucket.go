// Package timeseries owns the bucket format of time-series collections
// (docs/format/timeseries.md): a bucket in memory as the server's inserts
// fill it, its document, its measurements unpacked, and the three-way
// merge of two versions of a bucket. Storage merges buckets and the query
// language unpacks them, so the format stands apart from both.
package timeseries

import (
	"encoding/binary"
	"math"
	"sort"
	"strconv"

	"github.com/dumbodb/dumbodb/value"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// A bucket of a time-series collection in memory, as the server's inserts
// fill it and a merge of two branches joins two versions of it. The
// server decides which bucket a measurement goes into.

// Spec is what a bucket's layout depends on: the time-series
// collection's fields and bucketing, in seconds.
type Spec struct {
	TimeField, MetaField string // MetaField "": none
	MaxSpan, Rounding    int64
}

// Bucket limits: mongod's timeseriesBucketMaxCount and
// timeseriesBucketMaxSize defaults.
const (
	bucketMaxCount = 1000
	bucketMaxBytes = 128000
)

// Bucket is one bucket being filled.
type Bucket struct {
	ID      bson.ObjectID
	Start   int64 // control.min.<timeField>, ms
	maxTime int64 // control.max.<timeField>, ms
	Meta    bsoncore.Value
	count   int
	bytes   int
	fields  []string          // data's fields, in order of appearance
	columns map[string][]byte // each field's {"i": value} elements
	min     map[string]bsoncore.Value
	max     map[string]bsoncore.Value
	Stored  bool // already in the bucket collection: replaced, not inserted
}

// NewBucket starts a bucket for a first measurement at t (ms).
func NewBucket(s Spec, t int64, meta bsoncore.Value) *Bucket {
	start := roundDown(t, s.Rounding*1000)
	b := emptyBucket(BucketID(start, bson.NewObjectID()), start, meta)
	b.maxTime = t
	return b
}

// emptyBucket is a bucket with no measurements yet.
func emptyBucket(id bson.ObjectID, start int64, meta bsoncore.Value) *Bucket {
	return &Bucket{ID: id, Start: start, maxTime: start, Meta: meta, columns: map[string][]byte{},
		min: map[string]bsoncore.Value{}, max: map[string]bsoncore.Value{}}
}

// Emptied is b without its measurements: the same _id, start and meta,
// to refill with those a write keeps.
func (b *Bucket) Emptied() *Bucket { return emptyBucket(b.ID, b.Start, b.Meta) }

// roundDown rounds ms down to a multiple of unit, towards the past even
// before 1970.
func roundDown(ms, unit int64) int64 {
	r := ms - ms%unit
	if r > ms {
		r -= unit
	}
	return r
}

// BucketID is an ObjectId whose time is start's seconds (clamped to what
// an ObjectId holds, which keeps _id bounds of time ranges sound) and
// whose other 8 bytes are rest's.
func BucketID(startMS int64, rest bson.ObjectID) bson.ObjectID {
	binary.BigEndian.PutUint32(rest[:4], oidSeconds(value.FloorDiv(startMS, 1000)))
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

// Fits reports whether a measurement at t (ms) of size bytes may go into
// b (its meta already equal).
func (b *Bucket) Fits(s Spec, t int64, size int) bool {
	return b.Start <= t && t < b.Start+s.MaxSpan*1000 && b.count < bucketMaxCount && b.bytes+size <= bucketMaxBytes
}

// Add appends a measurement at t (ms): every field but the metaField
// becomes a column entry, and the control's min and max follow.
func (b *Bucket) Add(s Spec, doc bsoncore.Document, t int64) {
	key := strconv.Itoa(b.count)
	els, _ := doc.Elements()
	for _, el := range els {
		k := el.Key()
		if k == s.MetaField && s.MetaField != "" {
			continue
		}
		v := el.Value()
		col, seen := b.columns[k]
		if !seen {
			b.fields = append(b.fields, k)
		}
		b.columns[k] = bsoncore.AppendValueElement(col, key, v)
		if k != s.TimeField {
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
func (b *Bucket) widen(k string, v bsoncore.Value) {
	if cur, ok := b.min[k]; !ok || value.Compare(v, cur) < 0 {
		b.min[k] = v
	}
	if cur, ok := b.max[k]; !ok || value.Compare(v, cur) > 0 {
		b.max[k] = v
	}
}

// Doc is the bucket document.
func (b *Bucket) Doc(s Spec) bsoncore.Document {
	control := bsoncore.NewDocumentBuilder().AppendInt32("version", 1).
		AppendDocument("min", b.bounds(s, b.min, b.Start)).
		AppendDocument("max", b.bounds(s, b.max, b.maxTime)).
		AppendInt32("count", int32(b.count)).Build()
	out := bsoncore.NewDocumentBuilder().AppendObjectID("_id", b.ID).AppendDocument("control", control)
	if b.Meta.Type != 0 {
		out.AppendValue("meta", b.Meta)
	}
	data := bsoncore.NewDocumentBuilder()
	for _, k := range b.fields {
		data.AppendDocument(k, columnDoc(b.columns[k]))
	}
	return out.AppendDocument("data", data.Build()).Build()
}

// bounds is control.min or control.max: the time field's, then the other
// fields' in data's order.
func (b *Bucket) bounds(s Spec, vals map[string]bsoncore.Value, t int64) bsoncore.Document {
	d := bsoncore.NewDocumentBuilder()
	for _, k := range b.fields {
		if k == s.TimeField {
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

// LoadBucket reads a stored bucket back for more measurements; false for
// a document that is not a well-formed bucket of s (left alone).
func LoadBucket(s Spec, doc bsoncore.Document) (*Bucket, bool) {
	id, ok := doc.Lookup("_id").ObjectIDOK()
	if !ok {
		return nil, false
	}
	start, ok1 := doc.Lookup("control", "min", s.TimeField).DateTimeOK()
	maxT, ok2 := doc.Lookup("control", "max", s.TimeField).DateTimeOK()
	data, ok3 := doc.Lookup("data").DocumentOK()
	if !ok1 || !ok2 || !ok3 {
		return nil, false
	}
	var meta bsoncore.Value
	if m, err := doc.LookupErr("meta"); err == nil {
		meta = m
	}
	b := emptyBucket(id, start, meta)
	b.maxTime, b.Stored, b.bytes = maxT, true, len(doc)
	cols, _ := data.Elements()
	for _, c := range cols {
		cd, ok := c.Value().DocumentOK()
		if !ok || len(cd) < 5 {
			return nil, false
		}
		b.fields = append(b.fields, c.Key())
		b.columns[c.Key()] = append([]byte(nil), cd[4:len(cd)-1]...)
	}
	b.count = bucketCount(s, doc, data)
	b.loadBounds(doc)
	return b, b.count > 0
}

// loadBounds reads control.min and max of the fields other than time.
func (b *Bucket) loadBounds(doc bsoncore.Document) {
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
func bucketCount(s Spec, doc, data bsoncore.Document) int {
	if n, ok := doc.Lookup("control", "count").Int32OK(); ok && n > 0 {
		return int(n)
	}
	times, _ := data.Lookup(s.TimeField).DocumentOK()
	vals, _ := times.Values()
	return len(vals)
}

// SpecOf reads a bucket collection's spec from its options'
// timeseries ({timeField, metaField?, granularity | bucketRoundingSeconds,
// bucketMaxSpanSeconds}, docs/format/timeseries.md); false without one.
func SpecOf(options bsoncore.Document) (Spec, bool) {
	d, ok := options.Lookup("timeseries").DocumentOK()
	if !ok {
		return Spec{}, false
	}
	var s Spec
	s.TimeField, _ = d.Lookup("timeField").StringValueOK()
	s.MetaField, _ = d.Lookup("metaField").StringValueOK()
	s.MaxSpan, _ = value.AsInt64(d.Lookup("bucketMaxSpanSeconds"))
	if g, ok := d.Lookup("granularity").StringValueOK(); ok {
		s.Rounding = granularityRounding[g]
	} else {
		s.Rounding, _ = value.AsInt64(d.Lookup("bucketRoundingSeconds"))
	}
	return s, s.TimeField != "" && s.MaxSpan > 0 && s.Rounding > 0
}

// granularityRounding is each granularity's rounding seconds (mongod's
// getBucketRoundingSecondsFromGranularity).
var granularityRounding = map[string]int64{"seconds": 60, "minutes": 3600, "hours": 86400}

// MergeBuckets merges two versions of a bucket changed on both sides of a
// merge: its measurements are a multiset, and each measurement is kept as
// many times as ours and theirs have it, less the base's (what either side
// deleted is gone, what either side added is there), ours first, then
// theirs' additions. A nil ours or theirs is a side that deleted the
// bucket: it has no measurements. The result is nil (and true) when none
// are left: the bucket is deleted. false when the versions are not of one
// bucket (their meta or start differ).
func MergeBuckets(s Spec, base, ours, theirs bsoncore.Document) (bsoncore.Document, bool) {
	shape, ok := sameBucket(s, ours, theirs)
	if !ok {
		return nil, false
	}
	baseCount := map[string]int{}
	if base != nil {
		for _, m := range Unpack(base, s.TimeField, s.MetaField) {
			baseCount[measurementKey(m)]++
		}
	}
	kept := mergeMeasurements(baseCount, unpackOrNone(s, ours), unpackOrNone(s, theirs))
	if len(kept) == 0 {
		return nil, true
	}
	out := shape.Emptied()
	for _, m := range kept {
		tm, _ := m.Lookup(s.TimeField).DateTimeOK()
		out.Add(s, m, tm)
	}
	return out.Doc(s), true
}

// sameBucket is the bucket the two versions (one may be nil) are of;
// false when they are not of one bucket.
func sameBucket(s Spec, ours, theirs bsoncore.Document) (*Bucket, bool) {
	var b *Bucket
	for _, d := range []bsoncore.Document{ours, theirs} {
		if d == nil {
			continue
		}
		v, ok := LoadBucket(s, d)
		if !ok || b != nil && (b.Start != v.Start || !value.Same(b.Meta, v.Meta)) {
			return nil, false
		}
		if b == nil {
			b = v
		}
	}
	return b, b != nil
}

func unpackOrNone(s Spec, b bsoncore.Document) []bsoncore.Document {
	if b == nil {
		return nil
	}
	return Unpack(b, s.TimeField, s.MetaField)
}

// mergeMeasurements is the three-way merge of measurement multisets: a
// measurement the base has B times, ours O and theirs T times is kept
// max(0, O+T-B) times: ours' copies of the base's that both sides kept,
// then the copies each side added.
func mergeMeasurements(base map[string]int, ours, theirs []bsoncore.Document) []bsoncore.Document {
	oc, tc := countOf(ours), countOf(theirs)
	var kept []bsoncore.Document
	seen := map[string]int{}
	for _, m := range ours {
		k := measurementKey(m)
		seen[k]++
		b := base[k]
		if seen[k] > b || seen[k] <= min(oc[k], b)+min(tc[k], b)-b {
			kept = append(kept, m)
		}
	}
	seen = map[string]int{}
	for _, m := range theirs {
		k := measurementKey(m)
		seen[k]++
		if seen[k] > base[k] {
			kept = append(kept, m)
		}
	}
	return kept
}

func countOf(docs []bsoncore.Document) map[string]int {
	c := make(map[string]int, len(docs))
	for _, d := range docs {
		c[measurementKey(d)]++
	}
	return c
}

// measurementKey identifies a measurement whatever the order of its
// fields, which follows its bucket's columns: a rewrite of a bucket may
// order them differently.
func measurementKey(m bsoncore.Document) string {
	els, _ := m.Elements()
	sort.Slice(els, func(i, j int) bool { return els[i].Key() < els[j].Key() })
	var b []byte
	for _, el := range els {
		b = append(b, el...)
	}
	return string(b)
}
