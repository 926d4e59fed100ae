package query

import (
	"context"
	"errors"
	"io"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/interrupt"
	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/value"
)

// $facet runs several sub-pipelines over the same input and outputs one
// document holding each sub-pipeline's results.

func compileFacetStage(spec bsoncore.Value, pc *pipeCtx) (stage, error) {
	if spec.Type != bsoncore.TypeEmbeddedDocument || value.ArrayLen(spec.Data) == 0 {
		return nil, mongoerr.New(mongoerr.Location40169, "the $facet specification must be a non-empty object, but found: %s", value.Format(spec))
	}
	var names []string
	var pipes []*Pipeline
	it := value.NewIter(spec.Data)
	for {
		k, v, ok := it.Next()
		if !ok {
			break
		}
		name := string(k)
		if name == "" || name[0] == '$' || strings.Contains(name, ".") {
			return nil, mongoerr.New(mongoerr.Location40352, "FieldPath field names may not start with '$' or contain '.': %s", name)
		}
		if v.Type != bsoncore.TypeArray {
			return nil, mongoerr.New(mongoerr.Location40170, "arguments to $facet must be arrays, %s is type %s", name, value.TypeName(v.Type))
		}
		for _, st := range value.ArrayValues(v.Data) {
			if st.Type == bsoncore.TypeEmbeddedDocument && stages[value.FirstKey(st.Data)].has(stageNotInFacet) {
				return nil, mongoerr.New(mongoerr.Location40600, "%s is not allowed to be used within a $facet stage", value.FirstKey(st.Data))
			}
		}
		sub := pipeCtx{opts: pc.opts, env: pc.env, within: "$facet"}
		p, err := compileStages(v, &sub)
		if err != nil {
			return nil, err
		}
		names = append(names, name)
		pipes = append(pipes, p)
	}
	return func(in Stream) Stream {
		return lazyStream(func(ctx context.Context) (Stream, error) {
			docs, err := drainBudget(ctx, in, pc.budget("$facet"))
			if err != nil {
				return nil, err
			}
			idx, dst := bsoncore.AppendDocumentStart(nil)
			for i, p := range pipes {
				// Each facet is a whole sub-pipeline run: look at every one.
				if err := interrupt.Err(ctx); err != nil {
					return nil, err
				}
				if dst, err = appendFacet(ctx, dst, names[i], p.connect(&sliceStream{docs: docs}), pc.opts.MemoryLimit); err != nil {
					return nil, err
				}
			}
			dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
			return &sliceStream{docs: []bsoncore.Document{dst}}, nil
		})
	}, nil
}

// appendFacet appends a facet's results to the output document dst as
// the array name. The document is bounded while it is built, as mongod
// bounds it (internalQueryFacetMaxOutputDocSizeBytes, 100 MiB, the
// default memory limit); returning it also needs it within 16 MiB
// (RunningPipeline.Next), unless a later stage shrinks it.
func appendFacet(ctx context.Context, dst []byte, name string, out Stream, limit int64) ([]byte, error) {
	aidx, dst := bsoncore.AppendArrayElementStart(dst, name)
	for j := 0; ; j++ {
		d, err := out.Next(ctx)
		if errors.Is(err, io.EOF) {
			return bsoncore.AppendArrayEnd(dst, aidx)
		}
		if err != nil {
			return nil, err
		}
		dst = bsoncore.AppendDocumentElement(dst, strconv.Itoa(j), d)
		if int64(len(dst)) > limit {
			return nil, mongoerr.New(mongoerr.Location4031700, "document constructed by $facet is %d bytes, which exceeds the limit of %d bytes", len(dst), limit)
		}
	}
}

// drainBudget reads a stream to its end within a memory budget.
func drainBudget(ctx context.Context, in Stream, b *memBudget) ([]bsoncore.Document, error) {
	s := funcStream(func(ctx context.Context) (bsoncore.Document, error) {
		d, err := in.Next(ctx)
		if err == nil {
			err = b.add(len(d))
		}
		return d, err
	})
	return Drain(ctx, s)
}
