package query

import (
	"context"
	"errors"
	"io"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/value"
)

// $unionWith appends another collection's documents, optionally through a
// pipeline, after the input.
func compileUnionWithStage(spec bsoncore.Value, pc *pipeCtx) (stage, error) {
	var coll string
	var sub *Pipeline
	switch spec.Type {
	case bsoncore.TypeString:
		coll = spec.StringValue()
	case bsoncore.TypeEmbeddedDocument:
		err := value.EachField(spec.Data, func(k string, v bsoncore.Value) (err error) {
			switch k {
			case "coll":
				coll, err = lookupFrom(v, pc)
			case "pipeline":
				if v.Type != bsoncore.TypeArray {
					return mongoerr.New(mongoerr.TypeMismatch, "BSON field '$unionWith.pipeline' is the wrong type '%s', expected type 'array'", value.TypeName(v.Type))
				}
				sub, err = compileStages(v, &pipeCtx{opts: pc.opts, env: pc.env, within: "$unionWith"})
			default:
				err = mongoerr.New(mongoerr.Location40415, "BSON field '$unionWith.%s' is an unknown field.", k)
			}
			return err
		})
		if err != nil {
			return nil, err
		}
	default:
		return nil, mongoerr.New(mongoerr.FailedToParse, "the $unionWith stage specification must be an object or string, but found %s", value.TypeName(spec.Type))
	}
	if coll == "" && (sub == nil || len(sub.specs) == 0 || value.FirstKey(sub.specs[0]) != "$documents") {
		return nil, mongoerr.New(mongoerr.Location40414, "BSON field '$unionWith.coll' is missing but a required field")
	}
	return func(in Stream) Stream {
		var other Stream
		inDone := false
		return funcStream(func(ctx context.Context) (bsoncore.Document, error) {
			if !inDone {
				d, err := in.Next(ctx)
				if !errors.Is(err, io.EOF) {
					return d, err
				}
				inDone = true
			}
			if other == nil {
				// Streamed, not loaded: the sub-pipeline's blocking
				// stages account for what they hold.
				s, err := scanCollection(ctx, pc, coll)
				if err != nil {
					return nil, err
				}
				other = s
				if sub != nil {
					other = sub.connect(other)
				}
			}
			return other.Next(ctx)
		})
	}, nil
}
