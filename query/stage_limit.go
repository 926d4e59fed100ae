package query

import (
	"context"
	"io"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/mongoerr"
)

// $limit and $skip: the first n documents, or all but them.

func positiveStageArg(name string, spec bsoncore.Value, allowZero bool) (int64, error) {
	n, ok := spec.AsInt64OK()
	if !ok {
		if f, isF := spec.DoubleOK(); isF && f == float64(int64(f)) {
			n, ok = int64(f), true
		}
	}
	if !ok {
		return 0, mongoerr.New(mongoerr.Location15957, "the %s must be specified as a number", name)
	}
	if n < 0 || (n == 0 && !allowZero) {
		return 0, mongoerr.New(mongoerr.Location15958, "the %s must be positive", name)
	}
	return n, nil
}

func compileLimitStage(spec bsoncore.Value, _ *pipeCtx) (stage, error) {
	n, err := positiveStageArg("limit", spec, false)
	if err != nil {
		return nil, err
	}
	return func(in Stream) Stream {
		var seen int64
		return funcStream(func(ctx context.Context) (bsoncore.Document, error) {
			if seen >= n {
				return nil, io.EOF
			}
			seen++
			return in.Next(ctx)
		})
	}, nil
}

func compileSkipStage(spec bsoncore.Value, _ *pipeCtx) (stage, error) {
	n, err := positiveStageArg("skip", spec, true)
	if err != nil {
		return nil, err
	}
	return func(in Stream) Stream {
		skipped := int64(0)
		return funcStream(func(ctx context.Context) (bsoncore.Document, error) {
			for ; skipped < n; skipped++ {
				if _, err := in.Next(ctx); err != nil {
					return nil, err
				}
			}
			return in.Next(ctx)
		})
	}, nil
}
