package server

import (
	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/plan"
	"github.com/dumbodb/dumbodb/query"
	"github.com/dumbodb/dumbodb/value"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

func cmdDistinct(r *request) (bsoncore.Document, error) {
	coll, err := r.collectionArg()
	if err != nil {
		return nil, err
	}
	var key string
	var filter, collation bsoncore.Document
	var hint bsoncore.Value
	err = r.parseArgs(map[string]fieldHandler{
		"key":       r.stringArg("key", &key),
		"query":     r.optDocArg("query", &filter),
		"collation": r.optDocArg("collation", &collation),
		"hint":      r.hintArg(&hint),
	})
	if err != nil {
		return nil, err
	}
	if key == "" {
		return nil, mongoerr.New(mongoerr.Location40414, "BSON field 'distinct.key' is missing but a required field")
	}
	// The hint must name an index, as on mongod; distinct's values are the
	// same whichever index finds them, so it chooses no plan here.
	if err := r.checkHint(hint); err != nil {
		return nil, err
	}
	var values []bsoncore.Value
	if view, verr := r.isView(coll); verr != nil || view {
		if verr != nil {
			return nil, verr
		}
		values, err = r.distinctOnView(coll, key, filter, collation)
	} else {
		values, err = r.distinctValues(coll, key, filter, collation)
	}
	if err != nil {
		return nil, err
	}
	arr := bsoncore.NewArrayBuilder()
	for _, v := range values {
		arr.AppendValue(v)
	}
	reply := bsoncore.NewDocumentBuilder().AppendArray("values", arr.Build())
	if at := r.snapshotReadTime(); !at.isZero() {
		reply.AppendTimestamp("atClusterTime", at.t, at.i)
	}
	return reply.AppendDouble("ok", 1).Build(), nil
}

// distinctValues answers distinct from an index when one expresses the
// query exactly (plan.Distinct; only without a collation of the command's
// own, the filter then compiled without the collection's default), and
// otherwise from the documents that match.
func (r *request) distinctValues(coll, key string, filter, collation bsoncore.Document) ([]bsoncore.Value, error) {
	if !nonEmpty(collation) {
		if f, err := query.CompileFilter(value.OrEmpty(filter)); err == nil {
			snap, err := r.snapshot()
			if err != nil {
				return nil, err
			}
			if p := plan.Distinct(snap, coll, f, key); p != nil {
				return p.DistinctValues(r.ctx, snap, coll, key)
			}
		}
	}
	env, err := r.collEnv(coll, collation, nil)
	if err != nil {
		return nil, err
	}
	f, err := query.CompileQueryFilter(value.OrEmpty(filter), env)
	if err != nil {
		return nil, err
	}
	snap, err := r.snapshot()
	if err != nil {
		return nil, err
	}
	ex, err := plan.Execute(r.ctx, snap, coll, &plan.Read{Filter: f, FilterDoc: filter})
	if err != nil {
		return nil, err
	}
	docs, err := query.Drain(r.ctx, ex.Source)
	if err != nil {
		return nil, err
	}
	return query.DistinctValues(docs, key, f.Collation()), nil
}
