package server

import (
	"slices"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/plan"
	"github.com/dumbodb/dumbodb/query"
	"github.com/dumbodb/dumbodb/value"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// explained is an explained command: its collection, the command as the
// reply repeats it, and the query part that plan.Explain describes.
type explained struct {
	coll             string
	commandForReport bsoncore.Document
	// geoNear is the leading $geoNear stage of an explained aggregate,
	// which is read as its near query (geonear.go).
	geoNear bsoncore.Document
	// The query part as the command gives it.
	Filter, Sort, Projection bsoncore.Document
	Hint                     bsoncore.Value
	Skip, Limit              int64
	plan.Explained
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
	if view, err := r.isView(ex.coll); err != nil || view {
		if err != nil {
			return nil, err
		}
		return r.explainOnView(ex, inner)
	}
	return r.explain(ex, inner, verbosity)
}

// explainTarget reads the collection and query of an explained command.
func explainTarget(cmd bsoncore.Document) (*explained, error) {
	first, err := cmd.IndexErr(0)
	if err != nil { // {explain: {}} names no command, as mongod words it
		return nil, mongoerr.New(mongoerr.CommandNotFound, "Explain failed due to unknown command: ")
	}
	coll, ok := first.Value().StringValueOK()
	if !ok {
		return nil, badNamespaceType(first.Key(), mongoerr.InvalidNamespace, first.Value())
	}
	ex := &explained{coll: coll, commandForReport: cmd}
	ex.Kind = first.Key()
	ex.Hint = cmd.Lookup("hint")
	ex.Collation, _ = cmd.Lookup("collation").DocumentOK()
	switch first.Key() {
	case "find":
		ex.Filter, _ = cmd.Lookup("filter").DocumentOK()
		ex.Sort, _ = cmd.Lookup("sort").DocumentOK()
		ex.Skip, _ = value.AsInt64(cmd.Lookup("skip"))
		ex.Limit, _ = value.AsInt64(cmd.Lookup("limit"))
		ex.Projection, _ = cmd.Lookup("projection").DocumentOK()
	case "count", "distinct":
		ex.Filter, _ = cmd.Lookup("query").DocumentOK()
		ex.DistinctKey, _ = cmd.Lookup("key").StringValueOK()
		ex.Skip, _ = value.AsInt64(cmd.Lookup("skip"))
		ex.Limit, _ = value.AsInt64(cmd.Lookup("limit"))
		ex.Limit = max(ex.Limit, -ex.Limit) // count takes a negative limit as its absolute value
	case "findAndModify", "findandmodify":
		ex.Filter, _ = cmd.Lookup("query").DocumentOK()
		ex.Sort, _ = cmd.Lookup("sort").DocumentOK()
	case "update", "delete":
		list := "updates"
		if first.Key() == "delete" {
			list = "deletes"
		}
		arr, _ := cmd.Lookup(list).ArrayOK()
		stmt, _ := firstDoc(arr).DocumentOK()
		ex.Filter, _ = bsoncore.Document(stmt).Lookup("q").DocumentOK()
		ex.Hint = bsoncore.Document(stmt).Lookup("hint")
	case "aggregate":
		arr, _ := cmd.Lookup("pipeline").ArrayOK()
		stage, _ := firstDoc(arr).DocumentOK()
		ex.Filter, _ = bsoncore.Document(stage).Lookup("$match").DocumentOK()
		if value.FirstKey(stage) == "$geoNear" {
			ex.geoNear = stage
		}
	case "mapReduce", "mapreduce":
		return nil, mongoerr.New(mongoerr.NotImplemented, "explain of mapReduce is not supported by DumboDB")
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

func (r *request) explain(ex *explained, inner bsoncore.Document, verbosity string) (bsoncore.Document, error) {
	rd, err := r.explainedRead(ex, inner)
	if err != nil {
		return nil, err
	}
	e, err := plan.Explain(r.ctx, r.snapshot, ex.coll, &ex.Explained, rd, verbosity)
	if err != nil {
		return nil, err
	}
	planner := bsoncore.NewDocumentBuilder().
		AppendString("namespace", r.ns(ex.coll)).
		AppendBoolean("indexFilterSet", false).
		AppendDocument("parsedQuery", value.OrEmpty(ex.Filter)).
		AppendDocument("winningPlan", e.WinningPlan).
		AppendArray("rejectedPlans", e.RejectedPlans).Build()
	b := bsoncore.NewDocumentBuilder().AppendString("explainVersion", "1").AppendDocument("queryPlanner", planner)
	if e.ExecutionStats != nil {
		b.AppendDocument("executionStats", e.ExecutionStats)
	}
	return r.explainEnd(b, ex.commandForReport), nil
}

// explainEnd finishes an explain reply as mongod's ends: the command
// explained, with its $db, and the server.
func (r *request) explainEnd(b *bsoncore.DocumentBuilder, cmd bsoncore.Document) bsoncore.Document {
	return b.AppendDocument("command", r.reportedCommand(cmd)).
		AppendDocument("serverInfo", bsoncore.NewDocumentBuilder().AppendString("host", "localhost").
			AppendInt32("port", int32(r.c.s.cfg.Port)).AppendString("version", mongoVersion).
			AppendString("gitVersion", gitVersion).Build()).
		AppendDouble("ok", 1).Build()
}

// reportedCommand is the explained command as mongod's explain repeats
// it: with the $db it ran on (as the request named it, "db@rev" kept).
func (r *request) reportedCommand(cmd bsoncore.Document) bsoncore.Document {
	if _, err := cmd.LookupErr("$db"); err == nil {
		return cmd
	}
	return withField(cmd, "$db", r.cmd.Lookup("$db"))
}

// explainedRead is the read the explained command runs: find's as find
// parses and compiles it; the others' from their filter, with count's
// skip and limit, findAndModify's sort and an aggregate's leading $sort.
func (r *request) explainedRead(ex *explained, inner bsoncore.Document) (*plan.Read, error) {
	if ex.Kind == "find" {
		return r.explainedFind(ex.coll, inner)
	}
	env, err := r.collEnv(ex.coll, ex.Collation, nil)
	if err != nil {
		return nil, err
	}
	f, err := r.explainedFilter(ex, env)
	if err != nil {
		return nil, err
	}
	rd := &plan.Read{Filter: f, FilterDoc: ex.Filter, Hint: ex.Hint}
	switch ex.Kind {
	case "count":
		rd.Skip, rd.Limit, rd.Consumer = ex.Skip, ex.Limit, plan.ForCount
	case "findAndModify", "findandmodify":
		if nonEmpty(ex.Sort) {
			if rd.Sort, err = query.CompileSortEnv(ex.Sort, env); err != nil {
				return nil, err
			}
		}
	case "aggregate":
		rd.Consumer = plan.ForPipeline
		if pipeline, ok := inner.Lookup("pipeline").ArrayOK(); ok && ex.geoNear == nil {
			if lead := leadingMatchOf(&aggregateArgs{pipeline: pipeline, hint: ex.Hint}, env); lead != nil {
				rd.SortDoc = lead.SortDoc
			}
		}
	}
	return rd, nil
}

// explainedFind parses and compiles an explained find as find does.
func (r *request) explainedFind(coll string, inner bsoncore.Document) (*plan.Read, error) {
	a := findArgs{batchSize: batchSizeAbsent}
	if err := parseTable("find", inner, findFields, &a); err != nil {
		return nil, err
	}
	snap, err := r.snapshot()
	if err != nil {
		return nil, err
	}
	collation := a.collation
	if collation == nil {
		collation = createdCollation(snap.Collection(coll))
	}
	rd, err := r.findRead(&a, collation, snap, coll)
	if err != nil {
		return nil, err
	}
	rd.RecordIDs = recordIDs(r.ctx, snap, coll)
	return rd, nil
}

// explainedFilter compiles the explained query: the filter, or a leading
// $geoNear's near query (its key found as the aggregate finds it). An
// aggregate's $match takes the rules of $match ($where refused), the
// other commands' filters those of a query.
func (r *request) explainedFilter(ex *explained, env *query.Env) (*query.Filter, error) {
	switch {
	case ex.geoNear == nil && ex.Kind == "aggregate":
		return query.CompileFilterEnv(value.OrEmpty(ex.Filter), env)
	case ex.geoNear == nil:
		return query.CompileQueryFilter(value.OrEmpty(ex.Filter), env)
	}
	snap, err := r.snapshot()
	if err != nil {
		return nil, err
	}
	a := &aggregateArgs{coll: ex.coll, pipeline: stagesArray([]bsoncore.Document{ex.geoNear})}
	if err := withGeoNearKey(snap, a); err != nil {
		return nil, err
	}
	g, err := query.ParseGeoNear(pipelineStages(a.pipeline)[0].Lookup("$geoNear"))
	if err != nil {
		return nil, err
	}
	ex.Filter = geoNearQuery(ex.geoNear)
	return g.Filter(env)
}

// withoutFields is doc less the named top-level fields.
func withoutFields(doc bsoncore.Document, names ...string) bsoncore.Document {
	els, _ := doc.Elements()
	b := bsoncore.NewDocumentBuilder()
	for _, el := range els {
		if !slices.Contains(names, el.Key()) {
			b.AppendValue(el.Key(), el.Value())
		}
	}
	return b.Build()
}
