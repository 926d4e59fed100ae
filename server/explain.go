package server

import (
	"errors"
	"io"
	"time"

	"dumbodb/index"
	"dumbodb/query"
	"dumbodb/query/mongoerr"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// explained is the query part of an explained command.
type explained struct {
	coll             string
	filter, sort     bsoncore.Document
	hint             bsoncore.Value
	skip, limit      int64
	collation        bsoncore.Document
	projection       bool
	proj             bsoncore.Document
	hasSort          bool
	kind             string // the explained command's name
	distinctKey      string
	commandForReport bsoncore.Document
}

// cmdExplain explains find, count, distinct, update, delete, findAndModify
// and aggregate (through a leading $match): the plan, and with
// executionStats the counts of running it.
func cmdExplain(r *request) (bsoncore.Document, error) {
	inner, ok := r.cmd.Index(0).Value().DocumentOK()
	if !ok {
		return nil, typeMismatch("explain", "explain", r.cmd.Index(0).Value(), "object")
	}
	verbosity := "allPlansExecution"
	if err := r.parseArgs(map[string]fieldHandler{"verbosity": r.stringArg("verbosity", &verbosity)}); err != nil {
		return nil, err
	}
	switch verbosity {
	case "queryPlanner", "executionStats", "allPlansExecution":
	default:
		return nil, mongoerr.New(mongoerr.FailedToParse, "verbosity string must be one of {'queryPlanner', 'executionStats', 'allPlansExecution'}")
	}
	ex, err := explainTarget(inner)
	if err != nil {
		return nil, err
	}
	return r.explain(ex, verbosity)
}

// explainTarget reads the collection and query of an explained command.
func explainTarget(cmd bsoncore.Document) (*explained, error) {
	first, err := cmd.IndexErr(0)
	if err != nil { // {explain: {}} names no command, as mongod words it
		return nil, mongoerr.New(mongoerr.CommandNotFound, "Explain failed due to unknown command: ")
	}
	coll, ok := first.Value().StringValueOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.InvalidNamespace, "explain needs a collection name")
	}
	ex := &explained{coll: coll, commandForReport: cmd, kind: first.Key()}
	ex.hint = cmd.Lookup("hint")
	ex.collation, _ = cmd.Lookup("collation").DocumentOK()
	switch first.Key() {
	case "find":
		ex.filter, _ = cmd.Lookup("filter").DocumentOK()
		ex.sort, ex.hasSort = cmd.Lookup("sort").DocumentOK()
		ex.skip, _ = query.AsInt64(cmd.Lookup("skip"))
		ex.limit, _ = query.AsInt64(cmd.Lookup("limit"))
		ex.proj, ex.projection = cmd.Lookup("projection").DocumentOK()
	case "count", "distinct":
		ex.filter, _ = cmd.Lookup("query").DocumentOK()
		ex.distinctKey, _ = cmd.Lookup("key").StringValueOK()
	case "findAndModify", "findandmodify":
		ex.filter, _ = cmd.Lookup("query").DocumentOK()
		ex.sort, ex.hasSort = cmd.Lookup("sort").DocumentOK()
	case "update", "delete":
		list := "updates"
		if first.Key() == "delete" {
			list = "deletes"
		}
		arr, _ := cmd.Lookup(list).ArrayOK()
		stmt, _ := firstDoc(arr).DocumentOK()
		ex.filter, _ = bsoncore.Document(stmt).Lookup("q").DocumentOK()
		ex.hint = bsoncore.Document(stmt).Lookup("hint")
	case "aggregate":
		arr, _ := cmd.Lookup("pipeline").ArrayOK()
		stage, _ := firstDoc(arr).DocumentOK()
		ex.filter, _ = bsoncore.Document(stage).Lookup("$match").DocumentOK()
	default:
		return nil, mongoerr.New(mongoerr.CommandNotFound, "Explain failed due to unknown command: %s", first.Key())
	}
	return ex, nil
}

// firstDoc is an array's first element (zero when empty).
func firstDoc(arr bsoncore.Array) bsoncore.Value {
	vals, _ := arr.Values()
	if len(vals) == 0 {
		return bsoncore.Value{}
	}
	return vals[0]
}

func (r *request) explain(ex *explained, verbosity string) (bsoncore.Document, error) {
	env, err := r.collEnv(ex.coll, ex.collation, nil)
	if err != nil {
		return nil, err
	}
	f, err := query.CompileFilterEnv(orEmpty(ex.filter), env)
	if err != nil {
		return nil, err
	}
	snap, err := r.snapshot()
	if err != nil {
		return nil, err
	}
	in := planInput{filter: f, sort: ex.sort, hint: ex.hint}
	p, err := planQuery(snap, ex.coll, in)
	if err != nil {
		return nil, err
	}
	var rejected []*queryPlan
	switch {
	case ex.kind == "count" && nonEmpty(ex.filter) && exactBounds(p, f):
		ex.kind = "COUNT_SCAN"
	case ex.kind == "distinct" && ex.distinctKey != "" && !nonEmpty(ex.collation):
		if dp := planDistinct(snap, ex.coll, f, ex.distinctKey); dp != nil {
			p, ex.kind = dp, "DISTINCT_SCAN"
		}
	case ex.kind == "find":
		p.covered = coverable(p, f, ex.proj, ex.sort)
	}
	if ex.kind != "COUNT_SCAN" && ex.kind != "DISTINCT_SCAN" {
		rejected = rejectedPlans(snap, ex.coll, in, p)
	}
	winning := ex.stages(p, f)
	rejectedArr := bsoncore.NewArrayBuilder()
	for _, rp := range rejected {
		rejectedArr.AppendDocument(ex.stages(rp, f))
	}
	planner := bsoncore.NewDocumentBuilder().
		AppendString("namespace", r.ns(ex.coll)).
		AppendBoolean("indexFilterSet", false).
		AppendDocument("parsedQuery", orEmpty(ex.filter)).
		AppendDocument("winningPlan", winning).
		AppendArray("rejectedPlans", rejectedArr.Build()).Build()
	b := bsoncore.NewDocumentBuilder().AppendString("explainVersion", "1").AppendDocument("queryPlanner", planner)
	if verbosity != "queryPlanner" {
		stats, err := r.executionStats(ex, f, p, winning, rejected, verbosity == "allPlansExecution")
		if err != nil {
			return nil, err
		}
		b.AppendDocument("executionStats", stats)
	}
	return b.AppendDocument("command", ex.commandForReport).
		AppendDocument("serverInfo", bsoncore.NewDocumentBuilder().AppendString("host", "localhost").
			AppendString("version", mongoVersion).Build()).
		AppendDouble("ok", 1).Build(), nil
}

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
