package server

import (
	"context"
	"crypto/sha256"
	"errors"
	"os"
	"time"

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
	env, err := queryEnv(a.collation, a.let)
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
	if a.explain {
		return explainAggregate(ns, p), nil
	}
	r.c.s.stats.opQuery.Add(1)
	defer r.withMaxTime(a.maxTimeMS)()
	var in query.Stream = query.NewSliceStream(nil)
	if !a.collectionless {
		if in, err = snap.Scan(r.ctx, a.coll); err != nil {
			return nil, err
		}
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

// explainAggregate describes the plan: a collection scan feeding the
// stages in order.
func explainAggregate(ns string, p *query.Pipeline) bsoncore.Document {
	plan := bsoncore.NewDocumentBuilder().
		AppendString("namespace", ns).
		AppendDocument("parsedQuery", bsoncore.NewDocumentBuilder().Build()).
		AppendDocument("winningPlan", bsoncore.NewDocumentBuilder().AppendString("stage", "COLLSCAN").AppendString("direction", "forward").Build()).
		AppendArray("rejectedPlans", bsoncore.NewArrayBuilder().Build()).
		Build()
	stages := bsoncore.NewArrayBuilder().AppendDocument(bsoncore.NewDocumentBuilder().
		AppendDocument("$cursor", bsoncore.NewDocumentBuilder().AppendDocument("queryPlanner", plan).Build()).Build())
	for _, s := range p.Specs() {
		stages.AppendDocument(s)
	}
	return bsoncore.NewDocumentBuilder().
		AppendString("explainVersion", "1").
		AppendArray("stages", stages.Build()).
		AppendDocument("queryPlanner", plan).
		AppendDouble("ok", 1).
		Build()
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
		for _, d := range docs {
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
	var filter bsoncore.Document
	err = r.parseArgs(map[string]fieldHandler{
		"key":       r.stringArg("key", &key),
		"query":     r.optDocArg("query", &filter),
		"collation": r.ignoreArg(),
		"hint":      r.ignoreArg(),
	})
	if err != nil {
		return nil, err
	}
	if key == "" {
		return nil, mongoerr.New(mongoerr.Code(40414), "BSON field 'distinct.key' is missing but a required field")
	}
	f, err := query.CompileFilter(orEmpty(filter))
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
	values := query.DistinctValues(docs, key)
	arr := bsoncore.NewArrayBuilder()
	for _, v := range values {
		arr.AppendValue(v)
	}
	return bsoncore.NewDocumentBuilder().AppendArray("values", arr.Build()).AppendDouble("ok", 1).Build(), nil
}
