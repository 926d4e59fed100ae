package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"os"
	"sort"
	"time"

	"dumbodb/index"
	"dumbodb/query"
	"dumbodb/query/mongoerr"
	"dumbodb/storage"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// aggregateArgs are the aggregate command's fields.
type aggregateArgs struct {
	pipeline       bsoncore.Array
	cursorOpts     bsoncore.Document
	collation, let bsoncore.Document
	maxTimeMS      int64
	explain        bool
	allowDiskUse   bool
	hint           bsoncore.Value
	collectionless bool
	coll           string
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
		"cursor":                   r.docArg("cursor", &a.cursorOpts),
		"maxTimeMS":                r.nonNegativeArg("maxTimeMS", &a.maxTimeMS),
		"explain":                  r.boolArg("explain", &a.explain),
		"allowDiskUse":             r.boolArg("allowDiskUse", &a.allowDiskUse),
		"bypassDocumentValidation": r.ignoreArg(),
		"collation":                r.optDocArg("collation", &a.collation),
		"hint":                     func(v bsoncore.Value) error { a.hint = v; return nil },
		"let":                      r.optDocArg("let", &a.let),
		"comment":                  r.ignoreArg(),
	})
	if err != nil {
		return nil, err
	}
	if a.pipeline == nil {
		return nil, mongoerr.New(mongoerr.Code(40414), "BSON field 'aggregate.pipeline' is missing but a required field")
	}
	if a.cursorOpts == nil && !a.explain {
		return nil, mongoerr.New(mongoerr.FailedToParse, "The 'cursor' option is required, except for aggregate with the explain argument")
	}
	if a.hint.Type != 0 {
		if err := r.checkHint(a.hint); err != nil {
			return nil, err
		}
	}
	return a, nil
}

func cmdAggregate(r *request) (bsoncore.Document, error) {
	a, err := r.parseAggregate()
	if err != nil {
		return nil, err
	}
	batchSize, err := cursorBatchSize(r, orEmpty(a.cursorOpts))
	if err != nil {
		return nil, err
	}
	env, err := r.collEnv(a.coll, a.collation, a.let)
	if err != nil {
		return nil, err
	}
	snap, err := r.snapshot()
	if err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	p, err := query.CompilePipelineOpts(a.pipeline, query.PipelineOptions{
		Env:            env,
		Catalog:        snapshotCatalog{snap},
		Writer:         aggWriter{r},
		DB:             r.db,
		Collection:     a.coll,
		Host:           host,
		AllowDiskUse:   a.allowDiskUse,
		Collectionless: a.collectionless,
		LocalSessions:  r.localSessions(),
	})
	if err != nil {
		return nil, err
	}
	ns := r.ns(a.coll)
	if a.collectionless {
		ns = r.ns("$cmd.aggregate")
	}
	var lead *leadingMatch
	if !a.collectionless {
		if lead, err = planLeadingMatch(snap, a, env); err != nil {
			return nil, err
		}
	}
	if a.explain {
		return explainAggregate(ns, p, lead, snap, env), nil
	}
	r.c.s.stats.opQuery.Add(1)
	defer r.withMaxTime(a.maxTimeMS)()
	var in query.Stream = query.NewSliceStream(nil)
	reads := pipelineReads(pipelineStages(a.pipeline))
	switch {
	case lead != nil:
		if plan := lead.plan; reads != nil && plan.ix == nil && !plan.idHack && plan.text == nil {
			plan.readMatch, plan.readOut = reads, reads
		}
		if in, err = planSource(r.ctx, snap, a.coll, lead.f, lead.plan, &execStats{}); err != nil {
			return nil, err
		}
	case !a.collectionless:
		it, err := snap.Scan(r.ctx, a.coll)
		if err != nil {
			return nil, err
		}
		if reads != nil {
			it.SetFields(reads, reads)
		}
		in = it
	}
	if batchSize == 0 {
		batchSize = defaultFirstBatch
	}
	return r.startCursor(ns, p.Run(in), batchSize, false, false)
}

// localSessions is the command's own session as $listLocalSessions
// reports it: {_id: {id, uid}, lastUse}, uid being the SHA-256 of the
// (empty) user name, as for unauthenticated clients on mongod.
func (r *request) localSessions() []bsoncore.Document {
	lsid, ok := r.cmd.Lookup("lsid").DocumentOK()
	if !ok {
		return nil
	}
	uid := sha256.Sum256(nil)
	id := bsoncore.NewDocumentBuilder().AppendValue("id", lsid.Lookup("id")).AppendBinary("uid", 0, uid[:]).Build()
	return []bsoncore.Document{bsoncore.NewDocumentBuilder().AppendDocument("_id", id).
		AppendDateTime("lastUse", time.Now().UnixMilli()).Build()}
}

// leadingMatch is the planned read of a pipeline that starts with $match:
// the planner picks an index for its filter (and a $sort right after it),
// as for find. The stages still all run, so results are the same.
type leadingMatch struct {
	filter bsoncore.Document
	f      *query.Filter
	plan   *queryPlan
}

// planLeadingMatch plans a leading $match; nil when the pipeline has none
// (or its filter is not one find would take: the stage reports errors).
func planLeadingMatch(snap *storage.Snapshot, a *aggregateArgs, env *query.Env) (*leadingMatch, error) {
	vals, _ := a.pipeline.Values()
	if len(vals) == 0 {
		return nil, nil
	}
	first, _ := vals[0].DocumentOK()
	filter, ok := first.Lookup("$match").DocumentOK()
	if !ok || len(first) == 0 || firstKeyOf(first) != "$match" {
		return nil, nil
	}
	f, err := query.CompileFilterEnv(filter, env)
	if err != nil {
		return nil, nil
	}
	in := planInput{filter: f, hint: a.hint}
	if len(vals) > 1 {
		if next, ok := vals[1].DocumentOK(); ok && firstKeyOf(next) == "$sort" {
			in.sort, _ = next.Lookup("$sort").DocumentOK()
		}
	}
	p, err := planQuery(snap, a.coll, in)
	if err != nil {
		return nil, err
	}
	return &leadingMatch{filter: filter, f: f, plan: p}, nil
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

func firstKeyOf(d bsoncore.Document) string {
	el, err := d.IndexErr(0)
	if err != nil {
		return ""
	}
	return el.Key()
}

// explainAggregate describes the plan: the read of the collection (an
// index scan for a leading $match that has one) feeding the stages in
// order; each $lookup by localField/foreignField names the index it
// probes in indexesUsed (empty: it scans the foreign collection).
func explainAggregate(ns string, p *query.Pipeline, lead *leadingMatch, snap *storage.Snapshot, env *query.Env) bsoncore.Document {
	winning := bsoncore.NewDocumentBuilder().AppendString("stage", "COLLSCAN").AppendString("direction", "forward").Build()
	parsed := bsoncore.NewDocumentBuilder().Build()
	if lead != nil {
		winning, parsed = scanStage(lead.plan, lead.filter), lead.filter
	}
	plan := bsoncore.NewDocumentBuilder().
		AppendString("namespace", ns).
		AppendDocument("parsedQuery", parsed).
		AppendDocument("winningPlan", winning).
		AppendArray("rejectedPlans", bsoncore.NewArrayBuilder().Build()).
		Build()
	stages := bsoncore.NewArrayBuilder().AppendDocument(bsoncore.NewDocumentBuilder().
		AppendDocument("$cursor", bsoncore.NewDocumentBuilder().AppendDocument("queryPlanner", plan).Build()).Build())
	for _, s := range p.Specs() {
		stages.AppendDocument(withLookupIndex(s, snap, env))
	}
	return bsoncore.NewDocumentBuilder().
		AppendString("explainVersion", "1").
		AppendArray("stages", stages.Build()).
		AppendDocument("queryPlanner", plan).
		AppendDouble("ok", 1).
		Build()
}

// withLookupIndex adds indexesUsed to a $lookup stage's explain entry:
// the index LookupEqual probes for it, if any (for localField and
// foreignField, or for a let/pipeline form that starts with an $expr
// equality on a foreign field).
func withLookupIndex(stage bsoncore.Document, snap *storage.Snapshot, env *query.Env) bsoncore.Document {
	spec, ok := stage.Lookup("$lookup").DocumentOK()
	if !ok || firstKeyOf(stage) != "$lookup" {
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
		} else if ix := lookupIndex(snap.Indexes(from), foreign); ix != nil {
			used.AppendString(ix.Spec.Name)
		}
	}
	return bsoncore.NewDocumentBuilder().AppendDocument("$lookup", spec).
		AppendArray("indexesUsed", used.Build()).Build()
}

// snapshotCatalog serves the pipeline's other collections from the same
// snapshot as its input, so all stages read one revision.
type snapshotCatalog struct{ snap *storage.Snapshot }

func (c snapshotCatalog) Scan(ctx context.Context, coll string) (query.Stream, error) {
	return c.snap.Scan(ctx, coll)
}

func (c snapshotCatalog) Count(_ context.Context, coll string) (int64, bool, error) {
	if _, ok := c.snap.Collection(coll); !ok {
		return 0, false, nil
	}
	n, err := c.snap.Count(coll)
	return int64(n), true, err
}

// LookupEqual probes the index on path (or the _id itself) for the local
// values of a $lookup: query.EqualityCatalog. It declines (ok false) when
// no usable index leads with path or a value cannot be probed by point
// (arrays, regexes, MinKey/MaxKey, NaN match other than by equal keys).
func (c snapshotCatalog) LookupEqual(ctx context.Context, coll, path string, vals []bsoncore.Value) ([]bsoncore.Document, bool, error) {
	for _, v := range vals {
		if !probeable(v) {
			return nil, false, nil
		}
	}
	points := probePoints(vals)
	if path == "_id" {
		return c.lookupIDs(ctx, coll, points)
	}
	ix := lookupIndex(c.snap.Indexes(coll), path)
	if ix == nil {
		return nil, false, nil
	}
	ids, err := lookupIndexIDs(ctx, c.snap, coll, ix, points)
	if err != nil {
		return nil, false, err
	}
	docs := make([]bsoncore.Document, 0, len(ids))
	for _, id := range ids {
		doc, found, err := c.snap.GetKey(ctx, coll, id)
		if err != nil {
			return nil, false, err
		}
		if found {
			docs = append(docs, doc)
		}
	}
	return docs, true, nil
}

// lookupIDs fetches documents by _id values, in _id order.
func (c snapshotCatalog) lookupIDs(ctx context.Context, coll string, points []bsoncore.Value) ([]bsoncore.Document, bool, error) {
	seen := map[string]bool{}
	var keys []string
	for _, v := range points {
		if storage.ValidateKey(v) != nil {
			return nil, false, nil
		}
		k := string(index.EncodeKey(nil, v))
		if !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var docs []bsoncore.Document
	for _, k := range keys {
		doc, found, err := c.snap.GetKey(ctx, coll, []byte(k))
		if err != nil {
			return nil, false, err
		}
		if found {
			docs = append(docs, doc)
		}
	}
	return docs, true, nil
}

// probeable says whether the documents equal to v are exactly those with
// an index key equal to v's (null also: undefined, missing).
func probeable(v bsoncore.Value) bool {
	switch v.Type {
	case bsoncore.TypeArray, bsoncore.TypeRegex, bsoncore.TypeMinKey, bsoncore.TypeMaxKey:
		return false
	case bsoncore.TypeDouble, bsoncore.TypeDecimal128:
		return !query.ExactNumber(v).NaN
	}
	return true
}

// probePoints are the key values to probe for vals: a null (or missing,
// or undefined) local value joins foreign nulls, undefineds and missing
// fields, which indexes key as null, and empty arrays, keyed undefined.
func probePoints(vals []bsoncore.Value) []bsoncore.Value {
	out := make([]bsoncore.Value, 0, len(vals)+1)
	nullish := false
	for _, v := range vals {
		switch v.Type {
		case 0, bsoncore.TypeNull, bsoncore.TypeUndefined:
			nullish = true
		default:
			out = append(out, v)
		}
	}
	if nullish {
		out = append(out, bsoncore.Value{Type: bsoncore.TypeNull}, bsoncore.Value{Type: bsoncore.TypeUndefined})
	}
	return out
}

// lookupIndex picks the usable index whose first key field is path, the
// one with the fewest fields; nil when there is none. Probes are binary
// equality, so an index with a collation does not qualify.
func lookupIndex(indexes []storage.IndexInfo, path string) *storage.IndexInfo {
	var best *storage.IndexInfo
	for i := range indexes {
		ix := &indexes[i]
		if !usable(ix) || ix.Spec.Collation() != nil || ix.Spec.Fields[0].Path != path {
			continue
		}
		if best == nil || len(ix.Spec.Fields) < len(best.Spec.Fields) {
			best = ix
		}
	}
	return best
}

// lookupIndexIDs scans ix at the points (every value of the later key
// fields) and returns the _id keys found, each once, in _id order.
func lookupIndexIDs(ctx context.Context, rd storage.Reader, coll string, ix *storage.IndexInfo, points []bsoncore.Value) ([][]byte, error) {
	first := make([]index.FieldInterval, 0, len(points))
	for _, v := range points {
		iv := index.PointInterval(v, "")
		if ix.Spec.Fields[0].Desc {
			iv = iv.Descending()
		}
		first = append(first, iv)
	}
	sort.Slice(first, func(i, j int) bool { return bytes.Compare(first[i].Lo, first[j].Lo) < 0 })
	bounds := [][]index.FieldInterval{first}
	for _, f := range ix.Spec.Fields[1:] {
		bounds = append(bounds, []index.FieldInterval{fullFor(f)})
	}
	seen := map[string]bool{}
	var ids [][]byte
	for _, iv := range index.EntryIntervals(bounds) {
		it, err := rd.IndexScan(ctx, coll, ix.Spec.Name, iv)
		if err != nil {
			return nil, err
		}
		for {
			_, id, err := it.Next(ctx)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, err
			}
			if !seen[string(id)] {
				seen[string(id)] = true
				ids = append(ids, id)
			}
		}
	}
	sort.Slice(ids, func(i, j int) bool { return bytes.Compare(ids[i], ids[j]) < 0 })
	return ids, nil
}

// aggWriter writes $out and $merge results, each in one transaction.
type aggWriter struct{ r *request }

func (w aggWriter) tx(ctx context.Context, db, coll string, fn func(tx *storage.Tx) error) error {
	if err := validateCollectionName(db, coll); err != nil {
		return err
	}
	d, err := w.r.c.s.engine.Database(ctx, db, true)
	if err != nil {
		return err
	}
	return d.Write(ctx, fn)
}

// Replace swaps the target's content for docs, as $out does.
func (w aggWriter) Replace(ctx context.Context, db, coll string, docs []bsoncore.Document) error {
	return w.tx(ctx, db, coll, func(tx *storage.Tx) error {
		if err := tx.DropCollection(coll); err != nil && !errors.Is(err, storage.ErrNamespaceNotFound) {
			return toMongoErr(err)
		}
		if _, err := tx.EnsureCollection(ctx, coll); err != nil {
			return toMongoErr(err)
		}
		t := writeTarget{tx: tx, ns: db + "." + coll, coll: coll}
		var interrupt query.InterruptCheck
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
		if _, err := tx.EnsureCollection(ctx, coll); err != nil {
			return toMongoErr(err)
		}
		return fn(writeTarget{tx: tx, ns: db + "." + coll, coll: coll})
	})
}

// writeTarget is one collection of a write transaction.
type writeTarget struct {
	tx       *storage.Tx
	ns, coll string
}

func (t writeTarget) Get(ctx context.Context, id bsoncore.Value) (bsoncore.Document, bool, error) {
	return t.tx.Get(ctx, t.coll, id)
}

func (t writeTarget) Insert(ctx context.Context, doc bsoncore.Document) error {
	return t.check(doc, t.tx.Insert(ctx, t.coll, doc))
}

func (t writeTarget) Replace(ctx context.Context, doc bsoncore.Document) error {
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
		return nil, mongoerr.New(mongoerr.Code(51183), "Cannot find index to verify that join fields will be unique")
	}
	byPath := map[string]bsoncore.Value{}
	for i, f := range fields {
		byPath[f] = vals[i]
	}
	var bounds [][]index.FieldInterval
	for _, f := range ix.Spec.Fields {
		iv := index.PointInterval(byPath[f.Path], "")
		if f.Desc {
			iv = iv.Descending()
		}
		bounds = append(bounds, []index.FieldInterval{iv})
	}
	var docs []bsoncore.Document
	for _, iv := range index.EntryIntervals(bounds) {
		it, err := t.tx.IndexScan(ctx, t.coll, ix.Spec.Name, iv)
		if err != nil {
			return nil, toMongoErr(err)
		}
		for {
			_, id, err := it.Next(ctx)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, err
			}
			doc, found, err := t.tx.GetKey(ctx, t.coll, id)
			if err != nil {
				return nil, err
			}
			if found {
				docs = append(docs, doc)
			}
		}
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
	return toMongoErr(err)
}

func cmdDistinct(r *request) (bsoncore.Document, error) {
	coll, err := r.collectionArg()
	if err != nil {
		return nil, err
	}
	var key string
	var filter, collation bsoncore.Document
	err = r.parseArgs(map[string]fieldHandler{
		"key":       r.stringArg("key", &key),
		"query":     r.optDocArg("query", &filter),
		"collation": r.optDocArg("collation", &collation),
		"hint":      r.ignoreArg(),
	})
	if err != nil {
		return nil, err
	}
	if key == "" {
		return nil, mongoerr.New(mongoerr.Code(40414), "BSON field 'distinct.key' is missing but a required field")
	}
	env, err := r.collEnv(coll, collation, nil)
	if err != nil {
		return nil, err
	}
	f, err := query.CompileFilterEnv(orEmpty(filter), env)
	if err != nil {
		return nil, err
	}
	snap, err := r.snapshot()
	if err != nil {
		return nil, err
	}
	src, err := matchingSource(r.ctx, snap, coll, f)
	if err != nil {
		return nil, err
	}
	docs, err := query.Drain(r.ctx, src)
	if err != nil {
		return nil, err
	}
	values := query.DistinctValues(docs, key, f.Collation())
	arr := bsoncore.NewArrayBuilder()
	for _, v := range values {
		arr.AppendValue(v)
	}
	return bsoncore.NewDocumentBuilder().AppendArray("values", arr.Build()).AppendDouble("ok", 1).Build(), nil
}
