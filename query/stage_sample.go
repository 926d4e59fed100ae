package query

import (
	"context"
	"math/rand/v2"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/value"
)

// $sample: a random sample of at most size documents of the input.

func compileSampleStage(spec bsoncore.Value, pc *pipeCtx) (stage, error) {
	if spec.Type != bsoncore.TypeEmbeddedDocument {
		return nil, mongoerr.New(mongoerr.Location28745, "the $sample stage specification must be an object")
	}
	size := int64(-1)
	it := value.NewIter(spec.Data)
	for {
		k, v, ok := it.Next()
		if !ok {
			break
		}
		if string(k) != "size" {
			return nil, mongoerr.New(mongoerr.Location28748, "unrecognized option to $sample: %s", k)
		}
		if !value.IsNumber(v) {
			return nil, mongoerr.New(mongoerr.Location28746, "size argument to $sample must be a number")
		}
		if size = int64(value.ToFloat(v)); size < 0 {
			return nil, mongoerr.New(mongoerr.Location28747, "size argument to $sample must not be negative")
		}
	}
	if size < 0 {
		return nil, mongoerr.New(mongoerr.Location28749, "$sample stage must specify a size")
	}
	return func(in Stream) Stream {
		return lazyStream(func(ctx context.Context) (Stream, error) {
			docs, err := drainBudget(ctx, in, pc.budget("$sample"))
			if err != nil {
				return nil, err
			}
			rand.Shuffle(len(docs), func(i, j int) { docs[i], docs[j] = docs[j], docs[i] })
			return &sliceStream{docs: docs[:min(int64(len(docs)), size)]}, nil
		})
	}, nil
}
