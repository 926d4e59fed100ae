package server_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// $merge on fields other than _id, through a unique index on them.
func TestAggMergeOnUniqueIndex(t *testing.T) {
	ts := startServer(t)
	db := ts.client().Database("agg")
	src, dst := db.Collection("src"), db.Collection("dst")
	if _, err := src.InsertMany(ctx, []any{
		bson.D{{Key: "_id", Value: 1}, {Key: "sku", Value: "a"}, {Key: "wh", Value: 1}, {Key: "qty", Value: 5}},
		bson.D{{Key: "_id", Value: 2}, {Key: "sku", Value: "b"}, {Key: "wh", Value: 1}, {Key: "qty", Value: 7}},
		bson.D{{Key: "_id", Value: 3}, {Key: "sku", Value: "a"}, {Key: "wh", Value: 2}, {Key: "qty", Value: 1}},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := dst.InsertMany(ctx, []any{
		bson.D{{Key: "_id", Value: "x"}, {Key: "sku", Value: "a"}, {Key: "wh", Value: 1}, {Key: "qty", Value: 100}, {Key: "note", Value: "kept"}},
		bson.D{{Key: "_id", Value: "y"}, {Key: "sku", Value: "z"}, {Key: "wh", Value: 9}, {Key: "qty", Value: 0}},
	}); err != nil {
		t.Fatal(err)
	}
	merge := func(spec bson.D) error {
		cur, err := src.Aggregate(ctx, mongo.Pipeline{
			{{Key: "$sort", Value: bson.D{{Key: "_id", Value: 1}}}},
			{{Key: "$project", Value: bson.D{{Key: "_id", Value: 0}}}},
			{{Key: "$merge", Value: spec}},
		})
		if err == nil {
			err = cur.Close(ctx)
		}
		return err
	}
	on := bson.A{"wh", "sku"}
	// No unique index on {sku, wh} yet: 51183, and nothing is written.
	err := merge(bson.D{{Key: "into", Value: "dst"}, {Key: "on", Value: on}})
	wantCode(t, err, 51183, "")
	if _, err := dst.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "sku", Value: 1}, {Key: "wh", Value: 1}}}); err != nil {
		t.Fatal(err)
	}
	// A non-unique index does not do either.
	wantCode(t, merge(bson.D{{Key: "into", Value: "dst"}, {Key: "on", Value: on}}), 51183, "")
	if _, err := dst.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "sku", Value: 1}, {Key: "wh", Value: -1}},
		Options: options.Index().SetUnique(true)}); err != nil {
		t.Fatal(err)
	}
	if err := merge(bson.D{{Key: "into", Value: "dst"}, {Key: "on", Value: on}}); err != nil {
		t.Fatal(err)
	}
	got := dump(t, dst, bson.D{{Key: "sku", Value: 1}, {Key: "wh", Value: 1}}, true)
	want := []string{
		`{"note":"kept","qty":5,"sku":"a","wh":1}`, // merged into x, _id kept
		`{"qty":1,"sku":"a","wh":2}`,
		`{"qty":7,"sku":"b","wh":1}`,
		`{"qty":0,"sku":"z","wh":9}`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("merge on {wh, sku}:\n got %v\nwant %v", got, want)
	}
	var x bson.M
	if err := dst.FindOne(ctx, bson.D{{Key: "_id", Value: "x"}}).Decode(&x); err != nil || x["qty"] != int32(5) {
		t.Fatalf("x: %v %v", x, err)
	}
	// replace keeps the target's _id; fail reports the on fields.
	if err := merge(bson.D{{Key: "into", Value: "dst"}, {Key: "on", Value: on}, {Key: "whenMatched", Value: "replace"}, {Key: "whenNotMatched", Value: "discard"}}); err != nil {
		t.Fatal(err)
	}
	x = nil
	if err := dst.FindOne(ctx, bson.D{{Key: "_id", Value: "x"}}).Decode(&x); err != nil || x["note"] != nil || x["qty"] != int32(5) {
		t.Fatalf("x after replace: %v %v", x, err)
	}
	err = merge(bson.D{{Key: "into", Value: "dst"}, {Key: "on", Value: on}, {Key: "whenMatched", Value: "fail"}})
	wantCode(t, err, 11000, "")
	// An incoming document without an on field.
	_, err = src.Aggregate(ctx, mongo.Pipeline{
		{{Key: "$project", Value: bson.D{{Key: "_id", Value: 0}, {Key: "sku", Value: 1}}}},
		{{Key: "$merge", Value: bson.D{{Key: "into", Value: "dst"}, {Key: "on", Value: on}}}},
	})
	wantCode(t, err, 51132, "")
	// Bad 'on' specifications.
	for spec, code := range map[string]int32{"[]": 51187, "dup": 31465, "num": 51186} {
		var v any = bson.A{}
		switch spec {
		case "dup":
			v = bson.A{"sku", "sku"}
		case "num":
			v = 3
		}
		_, err := src.Aggregate(ctx, mongo.Pipeline{{{Key: "$merge", Value: bson.D{{Key: "into", Value: "dst"}, {Key: "on", Value: v}}}}})
		wantCode(t, err, code, "")
	}
}

// dump lists a collection's documents as relaxed JSON, sorted by sort,
// without _id when noID.
func dump(t *testing.T, c *mongo.Collection, sort bson.D, noID bool) []string {
	t.Helper()
	cur, err := c.Aggregate(ctx, mongo.Pipeline{{{Key: "$sort", Value: sort}}, {{Key: "$project", Value: bson.D{{Key: "_id", Value: 0}}}}})
	if !noID {
		cur, err = c.Aggregate(ctx, mongo.Pipeline{{{Key: "$sort", Value: sort}}})
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for cur.Next(ctx) {
		var m map[string]any
		if err := bson.Unmarshal(cur.Current, &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, canonJSON(m))
	}
	return out
}

func canonJSON(m map[string]any) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sortStrings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		v := m[k]
		if s, ok := v.(string); ok {
			v = fmt.Sprintf("%q", s)
		}
		parts[i] = fmt.Sprintf("%q:%v", k, v)
	}
	return "{" + strings.Join(parts, ",") + "}"
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// $group with allowDiskUse keeps its keyed input to spill if need be
// (the data-driven tests in query/testdata/agg_spill lower the budget to
// make it spill); under the budget it answers as without.
func TestAggGroupAllowDiskUse(t *testing.T) {
	db, c := startCollection(t, "agg", "big")
	batch := make([]any, 0, 500)
	for i := 0; i < 2000; i++ {
		batch = append(batch, bson.D{{Key: "_id", Value: i}, {Key: "k", Value: i % 37}})
		if len(batch) == cap(batch) {
			if _, err := c.InsertMany(ctx, batch); err != nil {
				t.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	pipeline := bson.A{
		bson.D{{Key: "$group", Value: bson.D{{Key: "_id", Value: "$k"}, {Key: "n", Value: bson.D{{Key: "$sum", Value: 1}}}, {Key: "f", Value: bson.D{{Key: "$first", Value: "$_id"}}}}}},
		bson.D{{Key: "$sort", Value: bson.D{{Key: "_id", Value: 1}}}},
	}
	with := aggRaw(t, db, "big", pipeline, bson.E{Key: "allowDiskUse", Value: true})
	without := aggRaw(t, db, "big", pipeline)
	if len(with) != 37 || !reflect.DeepEqual(with, without) {
		t.Fatalf("allowDiskUse: %d groups, differ: %v", len(with), !reflect.DeepEqual(with, without))
	}
}
