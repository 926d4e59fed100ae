package query

import (
	"context"
	"errors"
	"io"
	"math"
	"sort"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/value"
)

// Grouping stages built on $group: $bucket (fixed boundaries),
// $bucketAuto (evenly filled buckets) and $sortByCount.

// groupByExpr compiles a groupBy argument: a $path or an operator object.
func groupByExpr(stageName string, v bsoncore.Value, pc *pipeCtx, code mongoerr.Code) (Expr, error) {
	isPath := v.Type == bsoncore.TypeString && len(v.StringValue()) > 0 && v.StringValue()[0] == '$'
	if !isPath && !value.IsOperatorDoc(v) {
		return nil, mongoerr.New(code, "The $%s 'groupBy' field must be defined as a $-prefixed path or an expression object, but found: %s", stageName, value.Format(v))
	}
	return compileExpr(v, pc.env.scope())
}

// compileOutput compiles an output document of accumulators; absent, it
// is {count: {$sum: 1}}.
func compileOutput(v bsoncore.Value, pc *pipeCtx) ([]accSpec, error) {
	if v.Type == 0 {
		v = bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: bsoncore.NewDocumentBuilder().
			AppendDocument("count", bsoncore.NewDocumentBuilder().AppendInt32("$sum", 1).Build()).Build()}
	}
	if v.Type != bsoncore.TypeEmbeddedDocument {
		return nil, mongoerr.New(mongoerr.Location40196, "The 'output' field must be an object, but found type: %s", value.TypeName(v.Type))
	}
	var accs []accSpec
	it := value.NewIter(v.Data)
	for {
		k, e, ok := it.Next()
		if !ok {
			return accs, nil
		}
		a, err := compileAccumulator(string(k), e, pc.env.scope(), pc.env)
		if err != nil {
			return nil, err
		}
		accs = append(accs, a)
	}
}

// bucketIDExpr maps groupBy's value to its bucket's lower boundary.
type bucketIDExpr struct {
	groupBy    Expr
	boundaries []bsoncore.Value
	def        bsoncore.Value
}

func (b *bucketIDExpr) eval(c *evalCtx) (bsoncore.Value, error) {
	v, err := b.groupBy.eval(c)
	if err != nil {
		return v, err
	}
	if v.Type == 0 {
		v = value.Null
	}
	n := len(b.boundaries)
	if value.Compare(v, b.boundaries[0]) >= 0 && value.Compare(v, b.boundaries[n-1]) < 0 &&
		value.CanonicalType(v.Type) == value.CanonicalType(b.boundaries[0].Type) {
		i := sort.Search(n, func(i int) bool { return value.Compare(b.boundaries[i], v) > 0 })
		return b.boundaries[i-1], nil
	}
	if b.def.Type == 0 {
		return bsoncore.Value{}, mongoerr.New(mongoerr.Location40066, "$switch could not find a matching branch for an input, and no default was specified.")
	}
	return b.def, nil
}

func compileBucketStage(spec bsoncore.Value, pc *pipeCtx) (stage, error) {
	if spec.Type != bsoncore.TypeEmbeddedDocument {
		return nil, mongoerr.New(mongoerr.Location40201, "Argument to $bucket stage must be an object, but found type: %s.", value.TypeName(spec.Type))
	}
	b := &bucketIDExpr{}
	var output bsoncore.Value
	err := value.EachField(spec.Data, func(k string, v bsoncore.Value) (err error) {
		switch k {
		case "groupBy":
			b.groupBy, err = groupByExpr("bucket", v, pc, mongoerr.Location40202)
		case "boundaries":
			b.boundaries, err = parseBoundaries(v)
		case "default":
			b.def = v
		case "output":
			output = v
		default:
			err = mongoerr.New(mongoerr.Location40197, "Unrecognized option to $bucket: %s.", k)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if b.groupBy == nil || b.boundaries == nil {
		return nil, mongoerr.New(mongoerr.Location40198, "$bucket requires 'groupBy' and 'boundaries' to be specified.")
	}
	if b.def.Type != 0 && value.CanonicalType(b.def.Type) == value.CanonicalType(b.boundaries[0].Type) &&
		value.Compare(b.def, b.boundaries[0]) >= 0 && value.Compare(b.def, b.boundaries[len(b.boundaries)-1]) < 0 {
		return nil, mongoerr.New(mongoerr.Location40199, "The $bucket 'default' field must be less than the lowest boundary or greater than or equal to the highest boundary.")
	}
	accs, err := compileOutput(output, pc)
	if err != nil {
		return nil, err
	}
	return func(in Stream) Stream {
		return lazyStream(func(ctx context.Context) (Stream, error) {
			g, err := groupDocs(ctx, in, b, accs, pc.env, pc.budget("$bucket"))
			if err != nil {
				return nil, err
			}
			byID := func(a, c bsoncore.Document) int { return value.Compare(a.Lookup("_id"), c.Lookup("_id")) }
			return sortStream(ctx, g, byID, pc.budget("$bucket"))
		})
	}, nil
}

func parseBoundaries(v bsoncore.Value) ([]bsoncore.Value, error) {
	if v.Type != bsoncore.TypeArray {
		return nil, mongoerr.New(mongoerr.Location40200, "The $bucket 'boundaries' field must be an array, but found type: %s.", value.TypeName(v.Type))
	}
	vals := value.ArrayValues(v.Data)
	if len(vals) < 2 {
		return nil, mongoerr.New(mongoerr.Location40192, "The $bucket 'boundaries' field must have at least 2 values, but found %d value(s).", len(vals))
	}
	for i := 1; i < len(vals); i++ {
		if value.CanonicalType(vals[i].Type) != value.CanonicalType(vals[0].Type) {
			return nil, mongoerr.New(mongoerr.Location40193, "All values in the the 'boundaries' option to $bucket must have the same type. Found conflicting types %s and %s.", value.TypeName(vals[0].Type), value.TypeName(vals[i].Type))
		}
		if value.Compare(vals[i-1], vals[i]) >= 0 {
			return nil, mongoerr.New(mongoerr.Location40194, "The 'boundaries' option to $bucket must be sorted, but elements %d and %d are not in ascending order (%s is not less than %s).", i-1, i, value.Format(vals[i-1]), value.Format(vals[i]))
		}
	}
	return vals, nil
}

func compileBucketAutoStage(spec bsoncore.Value, pc *pipeCtx) (stage, error) {
	if spec.Type != bsoncore.TypeEmbeddedDocument {
		return nil, mongoerr.New(mongoerr.Location40240, "The argument to $bucketAuto must be an object, but found type: %s.", value.TypeName(spec.Type))
	}
	var groupBy Expr
	var output bsoncore.Value
	var rounder *granularityRounder
	n := 0
	it := value.NewIter(spec.Data)
	for {
		k, v, ok := it.Next()
		if !ok {
			break
		}
		var err error
		switch string(k) {
		case "groupBy":
			groupBy, err = groupByExpr("bucketAuto", v, pc, mongoerr.Location40239)
		case "buckets":
			if !value.IsNumber(v) || value.ToFloat(v) != float64(int32(value.ToFloat(v))) || value.ToFloat(v) <= 0 {
				return nil, mongoerr.New(mongoerr.Location40243, "The $bucketAuto 'buckets' field must be greater than 0, but found: %s", value.Format(v))
			}
			n = int(value.ToFloat(v))
		case "output":
			output = v
		case "granularity":
			rounder, err = newGranularityRounder(v)
		default:
			err = mongoerr.New(mongoerr.Location40245, "Unrecognized option to $bucketAuto: %s.", k)
		}
		if err != nil {
			return nil, err
		}
	}
	if groupBy == nil || n == 0 {
		return nil, mongoerr.New(mongoerr.Location40246, "$bucketAuto requires 'groupBy' and 'buckets' to be specified")
	}
	accs, err := compileOutput(output, pc)
	if err != nil {
		return nil, err
	}
	return func(in Stream) Stream {
		return lazyStream(func(ctx context.Context) (Stream, error) {
			return bucketAuto(ctx, in, groupBy, n, accs, rounder, pc)
		})
	}, nil
}

type keyedDoc struct {
	key bsoncore.Value
	doc bsoncore.Document
}

// bucketAuto sorts by the groupBy value (through sortStream, which
// spills to disk past the budget with allowDiskUse) and cuts runs of
// about n-th of the documents, never splitting equal values, as mongod's
// BucketAutoStage: each bucket's max is the next bucket's min (the last
// one's is its own largest value); with a granularity the boundaries are
// rounded to the series.
func bucketAuto(ctx context.Context, in Stream, groupBy Expr, n int, accs []accSpec, rounder *granularityRounder, pc *pipeCtx) (Stream, error) {
	coll := pc.env.coll()
	count := 0
	keyed := funcStream(func(ctx context.Context) (bsoncore.Document, error) {
		d, err := in.Next(ctx)
		if err != nil {
			return nil, err
		}
		k, err := groupBy.eval(newEvalCtx(d, pc.env))
		if err != nil {
			return nil, err
		}
		if rounder != nil {
			if err := rounder.checkKey(k); err != nil {
				return nil, err
			}
		}
		if k.Type == 0 {
			k = value.Null
		}
		count++
		return keyedRecord(k, d), nil
	})
	sorted, err := sortStream(ctx, keyed, func(a, c bsoncore.Document) int {
		return value.CompareWith(recordKey(a), recordKey(c), coll)
	}, pc.budget("$bucketAuto"))
	if err != nil {
		return nil, err
	}
	size := int(math.Round(float64(count) / float64(n)))
	size = max(size, 1)
	var next bsoncore.Document // the first record of the next bucket
	var prevMax bsoncore.Value
	havePrev := false
	bucket := 0
	pull := func(ctx context.Context) (bsoncore.Document, error) {
		d, err := sorted.Next(ctx)
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return d, err
	}
	return funcStream(func(ctx context.Context) (bsoncore.Document, error) {
		if bucket >= n {
			return nil, io.EOF
		}
		bucket++
		if next == nil && bucket == 1 {
			if next, err = pull(ctx); err != nil {
				return nil, err
			}
		}
		if next == nil {
			return nil, io.EOF
		}
		gr := &group{}
		for _, a := range accs {
			gr.accs = append(gr.accs, a.mk())
		}
		var maxKey bsoncore.Value
		add := func(rec bsoncore.Document) error {
			maxKey = recordKey(rec)
			doc, _ := value.LookupField(rec, "d")
			if _, err := gr.add(newEvalCtx(doc.Data, pc.env)); err != nil {
				return err
			}
			// Buckets come one at a time off the external sort, which
			// bounds the input; a bucket's accumulators must fit alone.
			if gr.held > pc.opts.MemoryLimit {
				return tooLargeUnit("$bucketAuto", "bucket", pc.opts.MemoryLimit)
			}
			return nil
		}
		minKey := recordKey(next)
		if rounder != nil {
			if havePrev {
				minKey = prevMax
			} else if minKey, err = rounder.roundDown(minKey); err != nil {
				return nil, err
			}
		}
		if err := add(next); err != nil {
			return nil, err
		}
		last, exhausted := bucket == n, false
		for i := 1; i < size || last; i++ {
			d, err := pull(ctx)
			if err != nil {
				return nil, err
			}
			if d == nil {
				exhausted = true
				break
			}
			if err := add(d); err != nil {
				return nil, err
			}
		}
		next = nil
		if !exhausted {
			if next, err = pull(ctx); err != nil {
				return nil, err
			}
		}
		if rounder != nil {
			boundary, err := rounder.roundUp(maxKey)
			if err != nil {
				return nil, err
			}
			for next != nil && (value.Compare(boundary, recordKey(next)) > 0 || value.Compare(maxKey, recordKey(next)) == 0) {
				if err := add(next); err != nil {
					return nil, err
				}
				if next, err = pull(ctx); err != nil {
					return nil, err
				}
			}
			if value.ToFloat(boundary) == 0 && next != nil {
				if maxKey, err = rounder.roundDown(recordKey(next)); err != nil {
					return nil, err
				}
			} else {
				maxKey = boundary
			}
		} else {
			for next != nil && value.CompareWith(maxKey, recordKey(next), coll) == 0 {
				if err := add(next); err != nil {
					return nil, err
				}
				if next, err = pull(ctx); err != nil {
					return nil, err
				}
			}
			if next != nil {
				maxKey = recordKey(next)
			}
		}
		prevMax, havePrev = maxKey, true
		gr.id = bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: bsoncore.NewDocumentBuilder().
			AppendValue("min", minKey).AppendValue("max", maxKey).Build()}
		return groupResult(gr, accs)
	}), nil
}

func compileSortByCountStage(spec bsoncore.Value, pc *pipeCtx) (stage, error) {
	isPath := spec.Type == bsoncore.TypeString && len(spec.StringValue()) > 0 && spec.StringValue()[0] == '$'
	if !isPath && !value.IsOperatorDoc(spec) {
		return nil, mongoerr.New(mongoerr.Location40147, "the sortBy field must be defined as a $-prefixed path or an expression object")
	}
	x, err := compileExpr(spec, pc.env.scope())
	if err != nil {
		return nil, err
	}
	count, _ := compileCountAcc("$count", bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: bsoncore.NewDocumentBuilder().Build()}, nil, nil)
	accs := []accSpec{{field: "count", mk: count}}
	return func(in Stream) Stream {
		return lazyStream(func(ctx context.Context) (Stream, error) {
			g, err := groupDocs(ctx, in, x, accs, pc.env, pc.budget("$sortByCount"))
			if err != nil {
				return nil, err
			}
			byCount := func(a, c bsoncore.Document) int { return -value.Compare(a.Lookup("count"), c.Lookup("count")) }
			return sortStream(ctx, g, byCount, pc.budget("$sortByCount"))
		})
	}, nil
}
