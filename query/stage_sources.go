package query

import (
	"context"
	"math/rand/v2"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"dumbodb/query/mongoerr"
	"dumbodb/query/value"
)

// $sample, $redact, and the source stages $documents, $collStats and
// $indexStats.

// compileListLocalSessionsStage lists the sessions the server passed in
// (the command's own); {allUsers} and {users} filter nothing more.
func compileListLocalSessionsStage(spec bsoncore.Value, pc *pipeCtx) (stage, error) {
	if spec.Type != bsoncore.TypeEmbeddedDocument {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "$listLocalSessions must take a nested object but found: %s", value.Format(spec))
	}
	return func(Stream) Stream {
		return &sliceStream{docs: append([]bsoncore.Document(nil), pc.opts.LocalSessions...)}
	}, nil
}

func compileSampleStage(spec bsoncore.Value, pc *pipeCtx) (stage, error) {
	if spec.Type != bsoncore.TypeEmbeddedDocument {
		return nil, mongoerr.New(mongoerr.Code(28745), "the $sample stage specification must be an object")
	}
	size := int64(-1)
	it := value.NewIter(spec.Data)
	for {
		k, v, ok := it.Next()
		if !ok {
			break
		}
		if string(k) != "size" {
			return nil, mongoerr.New(mongoerr.Code(28748), "unrecognized option to $sample: %s", k)
		}
		if !value.IsNumber(v) {
			return nil, mongoerr.New(mongoerr.Code(28746), "size argument to $sample must be a number")
		}
		if size = int64(value.ToFloat(v)); size < 0 {
			return nil, mongoerr.New(mongoerr.Code(28747), "size argument to $sample must not be negative")
		}
	}
	if size < 0 {
		return nil, mongoerr.New(mongoerr.Code(28749), "$sample stage must specify a size")
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

// redactVars are the values $redact's expression must return.
var redactVars = map[string]string{"DESCEND": "descend", "PRUNE": "prune", "KEEP": "keep"}

func compileRedactStage(spec bsoncore.Value, pc *pipeCtx) (stage, error) {
	scope := pc.env.scope()
	for name := range redactVars {
		scope = scope.with(name)
	}
	x, err := compileExpr(spec, scope)
	if err != nil {
		return nil, err
	}
	return func(in Stream) Stream {
		return mapStream(in, func(d bsoncore.Document) (bsoncore.Document, error) {
			c := newEvalCtx(d, pc.env)
			for name, v := range redactVars {
				c = c.bind(name, value.String(v))
			}
			v, keep, err := redact(x, c, bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: d})
			if err != nil || !keep {
				return nil, err
			}
			return v.Data, nil
		})
	}, nil
}

// redact evaluates the expression with $$CURRENT at doc and applies the
// verdict; descending recurses into sub-documents, also inside arrays.
func redact(x Expr, c *evalCtx, doc bsoncore.Value) (bsoncore.Value, bool, error) {
	sub := *c
	sub.cur = doc
	v, err := x.eval(&sub)
	if err != nil {
		return v, false, err
	}
	verdict, _ := v.StringValueOK()
	switch {
	case v.Type == bsoncore.TypeString && verdict == "keep":
		return doc, true, nil
	case v.Type == bsoncore.TypeString && verdict == "prune":
		return bsoncore.Value{}, false, nil
	case v.Type != bsoncore.TypeString || verdict != "descend":
		return v, false, mongoerr.New(mongoerr.Code(17053), "$redact's expression should not return anything aside from the variables $$KEEP, $$DESCEND, and $$PRUNE, but returned %s", value.Format(v))
	}
	idx, dst := bsoncore.AppendDocumentStart(nil)
	it := value.NewIter(doc.Data)
	for {
		k, e, ok := it.Next()
		if !ok {
			break
		}
		r, keep, err := redactValue(x, c, e)
		if err != nil {
			return r, false, err
		}
		if keep {
			dst = bsoncore.AppendValueElement(dst, string(k), r)
		}
	}
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: dst}, true, nil
}

func redactValue(x Expr, c *evalCtx, v bsoncore.Value) (bsoncore.Value, bool, error) {
	switch v.Type {
	case bsoncore.TypeEmbeddedDocument:
		return redact(x, c, v)
	case bsoncore.TypeArray:
		var out []bsoncore.Value
		for _, e := range value.ArrayValues(v.Data) {
			r, keep, err := redactValue(x, c, e)
			if err != nil {
				return r, false, err
			}
			if keep {
				out = append(out, r)
			}
		}
		return value.BuildArray(out), true, nil
	}
	return v, true, nil
}

// compileDocumentsStage is $documents: an expression that evaluates to an
// array of documents, which replaces the (empty) input.
func compileDocumentsStage(spec bsoncore.Value, pc *pipeCtx) (stage, error) {
	x, err := compileExpr(spec, pc.env.scope())
	if err != nil {
		return nil, err
	}
	return func(Stream) Stream {
		return lazyStream(func(context.Context) (Stream, error) {
			v, err := x.eval(newEvalCtx(bsoncore.NewDocumentBuilder().Build(), pc.env))
			if err != nil {
				return nil, err
			}
			if v.Type != bsoncore.TypeArray {
				return nil, mongoerr.New(mongoerr.Code(5858203), "an array is expected")
			}
			var docs []bsoncore.Document
			for _, e := range value.ArrayValues(v.Data) {
				if e.Type != bsoncore.TypeEmbeddedDocument {
					return nil, mongoerr.New(mongoerr.TypeMismatch, "$documents expects an array of objects, found %s", value.TypeName(e.Type))
				}
				docs = append(docs, e.Data)
			}
			return &sliceStream{docs: docs}, nil
		})
	}, nil
}

// now is the current time as a BSON date.
func now() bsoncore.Value { return value.Date(time.Now().UnixMilli()) }

func compileCollStatsStage(spec bsoncore.Value, pc *pipeCtx) (stage, error) {
	if spec.Type != bsoncore.TypeEmbeddedDocument {
		return nil, mongoerr.New(mongoerr.Code(40166), "$collStats must take a nested object but found: %s", value.Format(spec))
	}
	opts := map[string]bsoncore.Value{}
	it := value.NewIter(spec.Data)
	for {
		k, v, ok := it.Next()
		if !ok {
			break
		}
		switch string(k) {
		case "latencyStats", "storageStats", "count", "queryExecStats":
			if v.Type != bsoncore.TypeEmbeddedDocument {
				return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field '$collStats.%s' is the wrong type '%s', expected type 'object'", k, value.TypeName(v.Type))
			}
			opts[string(k)] = v
		default:
			return nil, mongoerr.New(mongoerr.Code(40415), "BSON field '$collStats.%s' is an unknown field.", k)
		}
	}
	return func(Stream) Stream {
		return lazyStream(func(ctx context.Context) (Stream, error) {
			d, err := collStats(ctx, pc, opts)
			if err != nil {
				return nil, err
			}
			return &sliceStream{docs: []bsoncore.Document{d}}, nil
		})
	}, nil
}

func collStats(ctx context.Context, pc *pipeCtx, opts map[string]bsoncore.Value) (bsoncore.Document, error) {
	var n int64
	exists := false
	if pc.opts.Catalog != nil {
		var err error
		if n, exists, err = pc.opts.Catalog.Count(ctx, pc.opts.Collection); err != nil {
			return nil, err
		}
	}
	ns := pc.opts.DB + "." + pc.opts.Collection
	b := bsoncore.NewDocumentBuilder().AppendString("ns", ns).AppendString("host", pc.opts.Host).AppendValue("localTime", now())
	if _, ok := opts["latencyStats"]; ok {
		zero := bsoncore.NewDocumentBuilder().AppendInt64("latency", 0).AppendInt64("ops", 0).Build()
		b.AppendDocument("latencyStats", bsoncore.NewDocumentBuilder().AppendDocument("reads", zero).
			AppendDocument("writes", zero).AppendDocument("commands", zero).AppendDocument("transactions", zero).Build())
	}
	if _, ok := opts["storageStats"]; ok {
		if !exists {
			return nil, mongoerr.New(mongoerr.NamespaceNotFound, "Unable to retrieve storageStats in $collStats stage :: caused by :: Collection [%s] not found.", ns)
		}
		b.AppendDocument("storageStats", bsoncore.NewDocumentBuilder().AppendInt64("size", 0).AppendInt64("count", n).
			AppendInt64("storageSize", 0).AppendInt32("nindexes", 1).AppendInt64("totalIndexSize", 0).
			AppendInt64("totalSize", 0).AppendDocument("indexSizes", bsoncore.NewDocumentBuilder().AppendInt64("_id_", 0).Build()).
			AppendInt32("scaleFactor", 1).Build())
	}
	if _, ok := opts["count"]; ok {
		if !exists {
			return nil, mongoerr.New(mongoerr.NamespaceNotFound, "Unable to retrieve count in $collStats stage :: caused by :: Collection [%s] not found.", ns)
		}
		b.AppendInt64("count", n)
	}
	if _, ok := opts["queryExecStats"]; ok {
		b.AppendDocument("queryExecStats", bsoncore.NewDocumentBuilder().AppendDocument("collectionScans",
			bsoncore.NewDocumentBuilder().AppendInt64("total", 0).AppendInt64("nonTailable", 0).Build()).Build())
	}
	return b.Build(), nil
}

// compileIndexStatsStage reports the one index every collection has.
func compileIndexStatsStage(spec bsoncore.Value, pc *pipeCtx) (stage, error) {
	if spec.Type != bsoncore.TypeEmbeddedDocument || value.ArrayLen(spec.Data) != 0 {
		return nil, mongoerr.New(mongoerr.Code(28803), "The $indexStats stage specification must be an empty object")
	}
	return func(Stream) Stream {
		return lazyStream(func(ctx context.Context) (Stream, error) {
			if pc.opts.Catalog == nil {
				return &sliceStream{}, nil
			}
			_, exists, err := pc.opts.Catalog.Count(ctx, pc.opts.Collection)
			if err != nil || !exists {
				return &sliceStream{}, err
			}
			key := bsoncore.NewDocumentBuilder().AppendInt32("_id", 1).Build()
			d := bsoncore.NewDocumentBuilder().AppendString("name", "_id_").AppendDocument("key", key).
				AppendString("host", pc.opts.Host).
				AppendDocument("accesses", bsoncore.NewDocumentBuilder().AppendInt64("ops", 0).AppendValue("since", now()).Build()).
				AppendDocument("spec", bsoncore.NewDocumentBuilder().AppendInt32("v", 2).AppendDocument("key", key).AppendString("name", "_id_").Build()).
				Build()
			return &sliceStream{docs: []bsoncore.Document{d}}, nil
		})
	}, nil
}
