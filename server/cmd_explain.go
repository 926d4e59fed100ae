package server

import (
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
