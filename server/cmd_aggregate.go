package server

import (
	"dumbodb/query"
	"dumbodb/query/mongoerr"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

func cmdAggregate(r *request) (bsoncore.Document, error) {
	v := r.cmd.Index(0).Value()
	if _, isStr := v.StringValueOK(); !isStr {
		return nil, mongoerr.New(mongoerr.NotImplemented, "collection-less aggregate is not supported yet")
	}
	coll, err := r.collectionArg()
	if err != nil {
		return nil, err
	}
	var pipeline bsoncore.Array
	var cursorOpts bsoncore.Document
	var maxTimeMS int64
	var explain bool
	err = r.parseArgs(map[string]fieldHandler{
		"pipeline":                 r.arrayArg("pipeline", &pipeline),
		"cursor":                   r.docArg("cursor", &cursorOpts),
		"maxTimeMS":                r.nonNegativeArg("maxTimeMS", &maxTimeMS),
		"explain":                  r.boolArg("explain", &explain),
		"allowDiskUse":             r.ignoreArg(),
		"bypassDocumentValidation": r.ignoreArg(),
		"collation":                r.ignoreArg(),
		"hint":                     r.ignoreArg(),
		"let":                      r.ignoreArg(),
	})
	if err != nil {
		return nil, err
	}
	if pipeline == nil {
		return nil, mongoerr.New(mongoerr.Code(40414), "BSON field 'aggregate.pipeline' is missing but a required field")
	}
	if explain {
		return nil, mongoerr.New(mongoerr.NotImplemented, "explain is not supported yet")
	}
	if cursorOpts == nil {
		return nil, mongoerr.New(mongoerr.FailedToParse, "The 'cursor' option is required, except for aggregate with the explain argument")
	}
	batchSize, err := cursorBatchSize(r, cursorOpts)
	if err != nil {
		return nil, err
	}
	p, err := query.CompilePipeline(pipeline)
	if err != nil {
		return nil, err
	}
	r.c.s.stats.opQuery.Add(1)
	defer r.withMaxTime(maxTimeMS)()
	snap, err := r.snapshot()
	if err != nil {
		return nil, err
	}
	it, err := snap.Scan(r.ctx, coll)
	if err != nil {
		return nil, err
	}
	if batchSize == 0 {
		batchSize = defaultFirstBatch
	}
	return r.startCursor(r.ns(coll), p.Run(it), batchSize, false, false)
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
