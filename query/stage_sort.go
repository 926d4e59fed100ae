package query

import (
	"context"
	"errors"
	"io"
	"math"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/value"
)

// $sort: a stable sort of the whole input, which spills sorted runs past
// the memory budget (sortStream, stage_memory.go). Followed by a $limit,
// it keeps only the limit's documents as it reads (mongod coalesces the
// two into a top-k sort), and never spills.

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
	keep := limitOf(pc.next)
	return func(in Stream) Stream {
		return lazyStream(func(ctx context.Context) (Stream, error) {
			if keep > 0 {
				return topKStream(ctx, in, s.Compare, keep, pc.budget("$sort"))
			}
			return sortStream(ctx, in, s.Compare, pc.budget("$sort"))
		})
	}, nil
}

// limitOf is n for a stage {$limit: n} that a top-k sort can keep in
// memory, else 0.
func limitOf(stage bsoncore.Document) int {
	if stage == nil || value.FirstKey(stage) != "$limit" {
		return 0
	}
	spec, _ := value.LookupField(stage, "$limit")
	n, err := positiveStageArg("limit", spec, false)
	if err != nil || n > math.MaxInt32 {
		return 0 // the $limit stage reports its own error
	}
	return int(n)
}

// topKStream is the first keep documents of in sorted by cmp, ties in
// input order; it holds keep documents at most, counted in b.
func topKStream(ctx context.Context, in Stream, cmp func(a, b bsoncore.Document) int, keep int, b *memBudget) (Stream, error) {
	type item struct {
		doc bsoncore.Document
		seq int
	}
	top := NewTopK(keep, func(x, y item) bool {
		if c := cmp(x.doc, y.doc); c != 0 {
			return c < 0
		}
		return x.seq < y.seq
	})
	for seq := 0; ; seq++ {
		d, err := in.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		out, dropped := top.Add(item{doc: d, seq: seq})
		if dropped {
			b.used -= int64(len(out.doc))
		}
		if err := b.add(len(d)); err != nil {
			return nil, err
		}
	}
	items := top.Sorted()
	docs := make([]bsoncore.Document, len(items))
	for i, it := range items {
		docs[i] = it.doc
	}
	return &sliceStream{docs: docs}, nil
}
