package server

import (
	"errors"
	"io"
	"time"

	"dumbodb/index"
	"dumbodb/query"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// executionStats runs the plan and reports what it examined; with all,
// it also runs the rejected plans and lists every plan's counts under
// allPlansExecution.
func (r *request) executionStats(ex *explained, f *query.Filter, p *queryPlan, winning bsoncore.Document, rejected []*queryPlan, all bool) (bsoncore.Document, error) {
	start := time.Now()
	st, err := r.runPlan(ex, f, p)
	if err != nil {
		return nil, err
	}
	b := bsoncore.NewDocumentBuilder().
		AppendBoolean("executionSuccess", true).
		AppendInt64("nReturned", st.returned).
		AppendInt64("executionTimeMillis", time.Since(start).Milliseconds()).
		AppendInt64("totalKeysExamined", st.keysExamined).
		AppendInt64("totalDocsExamined", st.docsExamined).
		AppendDocument("executionStages", winning)
	if all {
		arr := bsoncore.NewArrayBuilder()
		for i, rp := range append([]*queryPlan{p}, rejected...) {
			pst := st
			if i > 0 {
				if pst, err = r.runPlan(ex, f, rp); err != nil {
					return nil, err
				}
			}
			arr.AppendDocument(bsoncore.NewDocumentBuilder().
				AppendInt64("nReturned", pst.returned).
				AppendInt64("totalKeysExamined", pst.keysExamined).
				AppendInt64("totalDocsExamined", pst.docsExamined).
				AppendDocument("executionStages", ex.stages(rp, f)).Build())
		}
		b.AppendArray("allPlansExecution", arr.Build())
	}
	return b.Build(), nil
}

// runPlan executes a plan of the explained command and counts its work;
// returned is after skip and limit.
func (r *request) runPlan(ex *explained, f *query.Filter, p *queryPlan) (execStats, error) {
	var st execStats
	snap, err := r.snapshot()
	if err != nil {
		return st, err
	}
	switch ex.kind {
	case "COUNT_SCAN":
		n, err := countScan(r.ctx, snap, ex.coll, p, &st)
		st.returned = n
		return st, err
	case "DISTINCT_SCAN":
		vals, err := distinctScan(r.ctx, snap, ex.coll, p, ex.distinctKey, &st)
		st.returned = int64(len(vals))
		return st, err
	}
	src, err := planSource(r.ctx, snap, ex.coll, f, p, &st)
	if err != nil {
		return st, err
	}
	for ex.limit == 0 || st.returned < ex.limit+ex.skip {
		if _, err := src.Next(r.ctx); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return st, err
		}
		st.returned++
	}
	st.returned = max(st.returned-ex.skip, 0)
	return st, nil
}

// stages is the winning plan tree, outermost stage first.
func (ex *explained) stages(p *queryPlan, f *query.Filter) bsoncore.Document {
	switch ex.kind {
	case "COUNT_SCAN":
		return wrapStage("COUNT", renameStage(ixscanStage(p), "COUNT_SCAN"), bsoncore.NewDocumentBuilder())
	case "DISTINCT_SCAN":
		return wrapStage("PROJECTION_COVERED", renameStage(ixscanStage(p), "DISTINCT_SCAN"), bsoncore.NewDocumentBuilder())
	}
	plan := scanStage(p, ex.filter)
	if p.covered {
		plan = ixscanStage(p)
		if nonEmpty(ex.filter) {
			plan = appendField(plan, "filter", ex.filter)
		}
	}
	if ex.hasSort && nonEmpty(ex.sort) && !p.sorted {
		plan = wrapStage("SORT", plan, bsoncore.NewDocumentBuilder().AppendDocument("sortPattern", ex.sort))
	}
	if ex.skip > 0 {
		plan = wrapStage("SKIP", plan, bsoncore.NewDocumentBuilder().AppendInt64("skipAmount", ex.skip))
	}
	if ex.limit > 0 {
		plan = wrapStage("LIMIT", plan, bsoncore.NewDocumentBuilder().AppendInt64("limitAmount", ex.limit))
	}
	switch {
	case p.covered:
		plan = wrapStage("PROJECTION_COVERED", plan, bsoncore.NewDocumentBuilder().AppendDocument("transformBy", ex.proj))
	case ex.projection:
		plan = wrapStage("PROJECTION_DEFAULT", plan, bsoncore.NewDocumentBuilder())
	}
	return plan
}

func wrapStage(name string, input bsoncore.Document, b *bsoncore.DocumentBuilder) bsoncore.Document {
	return b.AppendString("stage", name).AppendDocument("inputStage", input).Build()
}

// scanStage is the leaf: IDHACK, COLLSCAN or FETCH over IXSCAN.
func scanStage(p *queryPlan, filter bsoncore.Document) bsoncore.Document {
	switch {
	case p.idHack:
		return bsoncore.NewDocumentBuilder().AppendString("stage", "IDHACK").Build()
	case p.ix == nil:
		return bsoncore.NewDocumentBuilder().AppendString("stage", "COLLSCAN").
			AppendDocument("filter", orEmpty(filter)).AppendString("direction", "forward").Build()
	}
	if p.text != nil && p.orClauses != nil {
		return textOrStage(p, filter)
	}
	if p.text != nil {
		return textStage(p, filter)
	}
	fetch := bsoncore.NewDocumentBuilder().AppendString("stage", "FETCH")
	if nonEmpty(filter) {
		fetch.AppendDocument("filter", filter)
	}
	return fetch.AppendDocument("inputStage", ixscanStage(p)).Build()
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
func ixscanStage(p *queryPlan) bsoncore.Document {
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
