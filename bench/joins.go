package bench

import (
	"context"
	"fmt"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// Join fixture: orders (the benchmark's collection) reference customers by
// cid, customers reference regions by rid; employees form a binary tree
// through boss → eid for $graphLookup. Join/Lookup/Eq joins 100 orders
// against 50,000 customers; the pipeline and nested
// forms, which run a sub-pipeline per order, join against 1,000.
const (
	joinCustomers   = 1000
	joinEqCustomers = 50000
	joinRegions     = 10
	joinOrders      = 1000
	joinMatched     = 100 // orders each $lookup call starts from
	graphEmployees  = 1000
	graphStarts     = 10 // employees each $graphLookup call starts from
)

func joinBenchmarks() []Benchmark {
	var bs []Benchmark
	for _, idx := range []bool{false, true} {
		bs = append(bs,
			Benchmark{Name: indexedName("Join/Lookup/Eq", idx), Group: GroupJoins, Unit: "op", Setup: lookup(idx, joinEqCustomers, lookupEq)},
			Benchmark{Name: indexedName("Join/Lookup/Pipeline", idx), Group: GroupJoins, Unit: "op", Setup: lookup(idx, joinCustomers, lookupPipeline)},
			Benchmark{Name: indexedName("Join/Lookup/Nested", idx), Group: GroupJoins, Unit: "op", Setup: lookup(idx, joinCustomers, lookupNested)},
			Benchmark{Name: indexedName("Join/GraphLookup", idx), Group: GroupJoins, Unit: "op", Setup: graphLookup(idx)})
	}
	return bs
}

func d(k string, v any) bson.D { return bson.D{{Key: k, Value: v}} }

func lookupEq() bson.D {
	return d("$lookup", bson.D{{Key: "from", Value: "customers"}, {Key: "localField", Value: "cid"},
		{Key: "foreignField", Value: "cid"}, {Key: "as", Value: "customer"}})
}

func lookupPipeline() bson.D {
	return d("$lookup", bson.D{{Key: "from", Value: "customers"}, {Key: "let", Value: d("c", "$cid")},
		{Key: "pipeline", Value: bson.A{d("$match", d("$expr", d("$eq", bson.A{"$cid", "$$c"})))}},
		{Key: "as", Value: "customer"}})
}

// lookupNested joins each order's customer and, inside it, the region.
func lookupNested() bson.D {
	region := d("$lookup", bson.D{{Key: "from", Value: "regions"}, {Key: "localField", Value: "rid"},
		{Key: "foreignField", Value: "rid"}, {Key: "as", Value: "region"}})
	return d("$lookup", bson.D{{Key: "from", Value: "customers"}, {Key: "localField", Value: "cid"},
		{Key: "foreignField", Value: "cid"}, {Key: "pipeline", Value: bson.A{region}}, {Key: "as", Value: "customer"}})
}

func lookup(indexed bool, customers int, stage func() bson.D) func(context.Context, *Env) (*Workload, error) {
	return func(ctx context.Context, e *Env) (*Workload, error) {
		if err := seedJoin(ctx, e, indexed, customers); err != nil {
			return nil, err
		}
		pipeline := mongo.Pipeline{
			d("$match", d("_id", d("$lt", int64(joinMatched)))),
			stage(),
			d("$match", d("customer", d("$size", 1))),
		}
		return &Workload{Call: func(ctx context.Context, _ int64) error {
			return aggregateCount(ctx, e.Coll, pipeline, joinMatched)
		}}, nil
	}
}

// seedJoin seeds the regions, n customers and the orders; the matched
// orders reference customers spread over all n.
func seedJoin(ctx context.Context, e *Env, indexed bool, n int) error {
	customers, regions := e.DB.Collection("customers"), e.DB.Collection("regions")
	if indexed {
		if err := createIndex(ctx, customers, "cid"); err != nil {
			return err
		}
		if err := createIndex(ctx, regions, "rid"); err != nil {
			return err
		}
	}
	name := strings.Repeat("n", 40)
	steps := []struct {
		coll *mongo.Collection
		n    int
		mk   func(i int) any
	}{
		{regions, joinRegions, func(i int) any { return bson.D{{Key: "rid", Value: int64(i)}, {Key: "name", Value: name}} }},
		{customers, n, func(i int) any {
			return bson.D{{Key: "cid", Value: int64(i)}, {Key: "rid", Value: int64(i % joinRegions)}, {Key: "name", Value: name}}
		}},
		{e.Coll, joinOrders, func(i int) any {
			return bson.D{{Key: "_id", Value: int64(i)}, {Key: "cid", Value: int64(i * 7919 % n)}, {Key: "total", Value: int64(i)}}
		}},
	}
	for _, s := range steps {
		if err := seed(ctx, s.coll, s.n, s.mk); err != nil {
			return err
		}
	}
	return nil
}

func graphLookup(indexed bool) func(context.Context, *Env) (*Workload, error) {
	return func(ctx context.Context, e *Env) (*Workload, error) {
		if indexed {
			if err := createIndex(ctx, e.Coll, "eid"); err != nil {
				return nil, err
			}
		}
		err := seed(ctx, e.Coll, graphEmployees, func(i int) any {
			return bson.D{{Key: "eid", Value: int64(i)}, {Key: "boss", Value: int64((i - 1) / 2)}}
		})
		if err != nil {
			return nil, err
		}
		pipeline := mongo.Pipeline{
			d("$match", d("eid", d("$gte", int64(graphEmployees-graphStarts)))),
			d("$graphLookup", bson.D{{Key: "from", Value: e.Coll.Name()}, {Key: "startWith", Value: "$boss"},
				{Key: "connectFromField", Value: "boss"}, {Key: "connectToField", Value: "eid"}, {Key: "as", Value: "chain"}}),
		}
		return &Workload{Call: func(ctx context.Context, _ int64) error {
			var out []struct{ Chain []bson.Raw }
			cur, err := e.Coll.Aggregate(ctx, pipeline)
			if err != nil {
				return err
			}
			if err := cur.All(ctx, &out); err != nil {
				return err
			}
			if len(out) != graphStarts || len(out[0].Chain) == 0 {
				return fmt.Errorf("$graphLookup returned %d documents, want %d with non-empty chains", len(out), graphStarts)
			}
			return nil
		}}, nil
	}
}
