package plan

import (
	"context"
	"errors"
	"io"
	"time"

	"dumbodb/index"
	"dumbodb/query"
	"dumbodb/storage"
	"dumbodb/value"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Explained is the query part of an explained command, as the server
// reads it from the command: what is planned and what the plan tree shows.
type Explained struct {
	Kind          string // the explained command's name
	Filter, Sort  bsoncore.Document
	HasSort       bool
	Hint          bsoncore.Value
	Skip, Limit   int64
	Collation     bsoncore.Document
	Projection    bsoncore.Document
	HasProjection bool
	DistinctKey   string // distinct's key
}

// Explanation is explain's report of a plan: the queryPlanner's winning
// and rejected plans and, unless only the plan was asked for, the
// executionStats of running them.
type Explanation struct {
	WinningPlan    bsoncore.Document
	RejectedPlans  bsoncore.Array
	ExecutionStats bsoncore.Document // nil at verbosity queryPlanner
}

// Explain plans ex as running the command would, f being its compiled
// filter, and describes the plan; unless verbosity is queryPlanner it
// runs the plan and counts its work, and with allPlansExecution the
// rejected plans too. Planning and each run read a snapshot of their own
// from snapshot.
func Explain(ctx context.Context, snapshot func() (*storage.Snapshot, error), coll string, ex *Explained, f *query.Filter, verbosity string) (*Explanation, error) {
	snap, err := snapshot()
	if err != nil {
		return nil, err
	}
	in := Input{Filter: f, Sort: ex.Sort, Hint: ex.Hint}
	p, err := Query(snap, coll, in)
	if err != nil {
		return nil, err
	}
	var rejected []*Plan
	switch {
	case ex.Kind == "count" && nonEmpty(ex.Filter) && exactBounds(p, f):
		ex.Kind = "COUNT_SCAN"
	case ex.Kind == "distinct" && ex.DistinctKey != "" && !nonEmpty(ex.Collation):
		if dp := Distinct(snap, coll, f, ex.DistinctKey); dp != nil {
			p, ex.Kind = dp, "DISTINCT_SCAN"
		}
	case ex.Kind == "find":
		p.covered = coverable(p, f, ex.Projection, ex.Sort)
	}
	if ex.Kind != "COUNT_SCAN" && ex.Kind != "DISTINCT_SCAN" {
		rejected = rejectedPlans(snap, coll, in, p)
	}
	winning := ex.stages(p, f)
	rejectedArr := bsoncore.NewArrayBuilder()
	for _, rp := range rejected {
		rejectedArr.AppendDocument(ex.stages(rp, f))
	}
	e := &Explanation{WinningPlan: winning, RejectedPlans: rejectedArr.Build()}
	if verbosity != "queryPlanner" {
		stats, err := ex.executionStats(ctx, snapshot, coll, f, p, winning, rejected, verbosity == "allPlansExecution")
		if err != nil {
			return nil, err
		}
		e.ExecutionStats = stats
	}
	return e, nil
}

// executionStats runs the plan and reports what it examined; with all,
// it also runs the rejected plans and lists every plan's counts under
// allPlansExecution.
func (ex *Explained) executionStats(ctx context.Context, snapshot func() (*storage.Snapshot, error), coll string, f *query.Filter, p *Plan, winning bsoncore.Document, rejected []*Plan, all bool) (bsoncore.Document, error) {
	start := time.Now()
	st, err := ex.runPlan(ctx, snapshot, coll, f, p)
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
				if pst, err = ex.runPlan(ctx, snapshot, coll, f, rp); err != nil {
					return nil, err
				}
			}
			arr.AppendDocument(bsoncore.NewDocumentBuilder().
				AppendValue("nReturned", value.Count(pst.returned)).
				AppendValue("totalKeysExamined", value.Count(pst.keysExamined)).
				AppendValue("totalDocsExamined", value.Count(pst.docsExamined)).
				AppendDocument("executionStages", ex.stages(rp, f)).Build())
		}
		b.AppendArray("allPlansExecution", arr.Build())
	}
	return b.Build(), nil
}

// runPlan executes a plan of the explained command and counts its work;
// returned is after skip and limit.
func (ex *Explained) runPlan(ctx context.Context, snapshot func() (*storage.Snapshot, error), coll string, f *query.Filter, p *Plan) (execStats, error) {
	var st execStats
	snap, err := snapshot()
	if err != nil {
		return st, err
	}
	switch ex.Kind {
	case "COUNT_SCAN":
		n, err := countScan(ctx, snap, coll, p, &st)
		st.returned = n
		return st, err
	case "DISTINCT_SCAN":
		vals, err := distinctScan(ctx, snap, coll, p, ex.DistinctKey, &st)
		st.returned = int64(len(vals))
		return st, err
	}
	src, err := planSource(ctx, snap, coll, f, p, &st)
	if err != nil {
		return st, err
	}
	for ex.Limit == 0 || st.returned < ex.Limit+ex.Skip {
		if _, err := src.Next(ctx); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return st, err
		}
		st.returned++
	}
	st.returned = max(st.returned-ex.Skip, 0)
	return st, nil
}

// stages is the winning plan tree, outermost stage first.
func (ex *Explained) stages(p *Plan, f *query.Filter) bsoncore.Document {
	switch ex.Kind {
	case "COUNT_SCAN":
		return wrapStage("COUNT", renameStage(ixscanStage(p), "COUNT_SCAN"), bsoncore.NewDocumentBuilder())
	case "DISTINCT_SCAN":
		return wrapStage("PROJECTION_COVERED", renameStage(ixscanStage(p), "DISTINCT_SCAN"), bsoncore.NewDocumentBuilder())
	}
	plan := p.Stage(ex.Filter)
	if p.covered {
		plan = ixscanStage(p)
		if nonEmpty(ex.Filter) {
			plan = appendField(plan, "filter", ex.Filter)
		}
	}
	if ex.HasSort && nonEmpty(ex.Sort) && !p.sorted {
		plan = wrapStage("SORT", plan, bsoncore.NewDocumentBuilder().AppendDocument("sortPattern", ex.Sort))
	}
	if ex.Skip > 0 {
		plan = wrapStage("SKIP", plan, bsoncore.NewDocumentBuilder().AppendValue("skipAmount", value.Count(ex.Skip)))
	}
	if ex.Limit > 0 {
		plan = wrapStage("LIMIT", plan, bsoncore.NewDocumentBuilder().AppendValue("limitAmount", value.Count(ex.Limit)))
	}
	switch {
	case p.covered:
		plan = wrapStage("PROJECTION_COVERED", plan, bsoncore.NewDocumentBuilder().AppendDocument("transformBy", ex.Projection))
	case ex.HasProjection:
		plan = wrapStage("PROJECTION_DEFAULT", plan, bsoncore.NewDocumentBuilder())
	}
	return plan
}

func wrapStage(name string, input bsoncore.Document, b *bsoncore.DocumentBuilder) bsoncore.Document {
	return b.AppendString("stage", name).AppendDocument("inputStage", input).Build()
}

// Stage is the plan's leaf stage as explain shows it, filter being the
// query's: IDHACK, COLLSCAN, FETCH over IXSCAN, or the text stages.
func (p *Plan) Stage(filter bsoncore.Document) bsoncore.Document {
	switch {
	case p.idHack && p.ids != nil, p.idRange != nil:
		return idSetStage(filter)
	case p.idHack:
		return bsoncore.NewDocumentBuilder().AppendString("stage", "IDHACK").Build()
	case p.ix == nil:
		return bsoncore.NewDocumentBuilder().AppendString("stage", "COLLSCAN").
			AppendDocument("filter", value.OrEmpty(filter)).AppendString("direction", "forward").Build()
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
