package server

import (
	"github.com/dumbodb/dumbodb/plan"
	"github.com/dumbodb/dumbodb/query"
	"github.com/dumbodb/dumbodb/value"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

func cmdCount(r *request) (bsoncore.Document, error) {
	coll, err := r.collectionArg()
	if err != nil {
		return nil, err
	}
	var filter, collation bsoncore.Document
	var hint bsoncore.Value
	var skip, limit int64
	err = r.parseArgs(map[string]fieldHandler{
		"query":     r.optDocArg("query", &filter),
		"skip":      r.nonNegativeArg("skip", &skip),
		"limit":     r.int64Arg("limit", &limit),
		"hint":      r.hintArg(&hint),
		"collation": r.optDocArg("collation", &collation),
		"fields":    r.ignoredArg("fields", "object"),
	})
	if err != nil {
		return nil, err
	}
	if limit < 0 {
		limit = -limit
	}
	env, err := r.collEnv(coll, collation, nil)
	if err != nil {
		return nil, err
	}
	r.c.s.stats.opQuery.Add(1)
	var n int64
	if view, verr := r.isView(coll); verr != nil || view {
		if verr != nil {
			return nil, verr
		}
		n, err = r.countOnView(coll, filter, collation, skip, limit)
	} else {
		n, err = r.countMatching(coll, filter, env, hint, skip, limit)
	}
	if err != nil {
		return nil, err
	}
	return bsoncore.NewDocumentBuilder().AppendValue("n", value.Count(n)).AppendDouble("ok", 1).Build(), nil
}

func (r *request) countMatching(coll string, filter bsoncore.Document, env *query.Env, hint bsoncore.Value, skip, limit int64) (int64, error) {
	snap, err := r.snapshot()
	if err != nil {
		return 0, err
	}
	if err := plan.CheckHint(snap, coll, hint); err != nil {
		return 0, err
	}
	if !nonEmpty(filter) {
		// The whole collection: the map knows its size.
		total, err := snap.Count(coll)
		if err != nil {
			return 0, err
		}
		n := max(int64(total)-skip, 0)
		if limit > 0 {
			n = min(n, limit)
		}
		return n, nil
	}
	f, err := query.CompileQueryFilter(filter, env)
	if err != nil {
		return 0, err
	}
	return plan.Count(r.ctx, snap, coll, &plan.Read{Filter: f, FilterDoc: filter, Hint: hint,
		Skip: skip, Limit: limit, Consumer: plan.ForCount})
}
