package server_test

import (
	"fmt"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

func TestWildcardIndex(t *testing.T) {
	db, c := startCollection(t, "wc", "c")
	docs := []bson.D{
		{{Key: "_id", Value: 1}, {Key: "a", Value: bson.D{{Key: "b", Value: 5}, {Key: "c", Value: "x"}}}, {Key: "z", Value: 1}},
		{{Key: "_id", Value: 2}, {Key: "a", Value: bson.A{bson.D{{Key: "b", Value: 5}}, bson.D{{Key: "b", Value: 7}}}}},
		{{Key: "_id", Value: 3}, {Key: "a", Value: bson.D{{Key: "b", Value: bson.A{1, 5}}}}, {Key: "z", Value: 2}},
		{{Key: "_id", Value: 4}, {Key: "z", Value: 5}},
	}
	for _, d := range docs {
		if _, err := c.InsertOne(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	for _, key := range []string{"a.$**", "$**"} {
		name, err := c.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: key, Value: 1}}})
		if err != nil || name != key+"_1" {
			t.Fatalf("create %s: %q %v", key, name, err)
		}
	}
	count := func(f bson.D) int64 {
		t.Helper()
		n, err := c.CountDocuments(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, tc := range []struct {
		f    bson.D
		want int64
	}{
		{bson.D{{Key: "a.b", Value: 5}}, 3},
		{bson.D{{Key: "a.b", Value: bson.D{{Key: "$gt", Value: 5}}}}, 1},
		{bson.D{{Key: "a.c", Value: "x"}}, 1},
		{bson.D{{Key: "z", Value: bson.D{{Key: "$in", Value: bson.A{1, 5}}}}}, 2},
		{bson.D{{Key: "a", Value: bson.D{{Key: "b", Value: 5}, {Key: "c", Value: "x"}}}}, 1},
	} {
		if n := count(tc.f); n != tc.want {
			t.Fatalf("%v: %d, want %d", tc.f, n, tc.want)
		}
	}
	ex := mustRun(t, db, bson.D{{Key: "explain", Value: bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "z", Value: 5}}}}}})
	if s := fmt.Sprint(ex["queryPlanner"]); !strings.Contains(s, "IXSCAN") || !strings.Contains(s, "$**_1") {
		t.Fatalf("explain: %v", s)
	}
	// Unique and compound wildcard indexes are refused.
	_, err := run(t, db, bson.D{{Key: "createIndexes", Value: "c"}, {Key: "indexes", Value: bson.A{bson.D{
		{Key: "key", Value: bson.D{{Key: "x.$**", Value: 1}}}, {Key: "name", Value: "u"}, {Key: "unique", Value: true}}}}})
	if me, ok := err.(mongo.CommandError); !ok || me.Code != 67 {
		t.Fatalf("unique wildcard: %v", err)
	}
	// Upkeep: an update moves a document between values.
	if _, err := c.UpdateOne(ctx, bson.D{{Key: "_id", Value: 4}}, bson.D{{Key: "$set", Value: bson.D{{Key: "z", Value: 9}}}}); err != nil {
		t.Fatal(err)
	}
	if n := count(bson.D{{Key: "z", Value: 9}}); n != 1 {
		t.Fatalf("after update: %d", n)
	}
}

// TestWildcardProjection: an all-fields wildcard index with a
// wildcardProjection indexes the included paths only (or all but the
// excluded ones), is planned only for those, and answers every query
// right; a projection that mixes inclusion and exclusion, or one on a
// rooted wildcard index, is refused.
func TestWildcardProjection(t *testing.T) {
	db, c := startCollection(t, "wcp", "c")
	for i := range 20 {
		if _, err := c.InsertOne(ctx, bson.M{"_id": i, "a": i % 4, "b": bson.M{"c": i % 5, "d": i}, "e": i % 3}); err != nil {
			t.Fatal(err)
		}
	}
	mustRun(t, db, bson.D{{Key: "createIndexes", Value: "c"}, {Key: "indexes", Value: bson.A{bson.D{
		{Key: "key", Value: bson.D{{Key: "$**", Value: 1}}}, {Key: "name", Value: "wc"},
		{Key: "wildcardProjection", Value: bson.D{{Key: "a", Value: 1}, {Key: "b.c", Value: true}}}}}}})
	stage := func(f bson.D) string {
		ex := mustRun(t, db, bson.D{{Key: "explain", Value: bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: f}}}})
		return fmt.Sprint(ex["queryPlanner"])
	}
	for _, tc := range []struct {
		f       bson.D
		want    int64
		indexed bool
	}{
		{bson.D{{Key: "a", Value: 1}}, 5, true},
		{bson.D{{Key: "b.c", Value: 2}}, 4, true},
		{bson.D{{Key: "b.d", Value: 7}}, 1, false},
		{bson.D{{Key: "e", Value: 0}}, 7, false},
	} {
		if n, err := c.CountDocuments(ctx, tc.f); err != nil || n != tc.want {
			t.Errorf("%v: %d documents (%v), want %d", tc.f, n, err, tc.want)
		}
		if s := stage(tc.f); strings.Contains(s, "IXSCAN") != tc.indexed {
			t.Errorf("%v planned as %s", tc.f, s)
		}
	}
	ix := mustRun(t, db, bson.D{{Key: "listIndexes", Value: "c"}})
	if s := fmt.Sprint(ix["cursor"]); !strings.Contains(s, "wildcardProjection") {
		t.Errorf("listIndexes does not show the projection: %s", s)
	}
	for _, bad := range []bson.D{
		{{Key: "key", Value: bson.D{{Key: "$**", Value: 1}}}, {Key: "name", Value: "mixed"}, {Key: "wildcardProjection", Value: bson.D{{Key: "a", Value: 1}, {Key: "e", Value: 0}}}},
		{{Key: "key", Value: bson.D{{Key: "b.$**", Value: 1}}}, {Key: "name", Value: "rooted"}, {Key: "wildcardProjection", Value: bson.D{{Key: "c", Value: 1}}}},
	} {
		if _, err := run(t, db, bson.D{{Key: "createIndexes", Value: "c"}, {Key: "indexes", Value: bson.A{bad}}}); err == nil {
			t.Errorf("%v was taken", bad)
		}
	}
}
