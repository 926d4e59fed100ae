package server_test

import (
	"fmt"
	"sort"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// seedViews makes shop.items with five documents and the view cheap on it
// (price under 10, without the cost field).
func seedViews(t *testing.T) (*mongo.Database, *mongo.Collection) {
	t.Helper()
	db, items := startCollection(t, "shop", "items")
	for i := 1; i <= 5; i++ {
		if _, err := items.InsertOne(ctx, bson.D{{Key: "_id", Value: i}, {Key: "price", Value: i * 3},
			{Key: "tag", Value: bson.A{"t", fmt.Sprint("n", i%2)}}, {Key: "cost", Value: i}}); err != nil {
			t.Fatal(err)
		}
	}
	mustRun(t, db, bson.D{{Key: "create", Value: "cheap"}, {Key: "viewOn", Value: "items"},
		{Key: "pipeline", Value: bson.A{bson.D{{Key: "$match", Value: bson.D{{Key: "price", Value: bson.D{{Key: "$lt", Value: 10}}}}}},
			bson.D{{Key: "$unset", Value: "cost"}}}}})
	return db, items
}

// viewIDs reads a cursor's _ids, checking that the view's $unset ran:
// viewIDs(t)(coll.Find(...)).
func viewIDs(t *testing.T) func(cur *mongo.Cursor, err error) []any {
	return func(cur *mongo.Cursor, err error) []any { return readViewIDs(t, cur, err) }
}

func readViewIDs(t *testing.T, cur *mongo.Cursor, err error) []any {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	var docs []bson.M
	if err := cur.All(ctx, &docs); err != nil {
		t.Fatal(err)
	}
	var out []any
	for _, d := range docs {
		if _, has := d["cost"]; has {
			t.Fatalf("the view's $unset did not run: %v", d)
		}
		out = append(out, d["_id"])
	}
	return out
}

// TestViewReads: find (filter, sort, skip, limit, projection), count,
// distinct and aggregate read a view through its pipeline.
func TestViewReads(t *testing.T) {
	db, _ := seedViews(t)
	cheap := db.Collection("cheap")
	got := viewIDs(t)(cheap.Find(ctx, bson.D{{Key: "price", Value: bson.D{{Key: "$gt", Value: 3}}}},
		options.Find().SetSort(bson.D{{Key: "price", Value: -1}}).SetSkip(0).SetLimit(5)))
	if fmt.Sprint(got) != "[3 2]" {
		t.Fatalf("find on the view: %v", got)
	}
	if got := viewIDs(t)(cheap.Find(ctx, bson.D{}, options.Find().SetSkip(1).SetLimit(1))); fmt.Sprint(got) != "[2]" {
		t.Fatalf("skip and limit on the view: %v", got)
	}
	n, err := cheap.CountDocuments(ctx, bson.D{})
	if err != nil || n != 3 {
		t.Fatalf("countDocuments: %d %v", n, err)
	}
	if c := mustRun(t, db, bson.D{{Key: "count", Value: "cheap"}, {Key: "query", Value: bson.D{{Key: "_id", Value: bson.D{{Key: "$gte", Value: 2}}}}}}); c["n"] != int32(2) && c["n"] != int64(2) {
		t.Fatalf("count: %v", c)
	}
	var tags []string
	err = cheap.Distinct(ctx, "tag", bson.D{}).Decode(&tags)
	sort.Strings(tags)
	if err != nil || fmt.Sprint(tags) != "[n0 n1 t]" {
		t.Fatalf("distinct: %v %v", tags, err)
	}
	got = viewIDs(t)(cheap.Aggregate(ctx, mongo.Pipeline{{{Key: "$sort", Value: bson.D{{Key: "_id", Value: -1}}}}}))
	if fmt.Sprint(got) != "[3 2 1]" {
		t.Fatalf("aggregate on the view: %v", got)
	}
}

// TestViewOnView: a view on a view runs both pipelines, the inner first.
func TestViewOnView(t *testing.T) {
	db, _ := seedViews(t)
	mustRun(t, db, bson.D{{Key: "create", Value: "cheapOdd"}, {Key: "viewOn", Value: "cheap"},
		{Key: "pipeline", Value: bson.A{bson.D{{Key: "$match", Value: bson.D{{Key: "tag", Value: "n1"}}}}}}})
	if got := viewIDs(t)(db.Collection("cheapOdd").Find(ctx, bson.D{})); fmt.Sprint(got) != "[1 3]" {
		t.Fatalf("view on a view: %v", got)
	}
}

// TestViewErrors: writes to a view, cycles and too deep a nesting get
// mongod's codes; $out in a view's pipeline is refused.
func TestViewErrors(t *testing.T) {
	db, _ := seedViews(t)
	cheap := db.Collection("cheap")
	_, err := cheap.InsertOne(ctx, bson.D{{Key: "_id", Value: 9}})
	wantCode(t, err, 166, "CommandNotSupportedOnView")
	_, err = cheap.UpdateOne(ctx, bson.D{}, bson.D{{Key: "$set", Value: bson.D{{Key: "a", Value: 1}}}})
	wantCode(t, err, 166, "CommandNotSupportedOnView")
	_, err = cheap.DeleteMany(ctx, bson.D{})
	wantCode(t, err, 166, "CommandNotSupportedOnView")
	err = cheap.FindOneAndDelete(ctx, bson.D{}).Err()
	wantCode(t, err, 166, "CommandNotSupportedOnView")
	_, err = cheap.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "a", Value: 1}}})
	wantCode(t, err, 166, "CommandNotSupportedOnView")
	_, err = db.Collection("items").Aggregate(ctx, mongo.Pipeline{{{Key: "$out", Value: "cheap"}}})
	wantCode(t, err, 166, "CommandNotSupportedOnView")

	_, err = run(t, db, bson.D{{Key: "collMod", Value: "items"}, {Key: "viewOn", Value: "cheap"}, {Key: "pipeline", Value: bson.A{}}})
	if err == nil {
		t.Fatal("collMod of a collection into a view was accepted")
	}
	mustRun(t, db, bson.D{{Key: "create", Value: "a"}, {Key: "viewOn", Value: "b"}})
	_, err = run(t, db, bson.D{{Key: "create", Value: "b"}, {Key: "viewOn", Value: "a"}})
	wantCode(t, err, 5, "GraphContainsCycle")
	prev := "items"
	for i := 0; i < 20; i++ {
		name := fmt.Sprint("v", i)
		mustRun(t, db, bson.D{{Key: "create", Value: name}, {Key: "viewOn", Value: prev}})
		prev = name
	}
	_, err = run(t, db, bson.D{{Key: "create", Value: "tooDeep"}, {Key: "viewOn", Value: prev}})
	wantCode(t, err, 165, "ViewDepthLimitExceeded")
	_, err = cheap.Find(ctx, bson.D{}, options.Find().SetCollation(&options.Collation{Locale: "fr"}))
	wantCode(t, err, 167, "OptionNotSupportedOnView")
	if _, err := cheap.Find(ctx, bson.D{}, options.Find().SetCollation(&options.Collation{Locale: "simple"})); err != nil {
		t.Fatalf("the view's own (simple) collation: %v", err)
	}
	_, err = run(t, db, bson.D{{Key: "create", Value: "writes"}, {Key: "viewOn", Value: "items"},
		{Key: "pipeline", Value: bson.A{bson.D{{Key: "$out", Value: "x"}}}}})
	wantCode(t, err, 167, "OptionNotSupportedOnView")
}

// TestViewCatalog: listCollections shows views with type view and
// system.views; system.views holds the definitions; collMod redefines a
// view; drop removes it.
func TestViewCatalog(t *testing.T) {
	db, _ := seedViews(t)
	specs, err := db.ListCollectionSpecifications(ctx, bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	types := map[string]string{}
	for _, s := range specs {
		types[s.Name] = s.Type
	}
	if types["cheap"] != "view" || types["items"] != "collection" || types["system.views"] != "collection" {
		t.Fatalf("listCollections: %v", types)
	}
	var def bson.M
	if err := db.Collection("system.views").FindOne(ctx, bson.D{{Key: "_id", Value: "shop.cheap"}}).Decode(&def); err != nil || def["viewOn"] != "items" {
		t.Fatalf("system.views: %v %v", def, err)
	}
	mustRun(t, db, bson.D{{Key: "collMod", Value: "cheap"}, {Key: "viewOn", Value: "items"},
		{Key: "pipeline", Value: bson.A{bson.D{{Key: "$match", Value: bson.D{{Key: "_id", Value: 5}}}}}}})
	if n, _ := db.Collection("cheap").CountDocuments(ctx, bson.D{}); n != 1 {
		t.Fatalf("after collMod the view has %d documents, want 1", n)
	}
	if err := db.Collection("cheap").Drop(ctx); err != nil {
		t.Fatal(err)
	}
	names, _ := db.ListCollectionNames(ctx, bson.D{})
	if fmt.Sprint(names) != "[items]" {
		t.Fatalf("after dropping the only view: %v", names)
	}
}

// TestViewInLookupAndUnionWith: $lookup and $unionWith read a view
// through its pipeline.
func TestViewInLookupAndUnionWith(t *testing.T) {
	db, items := seedViews(t)
	got := viewIDs(t)(items.Aggregate(ctx, mongo.Pipeline{
		{{Key: "$match", Value: bson.D{{Key: "_id", Value: 1}}}},
		{{Key: "$unionWith", Value: "cheap"}},
		{{Key: "$project", Value: bson.D{{Key: "cost", Value: 0}}}},
	}))
	if fmt.Sprint(got) != "[1 1 2 3]" {
		t.Fatalf("$unionWith a view: %v", got)
	}
	var out []bson.M
	cur, err := db.Collection("items").Aggregate(ctx, mongo.Pipeline{
		{{Key: "$match", Value: bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: bson.A{1, 5}}}}}}},
		{{Key: "$lookup", Value: bson.D{{Key: "from", Value: "cheap"}, {Key: "localField", Value: "_id"}, {Key: "foreignField", Value: "_id"}, {Key: "as", Value: "m"}}}},
		{{Key: "$sort", Value: bson.D{{Key: "_id", Value: 1}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := cur.All(ctx, &out); err != nil {
		t.Fatal(err)
	}
	if len(out) != 2 || len(out[0]["m"].(bson.A)) != 1 || len(out[1]["m"].(bson.A)) != 0 {
		t.Fatalf("$lookup from a view: %v", out)
	}
}

// TestViewVersioned: a view's definition is versioned: a diff lists its
// change, a reset brings the old definition back, a merge takes a change
// made on one side and refuses two different ones.
func TestViewVersioned(t *testing.T) {
	db, _ := seedViews(t)
	mustRun(t, db, bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "view"}})
	redefine := func(db *mongo.Database, id int) {
		t.Helper()
		mustRun(t, db, bson.D{{Key: "collMod", Value: "cheap"}, {Key: "viewOn", Value: "items"},
			{Key: "pipeline", Value: bson.A{bson.D{{Key: "$match", Value: bson.D{{Key: "_id", Value: id}}}}}}})
	}
	count := func(db *mongo.Database) int64 {
		t.Helper()
		n, err := db.Collection("cheap").CountDocuments(ctx, bson.D{})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	redefine(db, 4)
	diff := mustRun(t, db, bson.D{{Key: "dumboDiff", Value: 1}})
	if fmt.Sprint(diff) == "" || !containsString(fmt.Sprint(diff), "cheap") {
		t.Fatalf("dumboDiff does not list the view: %v", diff)
	}
	mustRun(t, db, bson.D{{Key: "dumboReset", Value: 1}, {Key: "hard", Value: true}})
	if n := count(db); n != 3 {
		t.Fatalf("after reset the view has %d documents, want the old definition's 3", n)
	}

	mustRun(t, db, bson.D{{Key: "dumboBranch", Value: "feature"}})
	feature := db.Client().Database("shop@feature")
	redefine(feature, 4)
	mustRun(t, feature, bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "redefine"}})
	mustRun(t, db, bson.D{{Key: "dumboMerge", Value: 1}, {Key: "mergeIn", Value: "feature"}})
	if n := count(db); n != 1 {
		t.Fatalf("after merging a one-sided change the view has %d documents, want 1", n)
	}

	redefine(feature, 5)
	mustRun(t, feature, bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "theirs"}})
	redefine(db, 2)
	mustRun(t, db, bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "ours"}})
	_, err := run(t, db, bson.D{{Key: "dumboMerge", Value: 1}, {Key: "mergeIn", Value: "feature"}})
	wantCode(t, err, 20002, "MergeConflict")
	var doc bson.M
	if err := db.Collection("cheap").FindOne(ctx, bson.D{}).Decode(&doc); err != nil || doc["_id"] != int32(2) {
		t.Fatalf("after the refused merge the view reads %v %v, want ours", doc, err)
	}
}

func containsString(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

// TestViewExplain: explain of a find or an aggregate on a view describes
// the aggregation on the collection under it, its leading $match planned
// on the collection's index.
func TestViewExplain(t *testing.T) {
	db, items := seedViews(t)
	if _, err := items.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "price", Value: 1}}}); err != nil {
		t.Fatal(err)
	}
	for _, inner := range []bson.D{
		{{Key: "find", Value: "cheap"}, {Key: "filter", Value: bson.D{{Key: "_id", Value: 2}}}},
		{{Key: "aggregate", Value: "cheap"}, {Key: "pipeline", Value: bson.A{}}, {Key: "cursor", Value: bson.D{}}},
		{{Key: "count", Value: "cheap"}, {Key: "query", Value: bson.D{{Key: "cost", Value: 2}}}},
		{{Key: "distinct", Value: "cheap"}, {Key: "key", Value: "tag"}},
	} {
		ex := mustRun(t, db, bson.D{{Key: "explain", Value: inner}})
		if s := fmt.Sprint(ex); !containsString(s, "price_1") || !containsString(s, "IXSCAN") {
			t.Fatalf("explain of %v on the view does not plan the base collection's index: %v", inner[0], s)
		}
	}
}

// TestViewReadFilterUsesBaseIndexes: a read's filter on a view that only
// filters and sorts moves ahead of the view's stages and joins its
// filter, so the planner uses the collection's index for the read's
// field; the answer is the view's.
func TestViewReadFilterUsesBaseIndexes(t *testing.T) {
	db, items := seedViews(t)
	if _, err := items.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "cost", Value: 1}}}); err != nil {
		t.Fatal(err)
	}
	mustRun(t, db, bson.D{{Key: "create", Value: "sorted"}, {Key: "viewOn", Value: "items"},
		{Key: "pipeline", Value: bson.A{bson.D{{Key: "$match", Value: bson.D{{Key: "price", Value: bson.D{{Key: "$lt", Value: 10}}}}}},
			bson.D{{Key: "$sort", Value: bson.D{{Key: "price", Value: -1}}}}}}})
	filter := bson.D{{Key: "cost", Value: bson.D{{Key: "$gte", Value: 2}}}}
	ex := mustRun(t, db, bson.D{{Key: "explain", Value: bson.D{{Key: "find", Value: "sorted"}, {Key: "filter", Value: filter}}}})
	if s := fmt.Sprint(ex); !containsString(s, "cost_1") || !containsString(s, "IXSCAN") {
		t.Fatalf("the read's filter did not reach the planner: %v", s)
	}
	cur, err := db.Collection("sorted").Find(ctx, filter)
	if err != nil {
		t.Fatal(err)
	}
	var got []struct {
		ID int `bson:"_id"`
	}
	if err := cur.All(ctx, &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].ID != 3 || got[1].ID != 2 {
		t.Fatalf("read of the view: %v, want _id 3 then 2", got)
	}
	// A view that reshapes documents keeps the read's filter after it.
	ex = mustRun(t, db, bson.D{{Key: "explain", Value: bson.D{{Key: "find", Value: "cheap"}, {Key: "filter", Value: filter}}}})
	if s := fmt.Sprint(ex); containsString(s, "cost_1") {
		t.Fatalf("a filter moved ahead of the view's $unset of its field: %v", s)
	}
}
