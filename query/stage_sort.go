package query

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/value"
)

// $sort: a stable sort of the whole input, which spills sorted runs past
// the memory budget (sortStream, stage_memory.go).

func compileSortStage(spec bsoncore.Value, pc *pipeCtx) (stage, error) {
	if spec.Type != bsoncore.TypeEmbeddedDocument {
		return nil, mongoerr.New(mongoerr.Location15973, "the $sort key specification must be an object")
	}
	if value.ArrayLen(spec.Data) == 0 {
		return nil, mongoerr.New(mongoerr.Location15976, "$sort stage must have at least one sort key")
	}
	s, err := compileSort(spec.Data, pc.env, pc.text)
	if err != nil {
		return nil, err
	}
	return func(in Stream) Stream {
		return lazyStream(func(ctx context.Context) (Stream, error) {
			return sortStream(ctx, in, s.Compare, pc.budget("$sort"))
		})
	}, nil
}
