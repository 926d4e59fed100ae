package server

import (
	"cmp"
	"context"
	"errors"
	"os"
	"slices"

	"github.com/dumbodb/dumbodb/auth"
	"github.com/dumbodb/dumbodb/index"
	"github.com/dumbodb/dumbodb/interrupt"
	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/plan"
	"github.com/dumbodb/dumbodb/query"
	"github.com/dumbodb/dumbodb/storage"
	"github.com/dumbodb/dumbodb/value"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// aggregateArgs are the aggregate command's fields.
type aggregateArgs struct {
	pipeline       bsoncore.Array
	cursorOpts     bsoncore.Document
	collation, let bsoncore.Document
	explain        bool
	allowDiskUse   bool
	hint           bsoncore.Value
	collectionless bool
	coll           string
	bypass         bool // bypassDocumentValidation, for $out and $merge
}

func (r *request) parseAggregate() (*aggregateArgs, error) {
	a := &aggregateArgs{}
	v := r.cmd.Index(0).Value()
	if n, ok := v.AsInt64OK(); ok && n == 1 {
		a.collectionless = true
	} else {
		coll, err := r.collectionArg()
		if err != nil {
			return nil, err
		}
		a.coll = coll
	}
	err := r.parseArgs(map[string]fieldHandler{
		"pipeline":                 r.arrayArg("pipeline", &a.pipeline),
		"cursor":                   cursorOptionArg(&a.cursorOpts),
		"explain":                  r.boolArg("explain", &a.explain),
		"allowDiskUse":             r.boolArg("allowDiskUse", &a.allowDiskUse),
		"bypassDocumentValidation": r.boolArg("bypassDocumentValidation", &a.bypass),
		"collation":                r.optDocArg("collation", &a.collation),
		"hint":                     r.hintArg(&a.hint),
		"let":                      r.optDocArg("let", &a.let),
	})
	if err != nil {
		return nil, err
	}
	if a.pipeline == nil {
		return nil, mongoerr.New(mongoerr.Location40414, "BSON field 'aggregate.pipeline' is missing but a required field")
	}
	if a.cursorOpts == nil && !a.explain {
		return nil, mongoerr.New(mongoerr.FailedToParse, "The 'cursor' option is required, except for aggregate with the explain argument")
	}
	if a.hint.Type != 0 {
		if err := r.checkHint(a.hint); err != nil {
			return nil, err
		}
	}
	return a, r.checkPipelineWrite(a.pipeline)
}

// checkPipelineWrite refuses $out and $merge where mongod does: in a
// transaction (their writes would not be part of it) and under a
// linearizable read concern (such a read must not write).
func (r *request) checkPipelineWrite(pipeline bsoncore.Array) error {
	vals, _ := pipeline.Values()
	for _, v := range vals {
		stage, _ := v.DocumentOK()
		name := value.FirstKey(stage)
		if name != "$out" && name != "$merge" {
			continue
		}
		switch {
		case r.txn != nil:
			return mongoerr.New(mongoerr.OperationNotSupportedInTransaction, "%s cannot be used in a transaction", name)
		case r.readLevel == "linearizable":
			return mongoerr.New(mongoerr.InvalidOptions, "%s cannot be used with a 'linearizable' read concern level", name)
		}
	}
	return nil
}

func cmdAggregate(r *request) (bsoncore.Document, error) {
	a, err := r.parseAggregate()
	if err != nil {
		return nil, err
	}
	batchSize, err := cursorBatchSize(r, value.OrEmpty(a.cursorOpts))
	if err != nil {
		return nil, err
	}
	stages := pipelineStages(a.pipeline)
	if err := r.changeStreamReadConcern(stages); err != nil {
		return nil, err
	}
	for i, st := range stages {
		switch {
		case value.FirstKey(st) != "$changeStream":
		case i > 0:
			return nil, mongoerr.New(mongoerr.Location40602, "$changeStream is only valid as the first stage in a pipeline")
		case a.explain:
			return nil, mongoerr.New(mongoerr.NotImplemented, "explain of a $changeStream pipeline is not supported by DumboDB")
		default:
			reply, err := startChangeStream(r, a, stages, batchSize)
			if err != nil {
				return nil, labelStreamError(err) // as mongod labels the aggregate's errors too
			}
			return reply, nil
		}
	}
	src, ns, explained, err := r.aggregateSource(a)
	if err != nil || explained != nil {
		return explained, err
	}
	return r.startCursor(ns, pipelineSource{src}, batchSize, false, false)
}

// aggregateSource compiles and starts an aggregation (or, with explain,
// returns its explanation): on a view, its definition's stages run first
// over the collection underneath, and the cursor keeps the view's name.
func (r *request) aggregateSource(a *aggregateArgs) (docSource, string, bsoncore.Document, error) {
	snap, err := r.snapshot()
	if err != nil {
		return nil, "", nil, err
	}
	ns := r.aggregateNS(a)
	if !a.collectionless {
		if err := onView(snap, a); err != nil {
			return nil, "", nil, err
		}
		if err := withGeoNearKey(snap, a); err != nil {
			return nil, "", nil, err
		}
	}
	env, err := r.collEnv(a.coll, a.collation, a.let)
	if err != nil {
		return nil, "", nil, err
	}
	host, _ := os.Hostname()
	p, err := query.CompilePipelineOpts(a.pipeline, query.PipelineOptions{
		Env:            env,
		Catalog:        snapshotCatalog{r, snap},
		Writer:         aggWriter{r: r, bypass: a.bypass},
		DB:             r.db,
		Collection:     a.coll,
		Host:           host,
		AllowDiskUse:   a.allowDiskUse,
		Collectionless: a.collectionless,
		Sessions:       func(f query.SessionFilter) []bsoncore.Document { return r.c.s.listSessions(f, r.sessionUID()) },
		CurrentOp:      r.currentOps,
	})
	if err != nil {
		return nil, "", nil, err
	}
	var lead *leadingMatch
	if !a.collectionless {
		if lead = leadingMatchOf(a, env); lead == nil {
			if lead, err = planLeadingGeoNear(snap, a, env); err != nil {
				return nil, "", nil, err
			}
		}
	}
	if a.explain {
		b, err := explainAggregate(ns, a.coll, p, lead, snap, env)
		if err != nil {
			return nil, ns, nil, err
		}
		return nil, ns, r.explainEnd(b, withoutFields(r.cmd, "lsid", "$clusterTime", "$readPreference")), nil
	}
	r.c.s.stats.opQuery.Add(1)
	in, err := r.pipelineInput(snap, a, lead)
	if err != nil {
		return nil, "", nil, err
	}
	return p.Run(in), ns, nil, nil
}

// aggregateNS is an aggregate's namespace: its collection's, or
// db.$cmd.aggregate for aggregate: 1.
func (r *request) aggregateNS(a *aggregateArgs) string {
	if a.collectionless {
		return r.ns("$cmd.aggregate")
	}
	return r.ns(a.coll)
}

// pipelineInput is what a pipeline reads: the planned leading $match, a
// scan of the collection, or nothing.
func (r *request) pipelineInput(snap *storage.Snapshot, a *aggregateArgs, lead *leadingMatch) (query.Stream, error) {
	reads := plan.PipelineReads(pipelineStages(a.pipeline))
	switch {
	case lead != nil:
		lead.PipelineReads = reads
		ex, err := plan.Execute(r.ctx, snap, a.coll, lead)
		if err != nil {
			return nil, err
		}
		return ex.Source, nil
	case !a.collectionless:
		it, err := snap.Scan(r.ctx, a.coll)
		if err != nil {
			return nil, err
		}
		if reads != nil {
			it.SetFields(reads, reads)
		}
		return it, nil
	}
	return query.NewSliceStream(nil), nil
}

// onView turns an aggregation of a view into one of the collection under
// it, its definition's stages first (so that a leading $match of the view
// uses the collection's indexes), in the view's default collation unless
// the command names one.
func onView(snap *storage.Snapshot, a *aggregateArgs) error {
	rv, isView, err := resolveView(snap, a.coll)
	if err != nil || !isView {
		return err
	}
	a.coll = rv.base
	a.hint = timeseriesHint(rv.stages, a.hint)
	a.pipeline = stagesArray(viewPipeline(rv.stages, pipelineStages(a.pipeline)))
	if a.collation == nil {
		a.collation = rv.collation
		return nil
	}
	return sameViewCollation(a.collation, rv.collation)
}

// viewPipeline is the pipeline a read of a view runs on the collection
// under it: the view's stages, then the read's. A read's leading $match
// goes first when the view only filters and sorts (filters commute with
// both), and leading $match stages are joined into one, so that the
// planner can use the collection's indexes for the view's filter and the
// read's together.
func viewPipeline(view, read []bsoncore.Document) []bsoncore.Document {
	if stages, ok := timeseriesPipeline(view, read); ok {
		return stages
	}
	stages := append(append([]bsoncore.Document(nil), view...), read...)
	if len(read) > 0 && isMatchStage(read[0]) && onlyStages(view, "$match", "$sort") {
		stages = append(append([]bsoncore.Document{read[0]}, view...), read[1:]...)
	}
	for len(stages) > 1 && isMatchStage(stages[0]) && isMatchStage(stages[1]) {
		stages = append([]bsoncore.Document{andMatch(stages[0], stages[1])}, stages[2:]...)
	}
	return stages
}

// isMatchStage reports a $match stage that may move and join others: one
// without $text, which must stay the first stage of its own.
func isMatchStage(stage bsoncore.Document) bool {
	if value.FirstKey(stage) != "$match" {
		return false
	}
	filter, ok := stage.Lookup("$match").DocumentOK()
	if !ok {
		return false
	}
	_, hasText := value.LookupField(filter, "$text")
	return !hasText
}

func onlyStages(stages []bsoncore.Document, names ...string) bool {
	for _, st := range stages {
		if !slices.Contains(names, value.FirstKey(st)) {
			return false
		}
	}
	return true
}

// andMatch is the $match of both stages' filters.
func andMatch(a, b bsoncore.Document) bsoncore.Document {
	fa, _ := a.Lookup("$match").DocumentOK()
	fb, _ := b.Lookup("$match").DocumentOK()
	both := bsoncore.NewArrayBuilder().AppendDocument(fa).AppendDocument(fb).Build()
	and := bsoncore.NewDocumentBuilder().AppendArray("$and", both).Build()
	return bsoncore.NewDocumentBuilder().AppendDocument("$match", and).Build()
}

// sameViewCollation refuses, as mongod does, an operation on a view whose
// collation is not the view's.
func sameViewCollation(given, view bsoncore.Document) error {
	g, err := value.ParseCollation(given)
	if err != nil {
		return err
	}
	var v *value.Collation // nil: the simple collation
	if view != nil {
		if v, err = value.ParseCollation(view); err != nil {
			return err
		}
	}
	if !g.Equal(v) {
		return mongoerr.New(mongoerr.OptionNotSupportedOnView, "Cannot override a view's default collation")
	}
	return nil
}

// leadingMatch is the read of a pipeline that starts with $match (or
// $geoNear): the planner picks an index for its filter (and a $sort right
// after it), as for find. The stages still all run, so results are the
// same.
type leadingMatch = plan.Read

// leadingMatchOf is the read of a leading $match; nil when the pipeline
// has none (or its filter is not one find would take: the stage reports
// errors).
func leadingMatchOf(a *aggregateArgs, env *query.Env) *leadingMatch {
	vals, _ := a.pipeline.Values()
	if len(vals) == 0 {
		return nil
	}
	first, _ := vals[0].DocumentOK()
	filter, ok := first.Lookup("$match").DocumentOK()
	if !ok || len(first) == 0 || value.FirstKey(first) != "$match" {
		return nil
	}
	f, err := query.CompileFilterEnv(filter, env)
	if err != nil {
		return nil
	}
	lead := &leadingMatch{Filter: f, FilterDoc: filter, Hint: a.hint, Consumer: plan.ForPipeline}
	if len(vals) > 1 {
		if next, ok := vals[1].DocumentOK(); ok && value.FirstKey(next) == "$sort" {
			lead.SortDoc, _ = next.Lookup("$sort").DocumentOK()
		}
	}
	return lead
}

func pipelineStages(pipeline bsoncore.Array) []bsoncore.Document {
	vals, _ := pipeline.Values()
	out := make([]bsoncore.Document, 0, len(vals))
	for _, v := range vals {
		d, ok := v.DocumentOK()
		if !ok {
			return nil
		}
		out = append(out, d)
	}
	return out
}

// explainAggregate describes the plan: the read of the collection (an
// index scan for a leading $match that has one) feeding the stages in
// order; each $lookup by localField/foreignField names the index it
// probes in indexesUsed (empty: it scans the foreign collection).
func explainAggregate(ns, coll string, p *query.Pipeline, lead *leadingMatch, snap *storage.Snapshot, env *query.Env) (*bsoncore.DocumentBuilder, error) {
	winning := bsoncore.NewDocumentBuilder().AppendString("stage", "COLLSCAN").AppendString("direction", "forward").Build()
	parsed := bsoncore.NewDocumentBuilder().Build()
	if lead != nil {
		var err error
		if winning, err = plan.Tree(snap, coll, lead); err != nil {
			return nil, err
		}
		parsed = lead.FilterDoc
	}
	planner := bsoncore.NewDocumentBuilder().
		AppendString("namespace", ns).
		AppendDocument("parsedQuery", parsed).
		AppendDocument("winningPlan", winning).
		AppendArray("rejectedPlans", bsoncore.NewArrayBuilder().Build()).
		Build()
	stages := bsoncore.NewArrayBuilder().AppendDocument(bsoncore.NewDocumentBuilder().
		AppendDocument("$cursor", bsoncore.NewDocumentBuilder().AppendDocument("queryPlanner", planner).Build()).Build())
	for _, s := range p.Specs() {
		stages.AppendDocument(withLookupIndex(s, snap, env))
	}
	return bsoncore.NewDocumentBuilder().
		AppendString("explainVersion", "1").
		AppendArray("stages", stages.Build()).
		AppendDocument("queryPlanner", planner), nil
}

// withLookupIndex adds indexesUsed to a $lookup stage's explain entry:
// the index LookupEqual probes for it, if any (for localField and
// foreignField, or for a let/pipeline form that starts with an $expr
// equality on a foreign field).
func withLookupIndex(stage bsoncore.Document, snap *storage.Snapshot, env *query.Env) bsoncore.Document {
	spec, ok := stage.Lookup("$lookup").DocumentOK()
	if !ok || value.FirstKey(stage) != "$lookup" {
		return stage
	}
	from, _ := spec.Lookup("from").StringValueOK()
	foreign, hasForeign := spec.Lookup("foreignField").StringValueOK()
	if _, hasLocal := spec.Lookup("localField").StringValueOK(); !hasLocal || !hasForeign {
		foreign = query.LookupProbeField(spec)
	}
	if from == "" {
		return stage
	}
	used := bsoncore.NewArrayBuilder()
	if foreign != "" && (env == nil || env.Collation == nil) {
		if foreign == "_id" {
			used.AppendString(index.IDIndexName)
		} else if ix := plan.LookupIndex(snap.Indexes(from), foreign); ix != nil {
			used.AppendString(ix.Spec.Name)
		}
	}
	return bsoncore.NewDocumentBuilder().AppendDocument("$lookup", spec).
		AppendArray("indexesUsed", used.Build()).Build()
}

// snapshotCatalog serves the pipeline's other collections from the same
// snapshot as its input, so all stages read one revision.
// A view among them is read through its definition.
type snapshotCatalog struct {
	r    *request
	snap *storage.Snapshot
}

func (c snapshotCatalog) Scan(ctx context.Context, coll string) (query.Stream, error) {
	rv, isView, err := resolveView(c.snap, coll)
	if err != nil || !isView {
		return c.snap.Scan(ctx, coll)
	}
	return c.r.viewStream(c.snap, rv)
}

func (c snapshotCatalog) Count(_ context.Context, coll string) (int64, bool, error) {
	info, ok := c.snap.Collection(coll)
	if _, isView := viewOf(info); !ok || isView {
		return 0, false, nil
	}
	n, err := c.snap.Count(coll)
	return int64(n), true, err
}

// LookupEqual probes the index on path (or the _id itself) for the local
// values of a $lookup: query.EqualityCatalog, served by plan.LookupEqual.
// A view has no index of its own: the lookup reads it through Scan.
func (c snapshotCatalog) LookupEqual(ctx context.Context, coll, path string, vals []bsoncore.Value) ([]bsoncore.Document, bool, error) {
	if info, ok := c.snap.Collection(coll); ok {
		if _, isView := viewOf(info); isView {
			return nil, false, nil
		}
	}
	return plan.LookupEqual(ctx, c.snap, coll, path, vals)
}

// aggWriter writes $out and $merge results, each in one transaction,
// checking them against the target's validator unless bypass.
type aggWriter struct {
	r      *request
	bypass bool
}

// tx runs fn on the target database's branch. The target is named like $db:
// "db" or "db@branch", validated by the same rules; the request's own
// database without a revision means the request's branch.
func (w aggWriter) tx(ctx context.Context, full, coll string, fn func(tx *storage.Tx) error) error {
	name, rev := splitDBName(full)
	if err := validateDBName(name); err != nil {
		return err
	}
	if err := validateCollectionName(name, coll); err != nil {
		return err
	}
	if err := validateCreatableDB(name, coll); err != nil {
		return err
	}
	// The aggregate itself needs only find; its target needs writes.
	if err := w.r.require(auth.Insert|auth.Update|auth.Remove, name); err != nil {
		return err
	}
	if err := w.r.refuseOnReplica(auth.Insert); err != nil {
		return err
	}
	if err := w.r.requireBypass(w.bypass, name); err != nil {
		return err
	}
	a := w.r.c.currentAuth()
	if name == w.r.db && rev == "" {
		if err := w.r.checkRevisionWrite(a, name, w.r.rev); err != nil {
			return err
		}
	}
	d, err := w.r.c.s.engine.Database(ctx, name, true)
	if err != nil {
		return err
	}
	if name == w.r.db && rev == "" {
		return w.r.writeTo(d, fn)
	}
	target, err := d.Resolve(ctx, cmp.Or(rev, storage.DefaultBranch), storage.DefaultBranch)
	if err != nil {
		return err
	}
	if target.ReadOnly() {
		return mongoerr.New(mongoerr.ReadOnlyRevision, "cannot write to %s: it is a read-only revision (a tag or a commit); write to a branch", full)
	}
	if err := w.r.checkBranchWrite(a, name, target.Branch); err != nil {
		return err
	}
	return writeWaitingForTransactions(ctx, d, target.Branch, fn)
}

// Replace swaps the target's content for docs, as $out does. The new
// collection keeps the target's options (its validator among them), as
// mongod's $out does.
func (w aggWriter) Replace(ctx context.Context, db, coll string, docs []bsoncore.Document) error {
	return w.tx(ctx, db, coll, func(tx *storage.Tx) error {
		var opts bsoncore.Document
		if info, ok := tx.Collection(coll); ok {
			if isTimeseries(info) { // its measurements are replaced
				return w.r.replaceTimeseries(ctx, tx, coll, nil, docs)
			}
			if info.Capped() { // mongod's $out replaces no capped collection
				return mongoerr.New(mongoerr.Location17152, "namespace '%s.%s' is capped so it can't be used for $out", db, coll)
			}
			if err := refuseWriteToView(info, db, coll); err != nil {
				return err
			}
			opts = info.Options
		}
		if err := tx.DropCollection(coll); err != nil && !errors.Is(err, storage.ErrNamespaceNotFound) {
			return toMongoErr(err)
		}
		if _, err := tx.CreateCollection(ctx, coll, opts); err != nil {
			return toMongoErr(err)
		}
		t, err := w.target(tx, db, coll)
		if err != nil {
			return err
		}
		var interrupt interrupt.Pacer
		for _, d := range docs {
			if err := interrupt.Check(ctx); err != nil {
				return err
			}
			if err := t.Insert(ctx, d); err != nil {
				return err
			}
		}
		return nil
	})
}

// Update runs $merge's writes against the target.
func (w aggWriter) Update(ctx context.Context, db, coll string, fn func(query.WriteTarget) error) error {
	return w.tx(ctx, db, coll, func(tx *storage.Tx) error {
		if info, ok := tx.Collection(coll); ok {
			if err := refuseWriteToView(info, db, coll); err != nil {
				return err
			}
		}
		if _, err := tx.EnsureCollection(ctx, coll); err != nil {
			return toMongoErr(err)
		}
		t, err := w.target(tx, db, coll)
		if err != nil {
			return err
		}
		return fn(t)
	})
}

// target is the collection coll of db in tx, with its validator.
func (w aggWriter) target(tx *storage.Tx, db, coll string) (writeTarget, error) {
	dv, err := w.r.validatorFor(tx, db, coll, w.bypass)
	return writeTarget{tx: tx, ns: db + "." + coll, coll: coll, dv: dv}, err
}

// writeTarget is one collection of a write transaction.
type writeTarget struct {
	tx       *storage.Tx
	ns, coll string
	dv       *docValidator
}

func (t writeTarget) Get(ctx context.Context, id bsoncore.Value) (bsoncore.Document, bool, error) {
	return t.tx.Get(ctx, t.coll, id)
}

func (t writeTarget) Insert(ctx context.Context, doc bsoncore.Document) error {
	if err := t.dv.checkInsert(doc); err != nil {
		return err
	}
	return t.check(doc, t.tx.Insert(ctx, t.coll, doc))
}

func (t writeTarget) Replace(ctx context.Context, doc bsoncore.Document) error {
	if err := t.dv.checkReplace(ctx, t.tx, t.coll, doc); err != nil {
		return err
	}
	return t.check(doc, t.tx.Replace(ctx, t.coll, doc))
}

// uniqueIndexOn is the unique index (not partial, sparse or hidden, and
// with the simple collation of $merge's binary matching) whose key fields
// are exactly fields, in any order; nil if none.
func (t writeTarget) uniqueIndexOn(fields []string) *storage.IndexInfo {
	want := map[string]bool{}
	for _, f := range fields {
		want[f] = true
	}
	ixs := t.tx.Indexes(t.coll)
	for i := range ixs {
		ix := &ixs[i]
		s := ix.Spec
		if !s.Unique || s.Partial != nil || s.Sparse || s.Hidden || s.Collation() != nil || len(s.Fields) != len(want) {
			continue
		}
		all := true
		for _, f := range s.Fields {
			all = all && want[f.Path]
		}
		if all {
			return ix
		}
	}
	return nil
}

// HasUniqueIndex is for $merge's 'on' (query.KeyedWriteTarget).
func (t writeTarget) HasUniqueIndex(fields []string) bool {
	return t.uniqueIndexOn(fields) != nil
}

// FindBy probes the unique index on fields at one point per field.
func (t writeTarget) FindBy(ctx context.Context, fields []string, vals []bsoncore.Value) ([]bsoncore.Document, error) {
	ix := t.uniqueIndexOn(fields)
	if ix == nil {
		return nil, mongoerr.New(mongoerr.Location51183, "Cannot find index to verify that join fields will be unique")
	}
	byPath := map[string]bsoncore.Value{}
	for i, f := range fields {
		byPath[f] = vals[i]
	}
	docs, err := plan.IndexPoint(ctx, t.tx, t.coll, ix, byPath)
	if err != nil {
		return nil, toMongoErr(err)
	}
	return docs, nil
}

// check maps storage errors to MongoDB's, duplicate keys included.
func (t writeTarget) check(doc bsoncore.Document, err error) error {
	if err == nil {
		return nil
	}
	if me, ok := duplicateKeyError(t.ns, err, doc.Lookup("_id")); ok {
		return me
	}
	if errors.Is(err, storage.ErrWriteConflict) {
		return err // kept, so that the write waits for the transaction and tries again
	}
	return toMongoErr(err)
}

// cursorOptionArg reads aggregate's cursor, a document (its batchSize
// read later), refused in mongod's own words.
func cursorOptionArg(dst *bsoncore.Document) fieldHandler {
	return func(v bsoncore.Value) error {
		d, ok := v.DocumentOK()
		if !ok {
			return mongoerr.New(mongoerr.TypeMismatch, "cursor field must be missing or an object")
		}
		*dst = d
		return nil
	}
}
