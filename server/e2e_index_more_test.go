package server_test

import (
	"reflect"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

func TestIndexCoveredCountDistinctSizes(t *testing.T) {
	db, c := startCollection(t, "cov", "c")
	var docs []any
	for i := 0; i < 100; i++ {
		var a any = i % 10
		if i%3 == 0 {
			a = float64(i % 10) // same key as the int, different type
		}
		d := bson.D{{Key: "_id", Value: i}, {Key: "a", Value: a}, {Key: "b", Value: i}, {Key: "c", Value: bson.D{{Key: "d", Value: i % 4}}}}
		if i%10 == 7 {
			d = bson.D{{Key: "_id", Value: i}, {Key: "b", Value: i}} // a missing
		}
		docs = append(docs, d)
	}
	if _, err := c.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	mustRun(t, db, bson.D{{Key: "createIndexes", Value: "c"}, {Key: "indexes", Value: bson.A{
		bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: 1}, {Key: "b", Value: -1}}}, {Key: "name", Value: "a_b"}},
		bson.D{{Key: "key", Value: bson.D{{Key: "c.d", Value: 1}}}, {Key: "name", Value: "cd"}},
		bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: -1}}}, {Key: "name", Value: "a_desc"}},
	}}})
	// A write after the build: the entry's stored values follow the
	// document even when its key does not change (1 -> 1.0).
	if _, err := c.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$set", Value: bson.D{{Key: "a", Value: 1.0}}}}); err != nil {
		t.Fatal(err)
	}
	explain := func(cmd bson.D, verbosity string) bson.M {
		return mustRun(t, db, bson.D{{Key: "explain", Value: cmd}, {Key: "verbosity", Value: verbosity}})
	}

	// Covered find.
	filter := bson.D{{Key: "a", Value: bson.D{{Key: "$gte", Value: 1}, {Key: "$lte", Value: 3}}}}
	proj := bson.D{{Key: "_id", Value: 0}, {Key: "a", Value: 1}, {Key: "b", Value: 1}}
	e := explain(bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: filter}, {Key: "projection", Value: proj}}, "executionStats")
	if get(e, "queryPlanner", "winningPlan", "stage") != "PROJECTION_COVERED" ||
		get(e, "queryPlanner", "winningPlan", "inputStage", "stage") != "IXSCAN" ||
		num(get(e, "executionStats", "totalDocsExamined")) != 0 || num(get(e, "executionStats", "nReturned")) != 30 {
		t.Fatalf("covered explain: %v", e)
	}
	var got, want []bson.M
	cur, err := c.Find(ctx, filter, options.Find().SetProjection(proj).SetSort(bson.D{{Key: "b", Value: 1}}))
	if err != nil {
		t.Fatal(err)
	}
	if err := cur.All(ctx, &got); err != nil {
		t.Fatal(err)
	}
	cur, err = c.Find(ctx, filter, options.Find().SetProjection(proj).SetSort(bson.D{{Key: "b", Value: 1}}).SetHint(bson.D{{Key: "$natural", Value: 1}}))
	if err != nil {
		t.Fatal(err)
	}
	if err := cur.All(ctx, &want); err != nil {
		t.Fatal(err)
	}
	if len(got) != 30 || !reflect.DeepEqual(got, want) {
		t.Fatalf("covered find: %v, want %v", got, want)
	}
	for _, d := range got {
		if d["b"] == int32(1) && d["a"] != 1.0 {
			t.Fatalf("stale covered value: %v", d)
		}
	}
	// Dotted key field, covered.
	e = explain(bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "c.d", Value: 2}}}, {Key: "projection", Value: bson.D{{Key: "_id", Value: 0}, {Key: "c.d", Value: 1}}}}, "executionStats")
	if get(e, "queryPlanner", "winningPlan", "stage") != "PROJECTION_COVERED" || num(get(e, "executionStats", "nReturned")) != 25 {
		t.Fatalf("dotted covered: %v", e)
	}
	// _id needed, or a field outside the key: fetched.
	e = explain(bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: filter}, {Key: "projection", Value: bson.D{{Key: "a", Value: 1}}}}, "executionStats")
	if get(e, "queryPlanner", "winningPlan", "stage") != "PROJECTION_DEFAULT" || num(get(e, "executionStats", "totalDocsExamined")) == 0 {
		t.Fatalf("not covered: %v", e)
	}

	// count from the index.
	e = explain(bson.D{{Key: "count", Value: "c"}, {Key: "query", Value: filter}}, "executionStats")
	if get(e, "queryPlanner", "winningPlan", "stage") != "COUNT" || get(e, "queryPlanner", "winningPlan", "inputStage", "stage") != "COUNT_SCAN" ||
		num(get(e, "executionStats", "totalDocsExamined")) != 0 {
		t.Fatalf("count explain: %v", e)
	}
	for _, f := range []bson.D{filter, {{Key: "a", Value: 2}, {Key: "b", Value: bson.D{{Key: "$lt", Value: 50}}}}, {{Key: "a", Value: bson.D{{Key: "$in", Value: bson.A{1, 5, "x"}}}}}, {{Key: "b", Value: 3}}} {
		n, err := c.CountDocuments(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		res := mustRun(t, db, bson.D{{Key: "count", Value: "c"}, {Key: "query", Value: f}})
		if res["n"] != int64(n) && res["n"] != int32(n) {
			t.Fatalf("count %v: %v vs countDocuments %d", f, res, n)
		}
	}
	res := mustRun(t, db, bson.D{{Key: "count", Value: "c"}, {Key: "query", Value: filter}, {Key: "skip", Value: 5}, {Key: "limit", Value: 10}})
	if res["n"] != int64(10) && res["n"] != int32(10) {
		t.Fatalf("count skip/limit: %v", res)
	}

	// distinct from the index.
	e = explain(bson.D{{Key: "distinct", Value: "c"}, {Key: "key", Value: "a"}}, "executionStats")
	if get(e, "queryPlanner", "winningPlan", "inputStage", "stage") != "DISTINCT_SCAN" || num(get(e, "executionStats", "totalDocsExamined")) != 0 {
		t.Fatalf("distinct explain: %v", e)
	}
	if n := num(get(e, "executionStats", "totalKeysExamined")); n >= 100 {
		t.Fatalf("distinct scan read every entry: %d", n)
	}
	res = mustRun(t, db, bson.D{{Key: "distinct", Value: "c"}, {Key: "key", Value: "a"}})
	vals := res["values"].(bson.A)
	var one bson.M
	if err := c.FindOne(ctx, bson.D{{Key: "_id", Value: 1}}).Decode(&one); err != nil {
		t.Fatal(err)
	}
	wantOne := any(1.0)
	if _, isInt := one["a"].(int32); isInt {
		wantOne = int32(1) // the update kept the equal value as it was
	}
	// Ten keys (0..9) less the missing 7, in order of first _id; 0 first
	// seen as 0.0 (_id 0), 1 as the updated 1.0.
	if len(vals) != 9 || vals[0] != 0.0 || vals[1] != wantOne || vals[2] != int32(2) {
		t.Fatalf("distinct: %#v %T %T %T", vals, vals[0], vals[1], vals[2])
	}

	// Rejected plans.
	e = explain(bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "a", Value: 2}, {Key: "c.d", Value: 1}}}}, "allPlansExecution")
	rej, _ := get(e, "queryPlanner", "rejectedPlans").(bson.A)
	all, _ := get(e, "executionStats", "allPlansExecution").(bson.A)
	if len(rej) != 2 || len(all) != 3 {
		t.Fatalf("rejectedPlans: %v", e)
	}

	// Sizes.
	st := mustRun(t, db, bson.D{{Key: "collStats", Value: "c"}})
	ab := num(get(st, "indexSizes", "a_b"))
	if st["nindexes"] != int32(4) || num(get(st, "indexSizes", "_id_")) <= 0 || ab <= 0 || num(st["totalIndexSize"]) < ab {
		t.Fatalf("collStats: %v", st)
	}
	ds := mustRun(t, db, bson.D{{Key: "dbStats", Value: 1}})
	if num(ds["indexes"]) != 4 || ds["indexSize"] != st["totalIndexSize"] {
		t.Fatalf("dbStats: %v", ds)
	}
}
