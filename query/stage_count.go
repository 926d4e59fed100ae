package query

import (
	"context"
	"errors"
	"io"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/value"
)

// $count: the number of input documents, as one document of one field.

func compileCountStage(spec bsoncore.Value, _ *pipeCtx) (stage, error) {
	field, ok := spec.StringValueOK()
	switch {
	case !ok:
		return nil, mongoerr.New(mongoerr.Location40156, "the count field must be a non-empty string")
	case field == "":
		return nil, mongoerr.New(mongoerr.Location40157, "the count field must be a non-empty string")
	case field[0] == '$':
		return nil, mongoerr.New(mongoerr.Location40158, "the count field cannot be a $-prefixed path")
	case strings.Contains(field, "."):
		return nil, mongoerr.New(mongoerr.Location40160, "the count field cannot contain '.'")
	}
	if err := value.CheckNoNul(field); err != nil {
		return nil, err
	}
	return func(in Stream) Stream {
		return lazyStream(func(ctx context.Context) (Stream, error) {
			var n int64
			for {
				_, err := in.Next(ctx)
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					return nil, err
				}
				n++
			}
			if n == 0 {
				return &sliceStream{}, nil
			}
			return &sliceStream{docs: []bsoncore.Document{bsoncore.NewDocumentBuilder().AppendValue(field, smallestInt(n)).Build()}}, nil
		})
	}, nil
}
