package query

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/interrupt"
	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/timeseries"
	"github.com/dumbodb/dumbodb/value"
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
				pending = timeseries.Unpack(b, u.timeField, u.metaField)
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
		return u, mongoerr.New(mongoerr.Location5346500, "$_internalUnpackBucket specification must be an object, got: %s", value.TypeName(spec.Type))
	}
	err := value.EachField(d, func(k string, v bsoncore.Value) error {
		switch k {
		case "timeField", "metaField":
			s, ok := v.StringValueOK()
			if !ok {
				return mongoerr.New(mongoerr.Location5346504, "%s field must be a string, got: %s", k, value.TypeName(v.Type))
			}
			if k == "timeField" {
				u.timeField = s
			} else {
				u.metaField = s
			}
		case "bucketMaxSpanSeconds":
			if n, ok := value.AsInt64(v); !ok || n <= 0 {
				return mongoerr.New(mongoerr.Location5510600, "bucketMaxSpanSeconds field must be a positive integer")
			}
		default:
			return mongoerr.New(mongoerr.Location5346506, "unrecognized option to $_internalUnpackBucket: %s", k)
		}
		return nil
	})
	if err == nil && u.timeField == "" {
		err = mongoerr.New(mongoerr.Location5346508, "The $_internalUnpackBucket stage requires a timeField parameter")
	}
	return u, err
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
