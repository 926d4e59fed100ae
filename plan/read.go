package plan

import (
	"context"
	"errors"
	"io"

	"github.com/dumbodb/dumbodb/query"
	"github.com/dumbodb/dumbodb/storage"
	"github.com/dumbodb/dumbodb/value"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Reading a collection: every command that reads documents (find, count,
// distinct, findAndModify, a pipeline's leading $match) hands its parsed
// read to Execute, which plans it, opens the plan and stacks the stages
// the read asks for (sort, skip, limit, projection). Explain builds the
// same stack with the same code and shows it.

// Consumer says what the reader does with the documents, which decides
// what a scan of large documents reads of them.
type Consumer int

const (
	// ForFind returns the documents shaped by the read's projection, or
	// whole.
	ForFind Consumer = iota
	// ForCount only counts them.
	ForCount
	// ForPipeline feeds them to a pipeline that reads PipelineReads.
	ForPipeline
)

// Read is one read of a collection as a command parsed it.
type Read struct {
	Filter    *query.Filter     // compiled; required
	FilterDoc bsoncore.Document // as given (nil: {}): explain shows it, scans read its paths
	// Sort orders the result (nil: no order). SortDoc is the sort as
	// given; the planner prefers an index in its order. A pipeline's
	// leading $match sets SortDoc alone: its $sort stage sorts.
	Sort    *query.Sort
	SortDoc bsoncore.Document
	// Projection shapes each document (nil: none); ProjectionDoc is it as
	// given, which decides covering.
	Projection    *query.Projection
	ProjectionDoc bsoncore.Document
	Skip, Limit   int64
	Hint          bsoncore.Value
	// ID is find's _id look-up without planning (IDHACK); zero: none.
	ID bsoncore.Value
	// KeyRange is find's min and max (nil: none).
	KeyRange *KeyRange
	// ReturnKey and ShowRecordID are find's; RecordIDs gives a capped
	// collection's record ids (nil: the _id key is the record id).
	ReturnKey, ShowRecordID bool
	RecordIDs               func(idKey []byte) (int64, bool)
	Consumer                Consumer
	PipelineReads           []string // ForPipeline's (nil: whole documents)
}

// Execution is a read planned and opened.
type Execution struct {
	Plan   *Plan
	Source Source
}

// Execute plans r over coll in rd and opens it.
func Execute(ctx context.Context, rd storage.Reader, coll string, r *Read) (*Execution, error) {
	if r.ID.Type != 0 {
		src, err := lookupID(ctx, rd, coll, r.ID)
		return &Execution{Plan: &Plan{idHack: true}, Source: src}, err
	}
	p, err := Query(rd, coll, r.input())
	if err != nil {
		return nil, err
	}
	src, err := r.open(ctx, rd, coll, p, &execStats{})
	return &Execution{Plan: p, Source: src}, err
}

// input is what the planner is given.
func (r *Read) input() Input {
	want := int64(0) // how many documents the read returns, to size a $near's rings
	if r.Limit > 0 {
		want = r.Skip + r.Limit
	}
	return Input{Filter: r.Filter, Sort: r.SortDoc, Hint: r.Hint, Want: want}
}

// open runs plan p for r, counting its work in st, and stacks r's stages
// on it.
func (r *Read) open(ctx context.Context, rd storage.Reader, coll string, p *Plan, st *execStats) (Source, error) {
	stack, err := r.prepare(p)
	if err != nil {
		return nil, err
	}
	src, err := planSource(ctx, rd, coll, r.Filter, p, st)
	if err != nil {
		return nil, err
	}
	if p.idHack && p.ids == nil && r.idHackEligible() {
		src = &pointLookup{src: src} // known_end.go
	}
	for _, s := range stack {
		if src, err = s.open(ctx, rd, coll, src); err != nil {
			return nil, err
		}
	}
	return src, nil
}

// prepare readies p for r (covering, what scans read) and returns the
// stages r stacks on it, innermost first.
func (r *Read) prepare(p *Plan) ([]stage, error) {
	shaped := r.ProjectionDoc // what the documents are shaped by
	if r.ReturnKey || r.ShowRecordID {
		shaped = nil // keys and record ids are read from whole documents
	}
	switch r.Consumer {
	case ForFind:
		p.cover(r.Filter, shaped, r.SortDoc)
		p.readForFind(r.FilterDoc, r.SortDoc, shaped)
	case ForCount:
		p.readForCount(r.FilterDoc)
	case ForPipeline:
		p.readForPipeline(r.PipelineReads)
	}
	return r.stages(p)
}

// natural is the {$natural: ±1} direction of a read, from its sort or
// hint (0 when neither asks for it).
func (r *Read) natural() int {
	return Natural(r.Sort, r.Hint)
}

// Natural is the {$natural: ±1} direction a sort or hint asks for (0:
// neither does).
func Natural(srt *query.Sort, hint bsoncore.Value) int {
	if srt != nil && srt.Natural() != 0 {
		return srt.Natural()
	}
	if d, ok := hint.DocumentOK(); ok {
		if v, err := d.LookupErr("$natural"); err == nil {
			if n, ok := value.AsInt64(v); ok && n < 0 {
				return -1
			}
		}
	}
	return 0
}

// sortsByIDAlone reports whether r sorts on _id and nothing else.
func (r *Read) sortsByIDAlone() bool {
	if r.Sort == nil {
		return false
	}
	paths := r.Sort.Paths()
	return len(paths) == 1 && paths[0] == "_id"
}

// Count counts the documents r matches after its skip and limit: from
// the index entries when the plan's bounds select exactly those documents
// (exactBounds), else by running the read.
func Count(ctx context.Context, rd storage.Reader, coll string, r *Read) (int64, error) {
	p, err := Query(rd, coll, r.input())
	if err != nil {
		return 0, err
	}
	if !exactBounds(p, r.Filter) {
		src, err := r.open(ctx, rd, coll, p, &execStats{})
		if err != nil {
			return 0, err
		}
		return countAll(ctx, src)
	}
	n, err := countScan(ctx, rd, coll, p, &execStats{})
	if err != nil {
		return 0, err
	}
	n = max(n-r.Skip, 0)
	if r.Limit > 0 {
		n = min(n, r.Limit)
	}
	return n, nil
}

func countAll(ctx context.Context, src Source) (int64, error) {
	var n int64
	for {
		if _, err := src.Next(ctx); errors.Is(err, io.EOF) {
			return n, nil
		} else if err != nil {
			return n, err
		}
		n++
	}
}
