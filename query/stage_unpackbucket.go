package query

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"dumbodb/interrupt"
	"dumbodb/mongoerr"
	"dumbodb/value"
)

// $_internalUnpackBucket turns the buckets of a time-series collection
// (docs/format/timeseries.md) into their measurements, as mongod's stage
// of the same name does: the read of a time-series collection is this
// stage over its bucket collection.

type unpackSpec struct {
	timeField, metaField string // metaField "": none
}

func compileUnpackBucketStage(spec bsoncore.Value, _ *pipeCtx) (stage, error) {
	u, err := parseUnpackBucket(spec)
	if err != nil {
		return nil, err
	}
	return func(in Stream) Stream {
		var pending []bsoncore.Document
		var interrupt interrupt.Pacer
		return funcStream(func(ctx context.Context) (bsoncore.Document, error) {
			for len(pending) == 0 {
				b, err := in.Next(ctx)
				if err != nil {
					return nil, err
				}
				pending = u.unpack(b)
			}
			if err := interrupt.Check(ctx); err != nil {
				return nil, err
			}
			d := pending[0]
			pending = pending[1:]
			return d, nil
		})
	}, nil
}

func parseUnpackBucket(spec bsoncore.Value) (unpackSpec, error) {
	var u unpackSpec
	d, ok := spec.DocumentOK()
	if !ok {
		return u, mongoerr.New(mongoerr.Code(5346500), "$_internalUnpackBucket specification must be an object, got: %s", value.TypeName(spec.Type))
	}
	err := value.EachField(d, func(k string, v bsoncore.Value) error {
		switch k {
		case "timeField", "metaField":
			s, ok := v.StringValueOK()
			if !ok {
				return mongoerr.New(mongoerr.Code(5346504), "%s field must be a string, got: %s", k, value.TypeName(v.Type))
			}
			if k == "timeField" {
				u.timeField = s
			} else {
				u.metaField = s
			}
		case "bucketMaxSpanSeconds":
			if n, ok := value.AsInt64(v); !ok || n <= 0 {
				return mongoerr.New(mongoerr.Code(5510600), "bucketMaxSpanSeconds field must be a positive integer")
			}
		default:
			return mongoerr.New(mongoerr.Code(5346506), "unrecognized option to $_internalUnpackBucket: %s", k)
		}
		return nil
	})
	if err == nil && u.timeField == "" {
		err = mongoerr.New(mongoerr.Code(5346508), "The $_internalUnpackBucket stage requires a timeField parameter")
	}
	return u, err
}

// unpack is a bucket's measurements: measurement i has every data field
// with an "i" entry, the time field first, then the meta field, then the
// others in the bucket's order. A document that is not a bucket unpacks
// to nothing.
func (u unpackSpec) unpack(b bsoncore.Document) []bsoncore.Document {
	data, ok := b.Lookup("data").DocumentOK()
	if !ok {
		return nil
	}
	times, ok := data.Lookup(u.timeField).DocumentOK()
	if !ok {
		return nil
	}
	cols := u.columns(data)
	meta, hasMeta := bsoncore.Value{}, false
	if u.metaField != "" {
		if m, err := b.LookupErr("meta"); err == nil {
			meta, hasMeta = m, true
		}
	}
	keys, _ := times.Elements()
	out := make([]bsoncore.Document, 0, len(keys))
	for _, k := range keys {
		d := bsoncore.NewDocumentBuilder().AppendValue(u.timeField, k.Value())
		if hasMeta {
			d.AppendValue(u.metaField, meta)
		}
		for i := range cols {
			if v, ok := cols[i].at(k.Key()); ok {
				d.AppendValue(cols[i].name, v)
			}
		}
		out = append(out, d.Build())
	}
	return out
}

// column is one data field's entries, read in measurement order: the
// entries are numbered in increasing order, so each measurement's is the
// next one or absent, and a bucket unpacks in one pass over each column.
type column struct {
	name    string
	entries []bsoncore.Element
	next    int
}

// columns are data's fields but the time field.
func (u unpackSpec) columns(data bsoncore.Document) []column {
	els, _ := data.Elements()
	cols := make([]column, 0, len(els))
	for _, el := range els {
		if el.Key() == u.timeField {
			continue
		}
		d, ok := el.Value().DocumentOK()
		if !ok {
			continue
		}
		entries, _ := d.Elements()
		cols = append(cols, column{name: el.Key(), entries: entries})
	}
	return cols
}

// at is the column's entry for key, if it has one.
func (c *column) at(key string) (bsoncore.Value, bool) {
	if c.next < len(c.entries) && c.entries[c.next].Key() == key {
		c.next++
		return c.entries[c.next-1].Value(), true
	}
	return bsoncore.Value{}, false
}

// UnpackBucketStage is the stage that reads a time-series collection
// from its buckets.
func UnpackBucketStage(timeField, metaField string, maxSpanSeconds int64) bsoncore.Document {
	spec := bsoncore.NewDocumentBuilder().AppendString("timeField", timeField)
	if metaField != "" {
		spec.AppendString("metaField", metaField)
	}
	spec.AppendInt32("bucketMaxSpanSeconds", int32(maxSpanSeconds))
	return bsoncore.NewDocumentBuilder().AppendDocument("$_internalUnpackBucket", spec.Build()).Build()
}

// UnpackBucket is a bucket's measurements, as $_internalUnpackBucket
// reads them, for the writes that rewrite buckets.
func UnpackBucket(bucket bsoncore.Document, timeField, metaField string) []bsoncore.Document {
	return unpackSpec{timeField: timeField, metaField: metaField}.unpack(bucket)
}
