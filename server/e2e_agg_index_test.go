package server_test

import (
	"fmt"
	"math/rand"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// aggRaw runs a pipeline and returns the results as canonical extended
// JSON, one string per document, in order.
func aggRaw(t *testing.T, db *mongo.Database, coll string, pipeline bson.A, extra ...bson.E) []string {
	t.Helper()
	cmd := bson.D{{Key: "aggregate", Value: coll}, {Key: "pipeline", Value: pipeline}, {Key: "cursor", Value: bson.D{}}}
	cmd = append(cmd, extra...)
	cur, err := db.RunCommandCursor(ctx, cmd)
	if err != nil {
		t.Fatalf("%v: %v", pipeline, err)
	}
	var out []string
	for cur.Next(ctx) {
		out = append(out, cur.Current.String())
	}
	if err := cur.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// lookupIndexesUsed is what aggregate's explain says each $lookup probes.
func lookupIndexesUsed(t *testing.T, db *mongo.Database, coll string, pipeline bson.A, extra ...bson.E) []any {
	t.Helper()
	cmd := bson.D{{Key: "aggregate", Value: coll}, {Key: "pipeline", Value: pipeline}, {Key: "explain", Value: true}}
	cmd = append(cmd, extra...)
	res := mustRun(t, db, cmd)
	var out []any
	for _, s := range res["stages"].(bson.A) {
		if get(s, "$lookup") != nil {
			out = append(out, get(s, "indexesUsed"))
		}
	}
	return out
}

// sampleValue is a join value of many shapes: equal numbers of different
// types, strings differing in case, null, missing, arrays (empty, nested,
// with null), documents.
func sampleValue(r *rand.Rand) (any, bool) {
	switch r.Intn(12) {
	case 0:
		return nil, false // missing
	case 1:
		return nil, true
	case 2:
		return int32(r.Intn(5)), true
	case 3:
		return float64(r.Intn(5)), true
	case 4:
		return int64(r.Intn(5)), true
	case 5:
		return []string{"a", "A", "b"}[r.Intn(3)], true
	case 6:
		return bson.A{}, true
	case 7:
		return bson.A{int32(r.Intn(5)), "a"}, true
	case 8:
		return bson.A{nil, int32(r.Intn(5))}, true
	case 9:
		return bson.A{bson.A{int32(1)}, int32(2)}, true
	case 10:
		return bson.D{{Key: "k", Value: int32(r.Intn(2))}}, true
	}
	return bson.Undefined{}, true
}

func TestLookupUsesForeignIndex(t *testing.T) {
	ts := startServer(t)
	db := ts.client().Database("aggix")
	r := rand.New(rand.NewSource(7))
	for i := 0; i < 60; i++ {
		local := bson.D{{Key: "_id", Value: i}}
		if v, ok := sampleValue(r); ok {
			local = append(local, bson.E{Key: "ref", Value: v})
		}
		if v, ok := sampleValue(r); ok {
			local = append(local, bson.E{Key: "n", Value: bson.D{{Key: "ref", Value: v}}})
		}
		if _, err := db.Collection("orders").InsertOne(ctx, local); err != nil {
			t.Fatal(err)
		}
		foreign := bson.D{{Key: "_id", Value: 1000 - i}}
		if v, ok := sampleValue(r); ok {
			foreign = append(foreign, bson.E{Key: "sku", Value: v})
		}
		if v, ok := sampleValue(r); ok {
			foreign = append(foreign, bson.E{Key: "info", Value: bson.D{{Key: "code", Value: v}}})
		}
		if _, err := db.Collection("products").InsertOne(ctx, foreign); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 5; i++ {
		if _, err := db.Collection("products").InsertOne(ctx, bson.D{{Key: "_id", Value: int32(i)}, {Key: "sku", Value: "id"}}); err != nil {
			t.Fatal(err)
		}
	}
	// Explicit nulls on both sides, whatever the random values gave.
	for _, d := range []bson.D{{{Key: "_id", Value: "null-sku"}, {Key: "sku", Value: nil}}, {{Key: "_id", Value: "null-code"}, {Key: "info", Value: bson.D{{Key: "code", Value: nil}}}}} {
		if _, err := db.Collection("products").InsertOne(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Collection("orders").InsertOne(ctx, bson.D{{Key: "_id", Value: 1000}, {Key: "ref", Value: nil}}); err != nil {
		t.Fatal(err)
	}
	lookup := func(local, foreign string) bson.A {
		return bson.A{
			bson.D{{Key: "$lookup", Value: bson.D{{Key: "from", Value: "products"}, {Key: "localField", Value: local},
				{Key: "foreignField", Value: foreign}, {Key: "as", Value: "hits"}}}},
			bson.D{{Key: "$sort", Value: bson.D{{Key: "_id", Value: 1}}}},
		}
	}
	pipelines := []bson.A{
		lookup("ref", "sku"),
		lookup("n.ref", "sku"),
		lookup("ref", "info.code"),
		lookup("missing", "sku"),
		lookup("ref", "_id"),
		// The concise form with a pipeline after the join.
		{bson.D{{Key: "$lookup", Value: bson.D{{Key: "from", Value: "products"}, {Key: "localField", Value: "ref"},
			{Key: "foreignField", Value: "sku"}, {Key: "as", Value: "hits"},
			{Key: "pipeline", Value: bson.A{bson.D{{Key: "$project", Value: bson.D{{Key: "sku", Value: 1}}}}}}}}}},
		// The let/pipeline form whose first stage is an $expr equality
		// between a foreign field and a let variable.
		exprLookup("ref", bson.A{"$sku", "$$v"}),
		exprLookup("n.ref", bson.A{"$$v", "$sku"}),
		exprLookup("ref", bson.A{"$info.code", "$$v"}),
		exprLookup("ref", bson.A{"$_id", "$$v"}),
		exprLookup("ref", bson.A{"$sku", "$$v"}, bson.D{{Key: "$project", Value: bson.D{{Key: "sku", Value: 1}}}}),
		exprLookup("ref", bson.A{"$sku", bson.D{{Key: "$literal", Value: 1}}}), // no variable: no probe
	}
	collation := bson.E{Key: "collation", Value: bson.D{{Key: "locale", Value: "en"}, {Key: "strength", Value: 2}}}
	var before [][]string
	var beforeColl []string
	for _, p := range pipelines {
		before = append(before, aggRaw(t, db, "orders", p))
		if used := lookupIndexesUsed(t, db, "orders", p); len(used) != 1 {
			t.Fatalf("explain of %v: %v", p, used)
		}
	}
	beforeColl = aggRaw(t, db, "orders", pipelines[0], collation)
	if used := lookupIndexesUsed(t, db, "orders", pipelines[0]); len(used[0].(bson.A)) != 0 {
		t.Fatalf("an index is used before one exists: %v", used)
	}

	mustRun(t, db, bson.D{{Key: "createIndexes", Value: "products"}, {Key: "indexes", Value: bson.A{
		bson.D{{Key: "key", Value: bson.D{{Key: "sku", Value: 1}}}, {Key: "name", Value: "sku_1"}},
		bson.D{{Key: "key", Value: bson.D{{Key: "info.code", Value: -1}, {Key: "z", Value: 1}}}, {Key: "name", Value: "code_z"}},
	}}})
	wantIndex := []string{"sku_1", "sku_1", "code_z", "sku_1", "_id_", "sku_1", "sku_1", "sku_1", "code_z", "_id_", "sku_1", ""}
	for i, p := range pipelines {
		want := []any{bson.A{wantIndex[i]}}
		if wantIndex[i] == "" {
			want = []any{bson.A{}}
		}
		if used := lookupIndexesUsed(t, db, "orders", p); fmt.Sprint(used) != fmt.Sprint(want) {
			t.Fatalf("explain of %v: indexesUsed %v, want %s", p, used, wantIndex[i])
		}
		after := aggRaw(t, db, "orders", p)
		if fmt.Sprint(after) != fmt.Sprint(before[i]) {
			t.Fatalf("pipeline %v differs with the index:\nwithout %v\nwith    %v", p, before[i], after)
		}
	}
	// A collation makes string equality differ from the index's: no index.
	if used := lookupIndexesUsed(t, db, "orders", pipelines[0], collation); len(used[0].(bson.A)) != 0 {
		t.Fatalf("index used under a collation: %v", used)
	}
	if after := aggRaw(t, db, "orders", pipelines[0], collation); fmt.Sprint(after) != fmt.Sprint(beforeColl) {
		t.Fatalf("collated lookup differs:\n%v\n%v", beforeColl, after)
	}
	// Something matched at all, through arrays and nulls too.
	matched := 0
	for _, d := range before[0] {
		var doc bson.M
		bson.UnmarshalExtJSON([]byte(d), false, &doc)
		matched += len(doc["hits"].(bson.A))
	}
	if matched < 60 {
		t.Fatalf("only %d joined documents: the test data is too thin", matched)
	}
}

// exprLookup is a let/pipeline $lookup of products binding v to local,
// whose first stage is {$match: {$expr: {$eq: eq}}}, followed by more.
func exprLookup(local string, eq bson.A, more ...bson.D) bson.A {
	sub := bson.A{bson.D{{Key: "$match", Value: bson.D{{Key: "$expr", Value: bson.D{{Key: "$eq", Value: eq}}}}}}}
	for _, st := range more {
		sub = append(sub, st)
	}
	return bson.A{
		bson.D{{Key: "$lookup", Value: bson.D{{Key: "from", Value: "products"}, {Key: "let", Value: bson.D{{Key: "v", Value: "$" + local}}},
			{Key: "pipeline", Value: sub}, {Key: "as", Value: "hits"}}}},
		bson.D{{Key: "$sort", Value: bson.D{{Key: "_id", Value: 1}}}},
	}
}

// A leading $match (and $sort after it) reads through the planner.
func TestAggregateLeadingMatchUsesIndex(t *testing.T) {
	db, c := startCollection(t, "aggmatch", "c")
	for i := 0; i < 50; i++ {
		if _, err := c.InsertOne(ctx, bson.D{{Key: "_id", Value: i}, {Key: "a", Value: i % 7}, {Key: "b", Value: 50 - i}}); err != nil {
			t.Fatal(err)
		}
	}
	pipeline := bson.A{
		bson.D{{Key: "$match", Value: bson.D{{Key: "a", Value: bson.D{{Key: "$in", Value: bson.A{2, 3}}}}}}},
		bson.D{{Key: "$sort", Value: bson.D{{Key: "b", Value: 1}}}},
		bson.D{{Key: "$project", Value: bson.D{{Key: "b", Value: 1}}}},
	}
	without := aggRaw(t, db, "c", pipeline)
	mustRun(t, db, bson.D{{Key: "createIndexes", Value: "c"}, {Key: "indexes", Value: bson.A{
		bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: 1}}}, {Key: "name", Value: "a_1"}},
	}}})
	with := aggRaw(t, db, "c", pipeline)
	if fmt.Sprint(with) != fmt.Sprint(without) || len(with) != 14 {
		t.Fatalf("results differ:\n%v\n%v", without, with)
	}
	res := mustRun(t, db, bson.D{{Key: "aggregate", Value: "c"}, {Key: "pipeline", Value: pipeline}, {Key: "explain", Value: true}})
	plan := get(res["stages"].(bson.A)[0], "$cursor", "queryPlanner", "winningPlan")
	if get(plan, "stage") != "FETCH" || get(plan, "inputStage", "indexName") != "a_1" {
		t.Fatalf("winning plan %v", plan)
	}
	ex := mustRun(t, db, bson.D{{Key: "explain", Value: bson.D{{Key: "aggregate", Value: "c"}, {Key: "pipeline", Value: pipeline},
		{Key: "cursor", Value: bson.D{}}}}, {Key: "verbosity", Value: "executionStats"}})
	if n := get(ex, "executionStats", "totalDocsExamined"); n != int32(14) {
		t.Fatalf("docs examined %v", n)
	}
}
