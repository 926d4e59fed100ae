package server_test

import (
	"sync"
	"sync/atomic"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestIndexBuildWithConcurrentWriters: an index created while clients
// insert and update the indexed field describes every document afterwards
// (the build runs on a snapshot and catches up under the lock).
func TestIndexBuildWithConcurrentWriters(t *testing.T) {
	ts := startServer(t)
	c := ts.client()
	coll := c.Database("db").Collection("c")
	docs := make([]any, 0, 20000)
	for i := 0; i < 20000; i++ {
		docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "a", Value: i % 500}})
	}
	if _, err := coll.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	var writes atomic.Int64
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				id := 100000 + w*100000 + i
				if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "a", Value: i % 700}}); err != nil {
					t.Error(err)
					return
				}
				if _, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: (w*5000 + i) % 20000}},
					bson.D{{Key: "$set", Value: bson.D{{Key: "a", Value: 1000 + i}}}}); err != nil {
					t.Error(err)
					return
				}
				writes.Add(2)
			}
		}(w)
	}
	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "a", Value: 1}}}); err != nil {
		t.Fatal(err)
	}
	stop.Store(true)
	wg.Wait()
	t.Logf("%d writes while the index was built", writes.Load())
	for _, filter := range []bson.D{
		{{Key: "a", Value: bson.D{{Key: "$gte", Value: 1000}}}},
		{{Key: "a", Value: 7}},
		{{Key: "a", Value: bson.D{{Key: "$lt", Value: 300}}}},
	} {
		byIndex := hintedIDs(t, coll, filter, bson.D{{Key: "a", Value: 1}})
		byScan := hintedIDs(t, coll, filter, bson.D{{Key: "$natural", Value: 1}})
		if len(byIndex) != len(byScan) {
			t.Fatalf("%v: %d documents through the index, %d by a scan", filter, len(byIndex), len(byScan))
		}
		for id := range byScan {
			if !byIndex[id] {
				t.Fatalf("%v: document %v missing from the index", filter, id)
			}
		}
	}
}

func hintedIDs(t *testing.T, coll *mongo.Collection, filter, hint bson.D) map[any]bool {
	t.Helper()
	cur, err := coll.Find(ctx, filter, options.Find().SetHint(hint).SetProjection(bson.D{{Key: "_id", Value: 1}}))
	if err != nil {
		t.Fatal(err)
	}
	var got []bson.M
	if err := cur.All(ctx, &got); err != nil {
		t.Fatal(err)
	}
	out := map[any]bool{}
	for _, d := range got {
		out[d["_id"]] = true
	}
	return out
}
