package server

import (
	"errors"
	"io"
	"strings"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/query"
	"github.com/dumbodb/dumbodb/storage"
	"github.com/dumbodb/dumbodb/value"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Views (docs/design/views.md): a view is a catalog entry whose options
// hold viewOn and pipeline, versioned with the rest of the catalog. Reads
// of a view run its pipeline, after those of the views it is defined on,
// over the collection at the bottom; writes are refused.

// maxViewDepth is mongod's limit on views defined on views.
const maxViewDepth = 20

// viewDef is a view's definition.
type viewDef struct {
	viewOn    string
	pipeline  []bsoncore.Document
	collation bsoncore.Document // nil: simple
}

// viewOf reads a catalog entry's view definition; false for a collection.
// A time-series collection is a view of its buckets (timeseries_reads.go).
func viewOf(info storage.CollectionInfo) (viewDef, bool) {
	on, ok := info.Options.Lookup("viewOn").StringValueOK()
	if !ok {
		return timeseriesView(info)
	}
	v := viewDef{viewOn: on}
	if arr, ok := info.Options.Lookup("pipeline").ArrayOK(); ok {
		vals, _ := arr.Values()
		for _, st := range vals {
			v.pipeline = append(v.pipeline, st.Document())
		}
	}
	v.collation, _ = info.Options.Lookup("collation").DocumentOK()
	return v, true
}

// resolvedView is what a read of a view runs: the collection at the
// bottom of the views and the stages of every view down to it, the
// deepest first.
type resolvedView struct {
	base      string
	stages    []bsoncore.Document
	collation bsoncore.Document
}

// resolveView follows coll down through views; ok is false when coll is
// not a view.
func resolveView(snap storage.Reader, coll string) (resolvedView, bool, error) {
	info, found := snap.Collection(coll)
	v, isView := viewOf(info)
	if !found || !isView {
		return resolvedView{}, false, nil
	}
	rv := resolvedView{collation: v.collation}
	for depth := 0; ; depth++ {
		if depth >= maxViewDepth {
			return rv, true, mongoerr.New(mongoerr.ViewDepthLimitExceeded,
				"View depth too deep or view cycle detected; maximum depth is %d", maxViewDepth)
		}
		rv.stages = append(append([]bsoncore.Document(nil), v.pipeline...), rv.stages...)
		info, found = snap.Collection(v.viewOn)
		next, nextIsView := viewOf(info)
		if !found || !nextIsView {
			rv.base = v.viewOn
			return rv, true, nil
		}
		v = next
	}
}

// stagesArray is stages as a pipeline array.
func stagesArray(stages []bsoncore.Document) bsoncore.Array {
	arr := bsoncore.NewArrayBuilder()
	for _, st := range stages {
		arr.AppendDocument(st)
	}
	return arr.Build()
}

// viewStagesOK refuses in a view's pipeline what mongod refuses: stages
// that write, and $changeStream.
func viewStagesOK(pipeline bsoncore.Array) error {
	vals, err := pipeline.Values()
	if err != nil {
		return mongoerr.New(mongoerr.InvalidBSON, "%v", err)
	}
	for _, v := range vals {
		st, ok := v.DocumentOK()
		if !ok {
			return mongoerr.New(mongoerr.TypeMismatch, "'pipeline' option must be specified as an array of objects")
		}
		switch name := value.FirstKey(st); name {
		case "$out", "$merge":
			return mongoerr.New(mongoerr.OptionNotSupportedOnView, "%s cannot be used in a view definition", name)
		case "$changeStream":
			return mongoerr.New(mongoerr.OptionNotSupportedOnView, "$changeStream cannot be used in a view definition")
		}
	}
	if _, err := query.CompilePipeline(pipeline); err != nil {
		return err
	}
	return nil
}

// createView makes a view (create with viewOn and pipeline).
func (r *request) createView(name string, viewOn bsoncore.Value, pipeline bsoncore.Value, collation bsoncore.Document) error {
	on, ok := viewOn.StringValueOK()
	if !ok {
		return typeMismatch("create", "viewOn", viewOn, "string")
	}
	if on == "" {
		return mongoerr.New(mongoerr.BadValue, "'viewOn' cannot be empty")
	}
	arr := bsoncore.NewArrayBuilder().Build()
	if pipeline.Type != 0 {
		if arr, ok = pipeline.ArrayOK(); !ok {
			return typeMismatch("create", "pipeline", pipeline, "array")
		}
	}
	if err := viewStagesOK(arr); err != nil {
		return err
	}
	opts := bsoncore.NewDocumentBuilder().AppendString("viewOn", on).AppendArray("pipeline", arr)
	if collation != nil {
		opts.AppendDocument("collation", collation)
	}
	return r.write(func(tx *storage.Tx) error {
		if err := checkViewGraph(tx, name, on); err != nil {
			return err
		}
		_, err := tx.CreateCollection(r.ctx, name, opts.Build())
		return err
	})
}

// checkViewGraph refuses a definition of view name on viewOn that would
// make a cycle or nest views deeper than mongod allows.
func checkViewGraph(snap storage.Reader, name, viewOn string) error {
	path := []string{name}
	on := viewOn
	for depth := 1; ; depth++ {
		if on == name {
			return mongoerr.New(mongoerr.GraphContainsCycle, "View cycle detected: %s", strings.Join(append(path, on), " => "))
		}
		if depth > maxViewDepth {
			return mongoerr.New(mongoerr.ViewDepthLimitExceeded, "View depth limit exceeded; maximum depth is %d", maxViewDepth)
		}
		info, found := snap.Collection(on)
		v, isView := viewOf(info)
		if !found || !isView {
			return nil
		}
		path = append(path, on)
		on = v.viewOn
	}
}

// collModView redefines a view (collMod with viewOn and pipeline).
func (r *request) collModView(coll string, viewOn, pipeline bsoncore.Value) error {
	return r.writeExisting(func(tx *storage.Tx) error {
		info, ok := tx.Collection(coll)
		old, isView := viewOf(info)
		if !ok {
			return mongoerr.New(mongoerr.NamespaceNotFound, "ns does not exist: %s", r.ns(coll))
		}
		if !isView {
			return mongoerr.New(mongoerr.InvalidOptions, "option 'viewOn' and 'pipeline' are only valid on views; %s is a collection", r.ns(coll))
		}
		on := old.viewOn
		if viewOn.Type != 0 {
			s, ok := viewOn.StringValueOK()
			if !ok {
				return typeMismatch("collMod", "viewOn", viewOn, "string")
			}
			on = s
		}
		arr := stagesArray(old.pipeline)
		if pipeline.Type != 0 {
			a, ok := pipeline.ArrayOK()
			if !ok {
				return typeMismatch("collMod", "pipeline", pipeline, "array")
			}
			arr = a
		}
		if err := viewStagesOK(arr); err != nil {
			return err
		}
		if err := checkViewGraph(tx, coll, on); err != nil {
			return err
		}
		opts := bsoncore.NewDocumentBuilder().AppendString("viewOn", on).AppendArray("pipeline", arr)
		if old.collation != nil {
			opts.AppendDocument("collation", old.collation)
		}
		desc := bsoncore.NewDocumentBuilder().AppendString("viewOn", on).AppendArray("pipeline", arr).Build()
		return tx.SetOptions(coll, opts.Build(), desc)
	})
}

// viewEntry is a view's listCollections entry, as mongod lists it.
func viewEntry(ci storage.CollectionInfo, nameOnly bool) bsoncore.Document {
	b := bsoncore.NewDocumentBuilder().AppendString("name", ci.Name).AppendString("type", "view")
	if nameOnly {
		return b.Build()
	}
	return b.AppendDocument("options", ci.Options).
		AppendDocument("info", bsoncore.NewDocumentBuilder().AppendBoolean("readOnly", true).Build()).Build()
}

// systemViewsEntry is the listCollections entry of system.views, which
// mongod lists in a database with views.
func systemViewsEntry(nameOnly bool) bsoncore.Document {
	b := bsoncore.NewDocumentBuilder().AppendString("name", "system.views").AppendString("type", "collection")
	if nameOnly {
		return b.Build()
	}
	return b.AppendDocument("options", bsoncore.NewDocumentBuilder().Build()).
		AppendDocument("info", bsoncore.NewDocumentBuilder().AppendBoolean("readOnly", false).Build()).
		AppendDocument("idIndex", idIndexSpec()).Build()
}

// systemViewsDocs are system.views's documents: one per view,
// {_id: "db.view", viewOn, pipeline}.
func (r *request) systemViewsDocs(snap storage.Reader) []bsoncore.Document {
	var docs []bsoncore.Document
	for _, ci := range snap.Collections() {
		v, ok := viewOf(ci)
		if !ok {
			continue
		}
		b := bsoncore.NewDocumentBuilder().AppendString("_id", r.ns(ci.Name)).AppendString("viewOn", v.viewOn).
			AppendArray("pipeline", stagesArray(v.pipeline))
		if v.collation != nil {
			b.AppendDocument("collation", v.collation)
		}
		docs = append(docs, b.Build())
	}
	return docs
}

// viewWriteError is the answer to a write to a view.
func (r *request) viewWriteError(coll string) error {
	return mongoerr.New(mongoerr.CommandNotSupportedOnView, "Namespace %s is a view, not a collection", r.ns(coll))
}

// refuseView answers CommandNotSupportedOnView when coll is a view, and
// NotImplemented when it is a time-series collection (for the commands
// calling this that mongod runs on one and DumboDB does not yet).
func (r *request) refuseView(coll string) error {
	info, ok, err := r.collectionInfo(coll)
	if err != nil {
		return err
	}
	if ok && isTimeseries(info) {
		return mongoerr.New(mongoerr.NotImplemented, "%s on the time-series collection %s is not supported by DumboDB yet", r.name, r.ns(coll))
	}
	if ok {
		if _, isView := viewOf(info); isView {
			return r.viewWriteError(coll)
		}
	}
	return nil
}

// collectionInfo is a collection's catalog entry as the request sees it.
// On a branch, outside a transaction and a read at a past time, it is read
// from the branch's current state without a snapshot: the check of every
// write must not cost one.
func (r *request) collectionInfo(coll string) (storage.CollectionInfo, bool, error) {
	if r.txn == nil && r.readAt.isZero() {
		d, err := r.database(false)
		if err != nil || d == nil {
			return storage.CollectionInfo{}, false, err
		}
		rev, err := r.revision(d)
		if err != nil {
			return storage.CollectionInfo{}, false, err
		}
		if !rev.ReadOnly() {
			return d.BranchCollection(r.ctx, rev.Branch, coll)
		}
	}
	snap, err := r.snapshot()
	if err != nil {
		return storage.CollectionInfo{}, false, err
	}
	info, ok := snap.Collection(coll)
	return info, ok, nil
}

// viewStream runs a resolved view over its collection, for the stages
// that read other collections ($lookup, $unionWith).
func (r *request) viewStream(snap *storage.Snapshot, rv resolvedView) (query.Stream, error) {
	env, err := r.queryEnv(rv.collation, nil)
	if err != nil {
		return nil, err
	}
	p, err := query.CompilePipelineOpts(stagesArray(rv.stages), query.PipelineOptions{
		Env: env, Catalog: snapshotCatalog{r, snap}, DB: r.db, Collection: rv.base,
	})
	if err != nil {
		return nil, err
	}
	in, err := snap.Scan(r.ctx, rv.base)
	if err != nil {
		return nil, err
	}
	return p.Run(in), nil
}

// viewAggregate is the aggregation a find, count or distinct on a view
// runs: stages after the view's own, on the view (aggregateSource
// resolves it).
func viewAggregate(coll string, stages []bsoncore.Document, collation bsoncore.Document) *aggregateArgs {
	return &aggregateArgs{coll: coll, pipeline: stagesArray(stages), collation: collation}
}

// isView reports whether coll is a view in the request's snapshot.
func (r *request) isView(coll string) (bool, error) {
	snap, err := r.snapshot()
	if err != nil {
		return false, err
	}
	info, ok := snap.Collection(coll)
	_, isView := viewOf(info)
	return ok && isView, nil
}

// findOnView runs a find on a view as mongod does: as an aggregation of
// the view with the find's filter, sort, skip, limit and projection as
// stages.
func (r *request) findOnView(coll string, a *findArgs) (docSource, error) {
	if a.min != nil || a.max != nil {
		return nil, mongoerr.New(mongoerr.OptionNotSupportedOnView, "min and max are not supported on views")
	}
	// A find on a view runs as an aggregation, which has neither option
	// (mongod's error when it converts the find).
	if a.returnKey {
		return nil, mongoerr.New(mongoerr.InvalidPipelineOperator, "Option returnKey not supported in aggregation.")
	}
	if a.showRecordID {
		return nil, mongoerr.New(mongoerr.InvalidPipelineOperator, "Option showRecordId not supported in aggregation.")
	}
	var stages []bsoncore.Document
	stage := func(name string, v bsoncore.Value) {
		stages = append(stages, bsoncore.NewDocumentBuilder().AppendValue(name, v).Build())
	}
	if nonEmpty(a.filter) {
		stage("$match", value.DocValue(a.filter))
	}
	if nonEmpty(a.sort) {
		stage("$sort", value.DocValue(a.sort))
	}
	if a.skip > 0 {
		stage("$skip", bsoncore.Value{Type: bsoncore.TypeInt64, Data: bsoncore.AppendInt64(nil, a.skip)})
	}
	if a.limit > 0 {
		stage("$limit", bsoncore.Value{Type: bsoncore.TypeInt64, Data: bsoncore.AppendInt64(nil, a.limit)})
	}
	if nonEmpty(a.projection) {
		stage("$project", value.DocValue(a.projection))
	}
	agg := viewAggregate(coll, stages, a.collation)
	agg.let, agg.hint, agg.explain = a.let, a.hint, a.explain
	if coll == "system.views" { // the view definitions, as documents
		snap, err := r.snapshot()
		if err != nil {
			return nil, err
		}
		arr := bsoncore.NewArrayBuilder()
		for _, d := range r.systemViewsDocs(snap) {
			arr.AppendDocument(d)
		}
		// $literal: a definition's pipeline would read as expressions.
		literal := bsoncore.NewDocumentBuilder().AppendArray("$literal", arr.Build()).Build()
		docs := bsoncore.NewDocumentBuilder().AppendDocument("$documents", literal).Build()
		agg.pipeline = stagesArray(append([]bsoncore.Document{docs}, stages...))
		agg.collectionless, agg.coll = true, ""
	}
	src, _, explained, err := r.aggregateSource(agg)
	if explained != nil {
		return &sliceSource{docs: []bsoncore.Document{explained}}, err
	}
	if err != nil {
		return nil, err
	}
	// mongod runs a find on a view as an aggregation, whose batches end as
	// an aggregate's do.
	return pipelineSource{src}, nil
}

// explainOnView explains a find or an aggregate of a view as mongod
// does: as the aggregation it runs on the collection under the views.
func (r *request) explainOnView(ex *explained, inner bsoncore.Document) (bsoncore.Document, error) {
	switch ex.Kind {
	case "find":
		src, err := r.findOnView(ex.coll, &findArgs{filter: ex.Filter, sort: ex.Sort, projection: ex.Projection,
			skip: ex.Skip, limit: ex.Limit, collation: ex.Collation, hint: ex.Hint, explain: true})
		if err != nil {
			return nil, err
		}
		return src.Next(r.ctx)
	case "aggregate":
		pipeline, _ := inner.Lookup("pipeline").ArrayOK()
		return r.explainViewStages(ex, pipelineStages(pipeline))
	case "count":
		return r.explainViewStages(ex, append(readStages(ex.Filter, ex.Skip, ex.Limit),
			bsoncore.NewDocumentBuilder().AppendString("$count", "count").Build()))
	case "distinct":
		key, _ := inner.Lookup("key").StringValueOK()
		return r.explainViewStages(ex, append(readStages(ex.Filter, 0, 0), distinctStages(key)...))
	}
	return nil, mongoerr.New(mongoerr.NotImplemented, "explain of %s on the view %s is not supported by DumboDB yet", ex.Kind, r.ns(ex.coll))
}

// explainViewStages explains stages run on a view as the aggregation of
// the collection under it.
func (r *request) explainViewStages(ex *explained, stages []bsoncore.Document) (bsoncore.Document, error) {
	agg := viewAggregate(ex.coll, stages, ex.Collation)
	agg.explain = true
	_, _, explained, err := r.aggregateSource(agg)
	return explained, err
}

// readStages are the $match, $skip and $limit of a read (empty or zero:
// left out).
func readStages(filter bsoncore.Document, skip, limit int64) []bsoncore.Document {
	var stages []bsoncore.Document
	if nonEmpty(filter) {
		stages = append(stages, bsoncore.NewDocumentBuilder().AppendDocument("$match", filter).Build())
	}
	if skip > 0 {
		stages = append(stages, bsoncore.NewDocumentBuilder().AppendInt64("$skip", skip).Build())
	}
	if limit > 0 {
		stages = append(stages, bsoncore.NewDocumentBuilder().AppendInt64("$limit", limit).Build())
	}
	return stages
}

// distinctStages collect a field's distinct values as mongod explains a
// distinct on a view: array elements one by one, then one group.
func distinctStages(key string) []bsoncore.Document {
	unwind := bsoncore.NewDocumentBuilder().AppendString("path", "$"+key).
		AppendBoolean("preserveNullAndEmptyArrays", true).Build()
	group := bsoncore.NewDocumentBuilder().AppendNull("_id").
		AppendDocument("distinct", bsoncore.NewDocumentBuilder().AppendString("$addToSet", "$"+key).Build()).Build()
	return []bsoncore.Document{
		bsoncore.NewDocumentBuilder().AppendDocument("$unwind", unwind).Build(),
		bsoncore.NewDocumentBuilder().AppendDocument("$group", group).Build(),
	}
}

// countOnView counts a view's documents that match filter, after skip,
// within limit (0: none).
func (r *request) countOnView(coll string, filter, collation bsoncore.Document, skip, limit int64) (int64, error) {
	src, _, _, err := r.aggregateSource(viewAggregate(coll, readStages(filter, skip, limit), collation))
	if err != nil {
		return 0, err
	}
	defer closeSource(src)
	n := int64(0)
	for {
		_, err := src.Next(r.ctx)
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return 0, err
		}
		n++
	}
}

// distinctOnView is distinct's values over a view's documents that match
// filter.
func (r *request) distinctOnView(coll, key string, filter, collation bsoncore.Document) ([]bsoncore.Value, error) {
	src, _, _, err := r.aggregateSource(viewAggregate(coll, readStages(filter, 0, 0), collation))
	if err != nil {
		return nil, err
	}
	defer closeSource(src)
	docs, err := query.Drain(r.ctx, src)
	if err != nil {
		return nil, err
	}
	env, err := r.queryEnv(collation, nil)
	if err != nil {
		return nil, err
	}
	f, err := query.CompileFilterEnv(emptyDoc, env)
	if err != nil {
		return nil, err
	}
	return query.DistinctValues(docs, key, f.Collation()), nil
}
