package server_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/dumbodb/dumbodb/storage"
)

// TestLargeDocPartialFetches: point look-ups by _id and index plans that
// fetch only the projected fields of large documents return what whole
// documents give (the path index off), before and after a checkpoint.
func TestLargeDocPartialFetches(t *testing.T) {
	servers := map[string]*testServer{
		"doctree": startServer(t),
		"whole":   startServerWith(t, storage.Options{LargeDocThreshold: -1}),
	}
	type query struct {
		name   string
		filter bson.D
		opts   *options.FindOptionsBuilder
	}
	queries := []query{
		{"_id with projection", bson.D{{Key: "_id", Value: 3}}, options.Find().SetProjection(bson.D{{Key: "b.c", Value: 1}})},
		{"_id excluding", bson.D{{Key: "_id", Value: 2}}, options.Find().SetProjection(bson.D{{Key: "pad", Value: 0}})},
		{"_id filtered out", bson.D{{Key: "_id", Value: 2}, {Key: "a", Value: 99}}, options.Find().SetProjection(bson.D{{Key: "a", Value: 1}})},
		{"index range", bson.D{{Key: "a", Value: bson.D{{Key: "$gte", Value: 2}}}},
			options.Find().SetProjection(bson.D{{Key: "a", Value: 1}, {Key: "b.c", Value: 1}}).SetHint(bson.D{{Key: "a", Value: 1}})},
		{"index with residual filter", bson.D{{Key: "a", Value: bson.D{{Key: "$gte", Value: 1}}}, {Key: "b.c", Value: "c3"}},
			options.Find().SetProjection(bson.D{{Key: "_id", Value: 0}, {Key: "b", Value: 1}}).SetHint(bson.D{{Key: "a", Value: 1}})},
		{"index sorted", bson.D{{Key: "a", Value: bson.D{{Key: "$lt", Value: 4}}}},
			options.Find().SetProjection(bson.D{{Key: "b.c", Value: 1}}).SetSort(bson.D{{Key: "b.c", Value: -1}}).SetHint(bson.D{{Key: "a", Value: 1}})},
		{"index whole", bson.D{{Key: "a", Value: 3}}, options.Find().SetHint(bson.D{{Key: "a", Value: 1}})},
	}
	results := map[string][]byte{}
	for name, ts := range servers {
		c := ts.client()
		coll := c.Database("db").Collection("c")
		if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "a", Value: 1}}}); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 5; i++ {
			doc := bson.D{{Key: "_id", Value: i}, {Key: "a", Value: i},
				{Key: "pad", Value: strings.Repeat(fmt.Sprint(i), 100<<10)},
				{Key: "b", Value: bson.D{{Key: "c", Value: fmt.Sprintf("c%d", i)}, {Key: "d", Value: strings.Repeat("d", 70<<10)}}}}
			if _, err := coll.InsertOne(ctx, doc); err != nil {
				t.Fatal(err)
			}
		}
		for round, label := range []string{"before a checkpoint", "after a restart"} {
			if round == 1 {
				c = ldRestart(ts, c)
				coll = c.Database("db").Collection("c")
			}
			for _, q := range queries {
				cur, err := coll.Find(ctx, q.filter, q.opts)
				results[name+"/"+label+"/"+q.name] = concatRaws(ldRaws(t, cur, err))
			}
			n, err := coll.CountDocuments(ctx, bson.D{{Key: "a", Value: bson.D{{Key: "$gt", Value: 0}}}, {Key: "b.c", Value: bson.D{{Key: "$ne", Value: "c2"}}}})
			if err != nil {
				t.Fatal(err)
			}
			results[name+"/"+label+"/count"] = []byte(fmt.Sprint(n))
		}
	}
	for key, got := range results {
		if !strings.HasPrefix(key, "doctree/") {
			continue
		}
		want := results["whole/"+strings.TrimPrefix(key, "doctree/")]
		if !bytes.Equal(got, want) {
			t.Errorf("%s: %d bytes, %d with whole documents", key, len(got), len(want))
		}
	}
}

func concatRaws(raws [][]byte) []byte {
	var out []byte
	for _, r := range raws {
		out = append(out, r...)
		out = append(out, '|')
	}
	return out
}
