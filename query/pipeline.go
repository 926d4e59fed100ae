package query

import (
	"context"
	"errors"
	"io"
	"sort"

	"dumbodb/query/mongoerr"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Stream yields documents one at a time; Next returns io.EOF at the end.
type Stream interface {
	Next(ctx context.Context) (bsoncore.Document, error)
}

// Pipeline is a compiled aggregation pipeline.
type Pipeline struct {
	stages []stage
}

// stage turns an input stream into an output stream.
type stage func(in Stream) Stream

// stageCompilers maps stage names to their compilers.
var stageCompilers map[string]func(spec bsoncore.Value) (stage, error)

func init() {
	stageCompilers = map[string]func(bsoncore.Value) (stage, error){
		"$count":   compileCountStage,
		"$group":   compileGroupStage,
		"$limit":   compileLimitStage,
		"$match":   compileMatchStage,
		"$project": compileProjectStage,
		"$skip":    compileSkipStage,
		"$sort":    compileSortStage,
	}
}

// CompilePipeline validates and compiles an aggregation pipeline.
func CompilePipeline(pipeline bsoncore.Array) (*Pipeline, error) {
	vals, err := pipeline.Values()
	if err != nil {
		return nil, mongoerr.New(mongoerr.InvalidBSON, "%s", err.Error())
	}
	p := &Pipeline{}
	for _, v := range vals {
		doc, ok := v.DocumentOK()
		if !ok {
			return nil, mongoerr.New(mongoerr.TypeMismatch, "Each element of the 'pipeline' array must be an object")
		}
		els, _ := doc.Elements()
		if len(els) != 1 {
			return nil, mongoerr.New(mongoerr.Code(40323), "A pipeline stage specification object must contain exactly one field.")
		}
		compile, ok := stageCompilers[els[0].Key()]
		if !ok {
			return nil, mongoerr.New(mongoerr.Code(40324), "Unrecognized pipeline stage name: '%s'", els[0].Key())
		}
		st, err := compile(els[0].Value())
		if err != nil {
			return nil, err
		}
		p.stages = append(p.stages, st)
	}
	return p, nil
}

// Run connects the pipeline to its input.
func (p *Pipeline) Run(in Stream) Stream {
	for _, st := range p.stages {
		in = st(in)
	}
	return in
}

// funcStream adapts a function to Stream.
type funcStream func(ctx context.Context) (bsoncore.Document, error)

func (f funcStream) Next(ctx context.Context) (bsoncore.Document, error) { return f(ctx) }

func compileMatchStage(spec bsoncore.Value) (stage, error) {
	doc, ok := spec.DocumentOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.Code(15959), "the match filter must be an expression in an object")
	}
	f, err := CompileFilter(doc)
	if err != nil {
		return nil, err
	}
	return func(in Stream) Stream {
		return funcStream(func(ctx context.Context) (bsoncore.Document, error) {
			for {
				d, err := in.Next(ctx)
				if err != nil || f.Match(d) {
					return d, err
				}
			}
		})
	}, nil
}

func compileProjectStage(spec bsoncore.Value) (stage, error) {
	doc, ok := spec.DocumentOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.Code(15969), "$project specification must be an object")
	}
	p, err := CompileProjection(doc)
	if err != nil {
		return nil, err
	}
	return func(in Stream) Stream {
		return funcStream(func(ctx context.Context) (bsoncore.Document, error) {
			d, err := in.Next(ctx)
			if err != nil {
				return nil, err
			}
			return p.Apply(d)
		})
	}, nil
}

func positiveStageArg(name string, spec bsoncore.Value, allowZero bool) (int64, error) {
	n, ok := spec.AsInt64OK()
	if !ok {
		if f, isF := spec.DoubleOK(); isF && f == float64(int64(f)) {
			n, ok = int64(f), true
		}
	}
	if !ok {
		return 0, mongoerr.New(mongoerr.Code(15957), "the %s must be specified as a number", name)
	}
	if n < 0 || (n == 0 && !allowZero) {
		return 0, mongoerr.New(mongoerr.Code(15958), "the %s must be positive", name)
	}
	return n, nil
}

func compileLimitStage(spec bsoncore.Value) (stage, error) {
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

func compileSkipStage(spec bsoncore.Value) (stage, error) {
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

func compileSortStage(spec bsoncore.Value) (stage, error) {
	doc, ok := spec.DocumentOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.Code(15973), "the $sort key specification must be an object")
	}
	s, err := CompileSort(doc)
	if err != nil {
		return nil, err
	}
	return func(in Stream) Stream {
		var docs []bsoncore.Document
		loaded := false
		return funcStream(func(ctx context.Context) (bsoncore.Document, error) {
			if !loaded {
				var err error
				if docs, err = Drain(ctx, in); err != nil {
					return nil, err
				}
				sort.SliceStable(docs, func(i, j int) bool { return s.Compare(docs[i], docs[j]) < 0 })
				loaded = true
			}
			if len(docs) == 0 {
				return nil, io.EOF
			}
			d := docs[0]
			docs = docs[1:]
			return d, nil
		})
	}, nil
}

func compileCountStage(spec bsoncore.Value) (stage, error) {
	field, ok := spec.StringValueOK()
	switch {
	case !ok:
		return nil, mongoerr.New(mongoerr.Code(40156), "the count field must be a non-empty string")
	case field == "":
		return nil, mongoerr.New(mongoerr.Code(40157), "the count field must be a non-empty string")
	case field[0] == '$':
		return nil, mongoerr.New(mongoerr.Code(40158), "the count field cannot be a $-prefixed path")
	}
	return func(in Stream) Stream {
		done := false
		return funcStream(func(ctx context.Context) (bsoncore.Document, error) {
			if done {
				return nil, io.EOF
			}
			done = true
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
				return nil, io.EOF
			}
			return bsoncore.NewDocumentBuilder().AppendValue(field, smallestInt(n)).Build(), nil
		})
	}, nil
}

// Drain reads a stream to its end.
func Drain(ctx context.Context, in Stream) ([]bsoncore.Document, error) {
	var docs []bsoncore.Document
	for {
		d, err := in.Next(ctx)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		docs = append(docs, d)
	}
}

// smallestInt is n as an int32 when it fits, else an int64, as mongod
// reports counts.
func smallestInt(n int64) bsoncore.Value {
	if n >= -1<<31 && n < 1<<31 {
		return bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, int32(n))}
	}
	return bsoncore.Value{Type: bsoncore.TypeInt64, Data: bsoncore.AppendInt64(nil, n)}
}
