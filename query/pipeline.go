package query

import (
	"context"
	"errors"
	"io"

	"github.com/dumbodb/dumbodb/interrupt"
	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/value"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Stream yields documents one at a time; Next returns io.EOF at the end.
type Stream interface {
	Next(ctx context.Context) (bsoncore.Document, error)
}

// Catalog gives stages that read other collections ($lookup,
// $graphLookup, $unionWith, $collStats) access to the database the
// pipeline runs on. The server implements it over the same storage
// snapshot as the main input, so every stage reads one revision.
type Catalog interface {
	// Scan streams a collection; a missing collection is empty.
	Scan(ctx context.Context, coll string) (Stream, error)
	// Count is the number of documents in coll and whether it exists.
	Count(ctx context.Context, coll string) (int64, bool, error)
}

// Writer is where $out and $merge write; the server implements it with
// one storage transaction per call.
type Writer interface {
	// Replace makes docs the whole content of db.coll, atomically ($out).
	Replace(ctx context.Context, db, coll string, docs []bsoncore.Document) error
	// Update runs fn against db.coll (created if missing) in one
	// transaction ($merge).
	Update(ctx context.Context, db, coll string, fn func(t WriteTarget) error) error
}

// WriteTarget is one collection inside a Writer transaction.
type WriteTarget interface {
	Get(ctx context.Context, id bsoncore.Value) (bsoncore.Document, bool, error)
	Insert(ctx context.Context, doc bsoncore.Document) error
	Replace(ctx context.Context, doc bsoncore.Document) error
}

// KeyedWriteTarget is a WriteTarget that can match documents on fields
// other than _id, for $merge's 'on'.
type KeyedWriteTarget interface {
	WriteTarget
	// HasUniqueIndex says whether a unique index (not partial, sparse or
	// hidden) has exactly these key fields, in any order.
	HasUniqueIndex(fields []string) bool
	// FindBy returns, through that index, the documents whose fields
	// equal vals (binary equality; vals are scalars, not null).
	FindBy(ctx context.Context, fields []string, vals []bsoncore.Value) ([]bsoncore.Document, error)
}

// DefaultMemoryLimit is how much a blocking stage may hold without
// allowDiskUse, as mongod's internalQueryMaxBlockingSortMemoryUsageBytes.
const DefaultMemoryLimit = 100 << 20

// PipelineOptions is what the aggregate command passes to a pipeline.
type PipelineOptions struct {
	Env          *Env    // let and collation; nil: none
	Catalog      Catalog // other collections; nil: stages needing them fail
	Writer       Writer  // $out/$merge target; nil: those stages fail
	DB           string  // the database, for $out/$merge namespaces
	Collection   string  // the aggregated collection ("" for {aggregate: 1})
	Host         string  // reported by $collStats and $indexStats
	AllowDiskUse bool
	MemoryLimit  int64 // per blocking stage; 0 means DefaultMemoryLimit
	// Collectionless is set for {aggregate: 1}: the first stage must
	// produce documents itself ($documents).
	Collectionless bool
	// Sessions lists the logical sessions $listLocalSessions and
	// $listSessions report ({_id: {id, uid}, lastUse}); nil: none.
	Sessions func(SessionFilter) []bsoncore.Document
	// CurrentOp lists what $currentOp reports (nil: nothing), or says
	// why the user may not see it.
	CurrentOp func(CurrentOpFilter) ([]bsoncore.Document, error)

	spills *spillSet // the files the pipeline's stages spill to
}

// Pipeline is a compiled aggregation pipeline.
type Pipeline struct {
	stages []stage
	specs  []bsoncore.Document
	spills *spillSet // shared with its sub-pipelines
	env    *Env      // the top-level pipeline's, whose context Next sets
}

// stage turns an input stream into an output stream.
type stage func(in Stream) Stream

// pipeCtx is the compile-time context of one (sub-)pipeline.
type pipeCtx struct {
	opts   *PipelineOptions
	env    *Env
	first  bool   // compiling the first stage
	last   bool   // compiling the last stage
	within string // "$facet", "$lookup", "$unionWith" for sub-pipelines
	// text is the first stage's $match when it has a $text: later $sort
	// stages may order by its {$meta: "textScore"}.
	text *Filter
	// next is the stage after the one compiling (nil: none): a $sort
	// followed by a $limit keeps only the limit's documents.
	next bsoncore.Document
}

// CompilePipeline validates and compiles a pipeline with no options.
func CompilePipeline(pipeline bsoncore.Array) (*Pipeline, error) {
	return CompilePipelineOpts(pipeline, PipelineOptions{})
}

// CompilePipelineOpts validates and compiles an aggregation pipeline.
func CompilePipelineOpts(pipeline bsoncore.Array, opts PipelineOptions) (*Pipeline, error) {
	if opts.MemoryLimit == 0 {
		opts.MemoryLimit = DefaultMemoryLimit
	}
	opts.spills = newSpillSet()
	pc := &pipeCtx{opts: &opts, env: opts.Env}
	p, err := compileStages(bsoncore.Value{Type: bsoncore.TypeArray, Data: pipeline}, pc)
	if err != nil {
		return nil, err
	}
	p.env = opts.Env
	if opts.Collectionless && (len(p.specs) == 0 || !stages[value.FirstKey(p.specs[0])].has(stageFirst)) {
		name := "an empty pipeline"
		if len(p.specs) > 0 {
			name = "'" + value.FirstKey(p.specs[0]) + "'"
		}
		return nil, mongoerr.New(mongoerr.InvalidNamespace, "{aggregate: 1} is not valid for %s; a collection is required.", name)
	}
	return p, nil
}

// compileStages compiles a pipeline array in pc's context.
func compileStages(arr bsoncore.Value, pc *pipeCtx) (*Pipeline, error) {
	vals := value.ArrayValues(arr.Data)
	p := &Pipeline{spills: pc.opts.spills}
	for i, v := range vals {
		if v.Type != bsoncore.TypeEmbeddedDocument {
			return nil, mongoerr.New(mongoerr.TypeMismatch, "Each element of the 'pipeline' array must be an object")
		}
		if value.ArrayLen(v.Data) != 1 {
			return nil, mongoerr.New(mongoerr.Location40323, "A pipeline stage specification object must contain exactly one field.")
		}
		name := value.FirstKey(v.Data)
		row, ok := stages[name]
		switch {
		case !ok:
			return nil, mongoerr.New(mongoerr.Location40324, "Unrecognized pipeline stage name: '%s'", name)
		case row.has(stageSearch):
			return nil, mongoerr.SearchNotEnabledError()
		case row.has(stageUnsupported):
			return nil, mongoerr.New(mongoerr.NotImplemented, "%s is not supported by DumboDB", name)
		case row.has(stageOnlyInChangeStream):
			return nil, mongoerr.New(mongoerr.IllegalOperation, "%s can only be used in a $changeStream pipeline", name)
		}
		if row.has(stageFirst) && i > 0 {
			return nil, mongoerr.New(mongoerr.Location40602, "%s is only valid as the first stage in a pipeline", name)
		}
		spec, _ := value.LookupField(v.Data, name)
		sub := *pc
		sub.first, sub.last = i == 0, i == len(vals)-1
		sub.next = nil
		if !sub.last && vals[i+1].Type == bsoncore.TypeEmbeddedDocument {
			sub.next = vals[i+1].Data
		}
		st, err := row.compile(spec, &sub)
		if err != nil {
			return nil, err
		}
		pc.text = sub.text // a leading $match's $text, for the stages after it
		p.stages = append(p.stages, st)
		p.specs = append(p.specs, v.Data)
	}
	return p, nil
}

// Run connects the pipeline to its input. The spill files belong to the
// compiled pipeline, which the aggregate command compiles for each run:
// once a run has ended or been closed, a pipeline run again cannot spill.
func (p *Pipeline) Run(in Stream) *RunningPipeline {
	return &RunningPipeline{out: p.connect(in), spills: p.spills, env: p.env}
}

// connect chains the stages onto in: Run for the top-level pipeline, and
// how stages run their sub-pipelines, whose spills the top-level Close
// releases.
func (p *Pipeline) connect(in Stream) Stream {
	for _, st := range p.stages {
		in = st(in)
	}
	return in
}

// RunningPipeline is the stream of a pipeline's results. The files its
// stages spill to are released when it ends (io.EOF or an error); a
// caller that leaves it midway, as a killed or expired cursor does, must
// Close it.
type RunningPipeline struct {
	out    Stream
	spills *spillSet
	env    *Env    // whose JavaScript and expressions stop with Next's context
	box    *ctxBox // Next's latest context, kept so as not to allocate one per call
}

// maxResultSize is the largest document a pipeline may return: the BSON
// limit the server advertises (wire.MaxDocumentSize, which query may not
// import). Stages hold larger ones, as mongod's do, as long as a later
// stage shrinks them.
const maxResultSize = 16 << 20

func (r *RunningPipeline) Next(ctx context.Context) (bsoncore.Document, error) {
	if r.box == nil || r.box.ctx != ctx {
		r.box = &ctxBox{ctx}
	}
	// The JavaScript and expressions of this batch stop with ctx.
	prev := r.env.enterContext(r.box)
	d, err := r.out.Next(ctx)
	r.env.leaveContext(prev)
	if err == nil && len(d) > maxResultSize {
		err = mongoerr.New(mongoerr.BSONObjectTooLarge, "BSONObj size: %d (0x%X) is invalid. Size must be between 0 and %d(16MB)", len(d), len(d), maxResultSize)
	}
	if err != nil {
		r.Close() // the stream is over: nothing reads its spills again
		return nil, err
	}
	return d, nil
}

// Close releases the pipeline's spill files. A Next after it may fail: a
// stage that needs a new one cannot have it.
func (r *RunningPipeline) Close() error { return r.spills.close() }

// Specs returns the stage specifications, for explain.
func (p *Pipeline) Specs() []bsoncore.Document { return p.specs }

// funcStream adapts a function to Stream.
type funcStream func(ctx context.Context) (bsoncore.Document, error)

func (f funcStream) Next(ctx context.Context) (bsoncore.Document, error) { return f(ctx) }

// sliceStream serves documents from memory.
type sliceStream struct {
	docs      []bsoncore.Document
	interrupt interrupt.Pacer
}

func (s *sliceStream) Next(ctx context.Context) (bsoncore.Document, error) {
	if len(s.docs) == 0 {
		return nil, io.EOF
	}
	if err := s.interrupt.Check(ctx); err != nil {
		return nil, err
	}
	d := s.docs[0]
	s.docs = s.docs[1:]
	return d, nil
}

// NewSliceStream streams docs.
func NewSliceStream(docs []bsoncore.Document) Stream { return &sliceStream{docs: docs} }

// lazyStream runs load on the first Next and then streams its result:
// the shape of every blocking stage.
func lazyStream(load func(ctx context.Context) (Stream, error)) Stream {
	var out Stream
	return funcStream(func(ctx context.Context) (bsoncore.Document, error) {
		if out == nil {
			s, err := load(ctx)
			if err != nil {
				return nil, err
			}
			out = s
		}
		return out.Next(ctx)
	})
}

// mapStream applies fn to every document; a nil result drops it.
func mapStream(in Stream, fn func(d bsoncore.Document) (bsoncore.Document, error)) Stream {
	return funcStream(func(ctx context.Context) (bsoncore.Document, error) {
		for {
			d, err := in.Next(ctx)
			if err != nil {
				return nil, err
			}
			if d, err = fn(d); d != nil || err != nil {
				return d, err
			}
		}
	})
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
