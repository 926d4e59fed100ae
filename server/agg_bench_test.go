package server_test

import (
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// The aggregation benchmarks: $lookup equality of 100 orders
// against 50,000 customers, with and without an index on the foreign
// field (the indexed path must be at least 10x faster), and $match +
// $group over 50,000 documents.

const (
	aggBenchCustomers = 50000
	aggBenchOrders    = 100
)

func seedMany(b *testing.B, coll *mongo.Collection, n int, mk func(i int) any) {
	b.Helper()
	batch := make([]any, 0, 1000)
	for i := 0; i < n; i++ {
		batch = append(batch, mk(i))
		if len(batch) == cap(batch) || i == n-1 {
			if _, err := coll.InsertMany(ctx, batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
}

// lookupBench joins 100 orders to 50,000 customers; form is "fields"
// (localField/foreignField) or "pipeline" (let and $expr).
func lookupBench(b *testing.B, indexed bool, form string) {
	ts := startServer(b)
	db := ts.client().Database("bench")
	customers, orders := db.Collection("customers"), db.Collection("orders")
	if indexed {
		if _, err := customers.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "cid", Value: 1}}}); err != nil {
			b.Fatal(err)
		}
	}
	name := strings.Repeat("n", 40)
	seedMany(b, customers, aggBenchCustomers, func(i int) any {
		return bson.D{{Key: "cid", Value: int64(i)}, {Key: "rid", Value: int64(i % 10)}, {Key: "name", Value: name}}
	})
	seedMany(b, orders, aggBenchOrders, func(i int) any {
		return bson.D{{Key: "_id", Value: int64(i)}, {Key: "cid", Value: int64(i * 7919 % aggBenchCustomers)}, {Key: "total", Value: int64(i)}}
	})
	d, err := ts.engine.Database(ctx, "bench", false)
	if err != nil {
		b.Fatal(err)
	}
	if err := d.Checkpoint(ctx); err != nil {
		b.Fatal(err)
	}
	lookup := bson.D{{Key: "from", Value: "customers"}, {Key: "localField", Value: "cid"},
		{Key: "foreignField", Value: "cid"}, {Key: "as", Value: "customer"}}
	if form == "pipeline" {
		lookup = bson.D{{Key: "from", Value: "customers"}, {Key: "let", Value: bson.D{{Key: "c", Value: "$cid"}}},
			{Key: "pipeline", Value: bson.A{bson.D{{Key: "$match", Value: bson.D{{Key: "$expr",
				Value: bson.D{{Key: "$eq", Value: bson.A{"$cid", "$$c"}}}}}}}}}, {Key: "as", Value: "customer"}}
	}
	pipeline := mongo.Pipeline{
		{{Key: "$lookup", Value: lookup}},
		{{Key: "$match", Value: bson.D{{Key: "customer", Value: bson.D{{Key: "$size", Value: 1}}}}}},
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cur, err := orders.Aggregate(ctx, pipeline)
		if err != nil {
			b.Fatal(err)
		}
		var out []bson.Raw
		if err := cur.All(ctx, &out); err != nil {
			b.Fatal(err)
		}
		if len(out) != aggBenchOrders {
			b.Fatalf("$lookup joined %d orders, want %d", len(out), aggBenchOrders)
		}
	}
}

// BenchmarkLookupEq100x50K joins by scanning (hashing) the customers.
func BenchmarkLookupEq100x50K(b *testing.B) { lookupBench(b, false, "fields") }

// BenchmarkLookupEq100x50KIndexed probes the index on customers.cid.
func BenchmarkLookupEq100x50KIndexed(b *testing.B) { lookupBench(b, true, "fields") }

// BenchmarkLookupPipeline100x50K is the let/pipeline form of the same join
// ({$match: {$expr: {$eq: ["$cid", "$$c"]}}}), scanning the customers.
func BenchmarkLookupPipeline100x50K(b *testing.B) { lookupBench(b, false, "pipeline") }

// BenchmarkLookupPipeline100x50KIndexed probes the index on customers.cid
// for the leading $expr equality.
func BenchmarkLookupPipeline100x50KIndexed(b *testing.B) { lookupBench(b, true, "pipeline") }

// BenchmarkMatchGroup50K is $match + $group over 50,000 documents.
func BenchmarkMatchGroup50K(b *testing.B) {
	ts := startServer(b)
	coll := ts.client().Database("bench").Collection("g")
	seedMany(b, coll, 50000, func(i int) any {
		return bson.D{{Key: "_id", Value: i}, {Key: "k", Value: i % 100}, {Key: "v", Value: float64(i)},
			{Key: "s", Value: "some text to make the document about a hundred bytes"}}
	})
	pipeline := mongo.Pipeline{
		{{Key: "$match", Value: bson.D{{Key: "v", Value: bson.D{{Key: "$gte", Value: 0.0}}}}}},
		{{Key: "$group", Value: bson.D{{Key: "_id", Value: "$k"}, {Key: "n", Value: bson.D{{Key: "$sum", Value: 1}}},
			{Key: "total", Value: bson.D{{Key: "$sum", Value: "$v"}}}}}},
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cur, err := coll.Aggregate(ctx, pipeline)
		if err != nil {
			b.Fatal(err)
		}
		var out []bson.Raw
		if err := cur.All(ctx, &out); err != nil {
			b.Fatal(err)
		}
		if len(out) != 100 {
			b.Fatalf("$group gave %d groups, want 100", len(out))
		}
	}
}
