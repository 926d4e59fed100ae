package plan

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/dumbodb/dumbodb/index"
	"github.com/dumbodb/dumbodb/storage"
	"github.com/dumbodb/dumbodb/value"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Explained is what an explained command adds to its read: the
// command's name and distinct's key.
type Explained struct {
	Kind        string // the explained command's name
	DistinctKey string // distinct's key
	Collation   bsoncore.Document
}

// Explanation is explain's report of a plan: the queryPlanner's winning
// and rejected plans and, unless only the plan was asked for, the
// executionStats of running them.
type Explanation struct {
	WinningPlan    bsoncore.Document
	RejectedPlans  bsoncore.Array
	ExecutionStats bsoncore.Document // nil at verbosity queryPlanner
}

// Explain plans r as the explained command runs it and describes the
// plan with the stages the read stacks on it; unless verbosity is
// queryPlanner it runs the read as the command does and counts its work,
// and with allPlansExecution the rejected plans too. Planning and each
// run read a snapshot of their own from snapshot.
func Explain(ctx context.Context, snapshot func() (*storage.Snapshot, error), coll string, ex *Explained, r *Read, verbosity string) (*Explanation, error) {
	snap, err := snapshot()
	if err != nil {
		return nil, err
	}
	p, err := Query(snap, coll, r.input())
	if err != nil {
		return nil, err
	}
	kind := ex.Kind
	switch {
	case kind == "count" && nonEmpty(r.FilterDoc) && exactBounds(p, r.Filter):
		kind = "COUNT_SCAN"
	case kind == "distinct" && ex.DistinctKey != "" && !nonEmpty(ex.Collation):
		if dp := Distinct(snap, coll, r.Filter, ex.DistinctKey); dp != nil {
			p, kind = dp, "DISTINCT_SCAN"
		}
	}
	run := &explainRun{ex: ex, kind: kind, r: r, coll: coll, snapshot: snapshot}
	winning, err := run.tree(p)
	if err != nil {
		return nil, err
	}
	var rejected []*Plan
	if kind != "COUNT_SCAN" && kind != "DISTINCT_SCAN" {
		rejected = rejectedPlans(snap, coll, r.input(), p)
	}
	rejectedArr := bsoncore.NewArrayBuilder()
	for _, rp := range rejected {
		tree, err := run.tree(rp)
		if err != nil {
			return nil, err
		}
		rejectedArr.AppendDocument(tree)
	}
	e := &Explanation{WinningPlan: winning, RejectedPlans: rejectedArr.Build()}
	if verbosity != "queryPlanner" {
		if e.ExecutionStats, err = run.executionStats(ctx, p, winning, rejected, verbosity == "allPlansExecution"); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// explainRun is one explain of a read.
type explainRun struct {
	ex       *Explained
	kind     string // the command's name, or COUNT_SCAN or DISTINCT_SCAN when it reads only an index
	r        *Read
	coll     string
	snapshot func() (*storage.Snapshot, error)
}

// executionStats runs the plan and reports what it examined; with all,
// it also runs the rejected plans and lists every plan's counts under
// allPlansExecution.
func (x *explainRun) executionStats(ctx context.Context, p *Plan, winning bsoncore.Document, rejected []*Plan, all bool) (bsoncore.Document, error) {
	start := time.Now()
	st, err := x.runPlan(ctx, p)
	if err != nil {
		return nil, err
	}
	b := bsoncore.NewDocumentBuilder().
		AppendBoolean("executionSuccess", true).
		AppendValue("nReturned", value.Count(st.returned)).
		AppendValue("executionTimeMillis", value.Count(time.Since(start).Milliseconds())).
		AppendValue("totalKeysExamined", value.Count(st.keysExamined)).
		AppendValue("totalDocsExamined", value.Count(st.docsExamined)).
		AppendDocument("executionStages", winning)
	if all {
		arr := bsoncore.NewArrayBuilder()
		for i, rp := range append([]*Plan{p}, rejected...) {
			pst := st
			if i > 0 {
				if pst, err = x.runPlan(ctx, rp); err != nil {
					return nil, err
				}
			}
			tree, err := x.tree(rp)
			if err != nil {
				return nil, err
			}
			arr.AppendDocument(bsoncore.NewDocumentBuilder().
				AppendValue("nReturned", value.Count(pst.returned)).
				AppendValue("totalKeysExamined", value.Count(pst.keysExamined)).
				AppendValue("totalDocsExamined", value.Count(pst.docsExamined)).
				AppendDocument("executionStages", tree).Build())
		}
		b.AppendArray("allPlansExecution", arr.Build())
	}
	return b.Build(), nil
}

// runPlan runs the read over plan p as its command does and counts its
// work.
func (x *explainRun) runPlan(ctx context.Context, p *Plan) (execStats, error) {
	var st execStats
	snap, err := x.snapshot()
	if err != nil {
		return st, err
	}
	switch x.kind {
	case "COUNT_SCAN":
		n, err := countScan(ctx, snap, x.coll, p, &st)
		st.returned = n
		return st, err
	case "DISTINCT_SCAN":
		vals, err := distinctScan(ctx, snap, x.coll, p, x.ex.DistinctKey, &st)
		st.returned = int64(len(vals))
		return st, err
	}
	src, err := x.r.open(ctx, snap, x.coll, p, &st)
	if err != nil {
		return st, err
	}
	for {
		if _, err := src.Next(ctx); errors.Is(err, io.EOF) {
			return st, nil
		} else if err != nil {
			return st, err
		}
		st.returned++
	}
}

// tree is the plan tree of p as explain shows it.
func (x *explainRun) tree(p *Plan) (bsoncore.Document, error) {
	switch x.kind {
	case "COUNT_SCAN":
		return wrapStage("COUNT", renameStage(ixscanStage(p), "COUNT_SCAN"), bsoncore.NewDocumentBuilder()), nil
	case "DISTINCT_SCAN":
		return wrapStage("PROJECTION_COVERED", renameStage(ixscanStage(p), "DISTINCT_SCAN"), bsoncore.NewDocumentBuilder()), nil
	}
	return x.r.explainTree(p)
}

func wrapStage(name string, input bsoncore.Document, b *bsoncore.DocumentBuilder) bsoncore.Document {
	return b.AppendString("stage", name).AppendDocument("inputStage", input).Build()
}

// leafStage is the plan's leaf stage as explain shows it, filter being the
// query's: IDHACK, COLLSCAN, FETCH over IXSCAN, or the text stages.
func (p *Plan) leafStage(filter bsoncore.Document) bsoncore.Document {
	switch {
	case p.idHack && p.ids != nil, p.idRange != nil:
		return idSetStage(filter)
	case p.idHack:
		return bsoncore.NewDocumentBuilder().AppendString("stage", "IDHACK").Build()
	case p.ix == nil:
		return collscanStage(filter, "forward")
	}
	if p.text != nil && p.orClauses != nil {
		return textOrStage(p, filter)
	}
	if p.text != nil {
		return textStage(p, filter)
	}
	if p.near != nil {
		return nearStage(p, filter)
	}
	fetch := bsoncore.NewDocumentBuilder().AppendString("stage", "FETCH")
	if nonEmpty(filter) {
		fetch.AppendDocument("filter", filter)
	}
	return fetch.AppendDocument("inputStage", ixscanStage(p)).Build()
}

// idSetStage is the plan of an _id $in or range as mongod shows it: FETCH
// over an IXSCAN of the _id index.
func idSetStage(filter bsoncore.Document) bsoncore.Document {
	ixscan := bsoncore.NewDocumentBuilder().AppendString("stage", "IXSCAN").
		AppendDocument("keyPattern", bsoncore.NewDocumentBuilder().AppendInt32("_id", 1).Build()).
		AppendString("indexName", index.IDIndexName).AppendBoolean("isMultiKey", false).
		AppendBoolean("isUnique", true).AppendString("direction", "forward").Build()
	fetch := bsoncore.NewDocumentBuilder().AppendString("stage", "FETCH")
	if nonEmpty(filter) {
		fetch.AppendDocument("filter", filter)
	}
	return fetch.AppendDocument("inputStage", ixscan).Build()
}

// renameStage replaces a stage document's leading stage name.
func renameStage(stage bsoncore.Document, name string) bsoncore.Document {
	els, _ := stage.Elements()
	b := bsoncore.NewDocumentBuilder().AppendString("stage", name)
	for _, el := range els {
		if el.Key() != "stage" {
			b.AppendValue(el.Key(), el.Value())
		}
	}
	return b.Build()
}

// collscanStage is a collection scan in a direction.
func collscanStage(filter bsoncore.Document, direction string) bsoncore.Document {
	return bsoncore.NewDocumentBuilder().AppendString("stage", "COLLSCAN").
		AppendDocument("filter", value.OrEmpty(filter)).AppendString("direction", direction).Build()
}

// appendField adds one field to a stage document.
func appendField(stage bsoncore.Document, key string, v bsoncore.Document) bsoncore.Document {
	els, _ := stage.Elements()
	b := bsoncore.NewDocumentBuilder()
	for _, el := range els {
		b.AppendValue(el.Key(), el.Value())
	}
	return b.AppendDocument(key, v).Build()
}

// ixscanStage is the IXSCAN of an index plan.
func ixscanStage(p *Plan) bsoncore.Document {
	s := p.ix.Spec
	direction := "forward"
	if p.reverse {
		direction = "backward"
	}
	bounds := bsoncore.NewDocumentBuilder()
	fields := s.Fields
	keyPattern := s.Key
	if p.wildPath != "" {
		fields = []index.Field{{Path: "$_path"}, {Path: p.wildPath}}
		keyPattern = bsoncore.NewDocumentBuilder().AppendInt32("$_path", 1).AppendInt32(p.wildPath, 1).Build()
	}
	for i, f := range fields {
		arr := bsoncore.NewArrayBuilder()
		for _, iv := range p.bounds[i] {
			arr.AppendString(iv.Text())
		}
		bounds.AppendArray(f.Path, arr.Build())
	}
	ixscan := bsoncore.NewDocumentBuilder().AppendString("stage", "IXSCAN").
		AppendDocument("keyPattern", keyPattern).AppendString("indexName", s.Name)
	if c := s.Collation(); c != nil {
		ixscan.AppendDocument("collation", c.Expanded()) // as mongod shows it
	}
	return ixscan.
		AppendBoolean("isMultiKey", p.ix.Multikey).AppendBoolean("isUnique", s.Unique).
		AppendBoolean("isSparse", s.Sparse).AppendBoolean("isPartial", s.Partial != nil).
		AppendInt32("indexVersion", 2).AppendString("direction", direction).
		AppendDocument("indexBounds", bounds.Build()).Build()
}
