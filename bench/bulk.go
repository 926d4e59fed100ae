package bench

import (
	"context"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

func bulkBenchmarks(importDocs int) []Benchmark {
	bs := []Benchmark{
		{Name: "InsertMany/100", Group: GroupBulk, Unit: "doc", PerCall: 100, Setup: insertMany(100)},
		{Name: "InsertMany/1000", Group: GroupBulk, Unit: "doc", PerCall: 1000, Setup: insertMany(1000)},
		{Name: "DeleteMany/10K/Indexed", Group: GroupBulk, Unit: "doc", PerCall: 10000, Long: true, Setup: deleteMany(10000)},
		{Name: "DeleteMany/50K/Indexed", Group: GroupBulk, Unit: "doc", PerCall: 50000, Long: true, Setup: deleteMany(50000)},
		{Name: "Aggregate/MatchGroup/10K", Group: GroupBulk, Unit: "op", Setup: matchGroup(10000, false)},
		{Name: "Aggregate/MatchGroup/10K/Indexed", Group: GroupBulk, Unit: "op", Setup: matchGroup(10000, true)},
		{Name: "Concurrent/Insert/1", Group: GroupConcurrency, Unit: "op", Clients: 1, Setup: insertSized(size100B)},
		{Name: "Concurrent/Insert/8", Group: GroupConcurrency, Unit: "op", Clients: 8, Setup: insertSized(size100B)},
		{Name: "Concurrent/Insert/64", Group: GroupConcurrency, Unit: "op", Clients: 64, Setup: insertSized(size100B)},
		{Name: "Concurrent/Mixed/8", Group: GroupConcurrency, Unit: "op", Clients: 8, Setup: mixed},
	}
	name := "Import/" + count(importDocs)
	return append(bs,
		Benchmark{Name: name + "/Batch1000", Group: GroupImport, Unit: "doc", PerCall: importDocs, Long: true, Setup: importDocsIn(importDocs, 1000)},
		Benchmark{Name: name + "/OnePerRequest", Group: GroupImport, Unit: "doc", PerCall: importDocs, Long: true, Setup: importDocsIn(importDocs, 1)},
		Benchmark{Name: name + "/BulkLoad", Group: GroupImport, Unit: "doc", PerCall: importDocs, Long: true, DumboOnly: true, Setup: bulkLoad(importDocs)})
}

// bulkLoadPiece is how much of the documents one dumboBulkLoad carries,
// as dumbodb import --bulk sends them.
const bulkLoadPiece = 8 << 20

// bulkLoad loads n documents through dumboBulkLoad (docs/design/bulk-load.md):
// pieces of BSON uploaded, then one load.
func bulkLoad(n int) func(context.Context, *Env) (*Workload, error) {
	return func(_ context.Context, e *Env) (*Workload, error) {
		pad := padFor(size100B.bytes)
		var data []byte
		for i := range n {
			raw, err := bson.Marshal(sized(int64(i), pad))
			if err != nil {
				return nil, err
			}
			data = append(data, raw...)
		}
		coll := e.Coll.Name()
		var round int64
		return &Workload{
			Prepare: func(ctx context.Context, _ int64) error { return e.Coll.Drop(ctx) },
			Call: func(ctx context.Context, _ int64) error {
				round++
				id := fmt.Sprintf("%032x", round)
				db := e.Coll.Database()
				for off := 0; off < len(data); off += bulkLoadPiece {
					cmd := bson.D{{Key: "dumboBulkLoad", Value: coll}, {Key: "upload", Value: id}, {Key: "offset", Value: off},
						{Key: "data", Value: bson.Binary{Data: data[off:min(off+bulkLoadPiece, len(data))]}}}
					if err := db.RunCommand(ctx, cmd).Err(); err != nil {
						return err
					}
				}
				var res struct {
					N int `bson:"n"`
				}
				cmd := bson.D{{Key: "dumboBulkLoad", Value: coll}, {Key: "upload", Value: id}, {Key: "finish", Value: true}}
				if err := db.RunCommand(ctx, cmd).Decode(&res); err != nil {
					return err
				}
				return expectCount("dumboBulkLoad", res.N, n)
			},
		}, nil
	}
}

func insertMany(batch int) func(context.Context, *Env) (*Workload, error) {
	return func(_ context.Context, e *Env) (*Workload, error) {
		pad := padFor(size100B.bytes)
		docs := make([]any, batch)
		return &Workload{Call: func(ctx context.Context, n int64) error {
			for i := range docs {
				docs[i] = sized(n*int64(batch)+int64(i), pad)
			}
			_, err := e.Coll.InsertMany(ctx, docs)
			return err
		}}, nil
	}
}

// deleteMany deletes every document through an indexed filter; Prepare
// puts them back untimed.
func deleteMany(n int) func(context.Context, *Env) (*Workload, error) {
	return func(ctx context.Context, e *Env) (*Workload, error) {
		if err := createIndex(ctx, e.Coll, "k"); err != nil {
			return nil, err
		}
		return &Workload{
			Prepare: func(ctx context.Context, _ int64) error { return seedSmall(ctx, e.Coll, n) },
			Call: func(ctx context.Context, _ int64) error {
				res, err := e.Coll.DeleteMany(ctx, bson.D{{Key: "k", Value: bson.D{{Key: "$gte", Value: 0}}}})
				if err != nil {
					return err
				}
				return expectCount("deleteMany", int(res.DeletedCount), n)
			},
		}, nil
	}
}

func matchGroup(n int, indexed bool) func(context.Context, *Env) (*Workload, error) {
	return func(ctx context.Context, e *Env) (*Workload, error) {
		if err := seedSmall(ctx, e.Coll, n, keysIf(indexed, "k")...); err != nil {
			return nil, err
		}
		const matched = 10
		pipeline := mongo.Pipeline{
			{{Key: "$match", Value: bson.D{{Key: "k", Value: bson.D{{Key: "$lt", Value: matched}}}}}},
			{{Key: "$group", Value: bson.D{{Key: "_id", Value: "$k"}, {Key: "total", Value: bson.D{{Key: "$sum", Value: "$v"}}}}}},
		}
		return &Workload{Call: func(ctx context.Context, _ int64) error {
			return aggregateCount(ctx, e.Coll, pipeline, matched)
		}}, nil
	}
}

func aggregateCount(ctx context.Context, coll *mongo.Collection, pipeline any, want int) error {
	cur, err := coll.Aggregate(ctx, pipeline, options.Aggregate().SetBatchSize(1000))
	if err != nil {
		return err
	}
	var got []bson.Raw
	if err := cur.All(ctx, &got); err != nil {
		return err
	}
	return expectCount("aggregate", len(got), want)
}

// mixedDocs is the working set of Concurrent/Mixed.
const mixedDocs = 10000

// mixed is four reads by _id for each durable insert.
func mixed(ctx context.Context, e *Env) (*Workload, error) {
	pad := padFor(size100B.bytes)
	if err := seed(ctx, e.Coll, mixedDocs, func(i int) any { return sized(int64(i), pad) }); err != nil {
		return nil, err
	}
	return &Workload{Call: func(ctx context.Context, n int64) error {
		if n%5 == 0 {
			_, err := e.Coll.InsertOne(ctx, sized(mixedDocs+n, pad))
			return err
		}
		return findOne(ctx, e.Coll, int64(spread(n, mixedDocs)), 1)
	}}, nil
}

// importDocsIn loads n fresh documents per call, batch per request; the
// collection is dropped untimed before each call.
func importDocsIn(n, batch int) func(context.Context, *Env) (*Workload, error) {
	return func(_ context.Context, e *Env) (*Workload, error) {
		pad := padFor(size100B.bytes)
		docs := make([]any, n)
		for i := range docs {
			docs[i] = sized(int64(i), pad)
		}
		return &Workload{
			Prepare: func(ctx context.Context, _ int64) error { return e.Coll.Drop(ctx) },
			Call: func(ctx context.Context, _ int64) error {
				for lo := 0; lo < n; lo += batch {
					if err := insertBatch(ctx, e.Coll, docs[lo:min(lo+batch, n)]); err != nil {
						return fmt.Errorf("import at document %d: %w", lo, err)
					}
				}
				return nil
			},
		}, nil
	}
}

func insertBatch(ctx context.Context, coll *mongo.Collection, docs []any) error {
	if len(docs) == 1 {
		_, err := coll.InsertOne(ctx, docs[0])
		return err
	}
	_, err := coll.InsertMany(ctx, docs)
	return err
}
