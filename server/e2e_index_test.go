package server_test

import (
	"fmt"
	"math/rand"
	"reflect"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

func TestIndexCommands(t *testing.T) {
	db, c := startCollection(t, "idx", "c")
	for i := 0; i < 20; i++ {
		if _, err := c.InsertOne(ctx, bson.D{{Key: "_id", Value: i}, {Key: "a", Value: i % 5}, {Key: "b", Value: bson.A{i, i + 1}}}); err != nil {
			t.Fatal(err)
		}
	}
	res := mustRun(t, db, bson.D{{Key: "createIndexes", Value: "c"}, {Key: "indexes", Value: bson.A{
		bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: 1}}}, {Key: "name", Value: "a_1"}},
		bson.D{{Key: "key", Value: bson.D{{Key: "b", Value: -1}, {Key: "a", Value: 1}}}, {Key: "name", Value: "b_a"}},
	}}})
	if res["numIndexesBefore"] != int32(1) || res["numIndexesAfter"] != int32(3) {
		t.Fatalf("createIndexes: %v", res)
	}
	res = mustRun(t, db, bson.D{{Key: "createIndexes", Value: "c"}, {Key: "indexes", Value: bson.A{bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: 1}}}, {Key: "name", Value: "a_1"}}}}})
	if res["note"] != "all indexes already exist" {
		t.Fatalf("repeat: %v", res)
	}
	_, err := run(t, db, bson.D{{Key: "createIndexes", Value: "c"}, {Key: "indexes", Value: bson.A{bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: 1}}}, {Key: "name", Value: "other"}}}}})
	wantCode(t, err, 85, "IndexOptionsConflict")
	_, err = run(t, db, bson.D{{Key: "createIndexes", Value: "c"}, {Key: "indexes", Value: bson.A{bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: -1}}}, {Key: "name", Value: "a_1"}}}}})
	wantCode(t, err, 86, "IndexKeySpecsConflict")
	_, err = run(t, db, bson.D{{Key: "createIndexes", Value: "c"}, {Key: "indexes", Value: bson.A{bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: 1}}}, {Key: "name", Value: "u"}, {Key: "unique", Value: true}}}}})
	wantCode(t, err, 85, "IndexOptionsConflict")
	_, err = run(t, db, bson.D{{Key: "createIndexes", Value: "c"}, {Key: "indexes", Value: bson.A{bson.D{{Key: "key", Value: bson.D{{Key: "z", Value: 1}}}, {Key: "name", Value: "z"}, {Key: "foo", Value: 1}}}}})
	if me, ok := err.(mongo.CommandError); !ok || me.Code != 197 {
		t.Fatalf("unknown option: %v", err)
	}
	_, err = run(t, db, bson.D{{Key: "createIndexes", Value: "c"}, {Key: "indexes", Value: bson.A{bson.D{{Key: "key", Value: bson.D{{Key: "b", Value: 1}}}, {Key: "name", Value: "ub"}, {Key: "unique", Value: true}, {Key: "sparse", Value: true}}}}})
	wantCode(t, err, 11000, "DuplicateKey")

	// Unique index: E11000 on insert, keyPattern/keyValue in the error.
	mustRun(t, db, bson.D{{Key: "createIndexes", Value: "u"}, {Key: "indexes", Value: bson.A{bson.D{{Key: "key", Value: bson.D{{Key: "x", Value: 1}, {Key: "y", Value: 1}}}, {Key: "name", Value: "xy"}, {Key: "unique", Value: true}}}}})
	u := db.Collection("u")
	if _, err := u.InsertOne(ctx, bson.D{{Key: "x", Value: 1}, {Key: "y", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	if _, err := u.InsertOne(ctx, bson.D{{Key: "x", Value: 1}, {Key: "y", Value: 2}}); err != nil {
		t.Fatal(err)
	}
	_, err = u.InsertOne(ctx, bson.D{{Key: "x", Value: 1}, {Key: "y", Value: 1}})
	if !mongo.IsDuplicateKeyError(err) {
		t.Fatalf("duplicate insert: %v", err)
	}
	if _, err := u.UpdateOne(ctx, bson.D{{Key: "y", Value: 2}}, bson.D{{Key: "$set", Value: bson.D{{Key: "y", Value: 1}}}}); !mongo.IsDuplicateKeyError(err) {
		t.Fatalf("duplicate update: %v", err)
	}

	// listIndexes and dropIndexes.
	cur, err := c.Indexes().List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var specs []bson.M
	if err := cur.All(ctx, &specs); err != nil {
		t.Fatal(err)
	}
	if len(specs) != 3 || specs[1]["name"] != "a_1" {
		t.Fatalf("listIndexes: %v", specs)
	}
	_, err = run(t, db, bson.D{{Key: "dropIndexes", Value: "c"}, {Key: "index", Value: "nope"}})
	wantCode(t, err, 27, "IndexNotFound")
	_, err = run(t, db, bson.D{{Key: "dropIndexes", Value: "c"}, {Key: "index", Value: "_id_"}})
	wantCode(t, err, 72, "InvalidOptions")
	// Key patterns no index can have (they once panicked under the write lock).
	for _, bad := range []any{bson.D{{Key: "b", Value: 1}}, bson.D{{Key: "x", Value: bson.Symbol("s")}}, bson.NewObjectID()} {
		_, err = run(t, db, bson.D{{Key: "dropIndexes", Value: "c"}, {Key: "index", Value: bson.D{{Key: "a", Value: bad}}}})
		wantCode(t, err, 27, "IndexNotFound")
	}
	mustRun(t, db, bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "a", Value: 1}}}}})
	mustRun(t, db, bson.D{{Key: "dropIndexes", Value: "c"}, {Key: "index", Value: bson.D{{Key: "b", Value: -1}, {Key: "a", Value: 1}}}})
	res = mustRun(t, db, bson.D{{Key: "dropIndexes", Value: "c"}, {Key: "index", Value: "*"}})
	if res["nIndexesWas"] != int32(2) {
		t.Fatalf("drop *: %v", res)
	}
}

func TestIndexPlansThroughExplain(t *testing.T) {
	db, c := startCollection(t, "plan", "c")
	var docs []any
	for i := 0; i < 200; i++ {
		docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "a", Value: i % 10}, {Key: "b", Value: i}, {Key: "tags", Value: bson.A{i % 3, i % 7}}})
	}
	if _, err := c.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	mustRun(t, db, bson.D{{Key: "createIndexes", Value: "c"}, {Key: "indexes", Value: bson.A{
		bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: 1}, {Key: "b", Value: -1}}}, {Key: "name", Value: "a_b"}},
		bson.D{{Key: "key", Value: bson.D{{Key: "tags", Value: 1}}}, {Key: "name", Value: "tags"}},
	}}})
	explain := func(find bson.D) bson.M {
		return mustRun(t, db, bson.D{{Key: "explain", Value: find}, {Key: "verbosity", Value: "executionStats"}})
	}
	e := explain(bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "a", Value: 3}}}, {Key: "sort", Value: bson.D{{Key: "b", Value: -1}}}})
	if get(e, "queryPlanner", "winningPlan", "stage") != "FETCH" ||
		get(e, "queryPlanner", "winningPlan", "inputStage", "indexName") != "a_b" {
		t.Fatalf("equality+sort plan: %v", e["queryPlanner"])
	}
	if num(get(e, "executionStats", "nReturned")) != 20 || num(get(e, "executionStats", "totalDocsExamined")) != 20 {
		t.Fatalf("stats: %v", e["executionStats"])
	}
	e = explain(bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "a", Value: bson.D{{Key: "$in", Value: bson.A{1, 2}}}}, {Key: "b", Value: bson.D{{Key: "$gte", Value: 50}}}}}})
	if num(get(e, "executionStats", "nReturned")) != 30 {
		t.Fatalf("$in + range: %v", e["executionStats"])
	}
	e = explain(bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "tags", Value: 2}}}})
	if get(e, "queryPlanner", "winningPlan", "inputStage", "isMultiKey") != true {
		t.Fatalf("multikey: %v", e["queryPlanner"])
	}
	e = explain(bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "b", Value: 5}}}})
	if get(e, "queryPlanner", "winningPlan", "stage") != "COLLSCAN" {
		t.Fatalf("no index: %v", e["queryPlanner"])
	}
	e = explain(bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "b", Value: 5}}}, {Key: "hint", Value: "a_b"}})
	if get(e, "queryPlanner", "winningPlan", "inputStage", "stage") != "IXSCAN" || num(get(e, "executionStats", "nReturned")) != 1 {
		t.Fatalf("hint: %v", e)
	}
	_, err := run(t, db, bson.D{{Key: "find", Value: "c"}, {Key: "hint", Value: "nope"}})
	wantCode(t, err, 2, "BadValue")
}

// TestIndexRandomizedMatchesCollectionScan runs the same queries on two
// collections holding the same random data, one with indexes and one
// without, through random updates and deletes.
func TestIndexRandomizedMatchesCollectionScan(t *testing.T) {
	ts := startServer(t)
	db := ts.client().Database("rnd")
	plain, indexed, wild := db.Collection("plain"), db.Collection("indexed"), db.Collection("wild")
	mustRun(t, db, bson.D{{Key: "createIndexes", Value: "wild"}, {Key: "indexes", Value: bson.A{
		bson.D{{Key: "key", Value: bson.D{{Key: "$**", Value: 1}}}, {Key: "name", Value: "wild"}},
	}}})
	mustRun(t, db, bson.D{{Key: "createIndexes", Value: "indexed"}, {Key: "indexes", Value: bson.A{
		bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: 1}}}, {Key: "name", Value: "a"}},
		bson.D{{Key: "key", Value: bson.D{{Key: "b", Value: -1}, {Key: "a", Value: 1}}}, {Key: "name", Value: "b_a"}},
		bson.D{{Key: "key", Value: bson.D{{Key: "c.d", Value: 1}}}, {Key: "name", Value: "cd"}},
	}}})
	rng := rand.New(rand.NewSource(1))
	value := func() any {
		switch rng.Intn(6) {
		case 0:
			return rng.Intn(10)
		case 1:
			return float64(rng.Intn(10)) + 0.5
		case 2:
			return fmt.Sprintf("s%d", rng.Intn(5))
		case 3:
			return bson.A{rng.Intn(10), rng.Intn(10)}
		case 4:
			return nil
		}
		return int64(rng.Intn(10))
	}
	// a never holds an array: b and a share an index, and mongod refuses
	// documents with arrays in two fields of one index.
	scalar := func() any {
		if v := value(); reflect.TypeOf(v) != reflect.TypeOf(bson.A{}) {
			return v
		}
		return 1
	}
	randDoc := func(id int) bson.D {
		d := bson.D{{Key: "_id", Value: id}}
		if rng.Intn(5) > 0 {
			d = append(d, bson.E{Key: "a", Value: scalar()})
		}
		if rng.Intn(5) > 0 {
			d = append(d, bson.E{Key: "b", Value: value()})
		}
		if rng.Intn(2) == 0 {
			d = append(d, bson.E{Key: "c", Value: bson.D{{Key: "d", Value: value()}}})
		}
		return d
	}
	both := func(fn func(c *mongo.Collection) error) {
		for _, c := range []*mongo.Collection{plain, indexed, wild} {
			if err := fn(c); err != nil {
				t.Fatal(err)
			}
		}
	}
	randFilter := func() bson.D {
		field := []string{"a", "b", "c.d"}[rng.Intn(3)]
		switch rng.Intn(5) {
		case 0:
			return bson.D{{Key: field, Value: value()}}
		case 1:
			return bson.D{{Key: field, Value: bson.D{{Key: "$gt", Value: rng.Intn(10)}}}}
		case 2:
			return bson.D{{Key: field, Value: bson.D{{Key: "$gte", Value: rng.Intn(5)}, {Key: "$lt", Value: 5 + rng.Intn(5)}}}}
		case 3:
			return bson.D{{Key: field, Value: bson.D{{Key: "$in", Value: bson.A{rng.Intn(10), "s1", 2.5}}}}}
		}
		return bson.D{{Key: "a", Value: rng.Intn(10)}, {Key: "b", Value: bson.D{{Key: "$lte", Value: rng.Intn(10)}}}}
	}
	next := 0
	for round := 0; round < 30; round++ {
		for i := 0; i < 10; i++ {
			d := randDoc(next)
			next++
			both(func(c *mongo.Collection) error { _, err := c.InsertOne(ctx, d); return err })
		}
		f, upd := randFilter(), bson.D{{Key: "$set", Value: bson.D{{Key: "a", Value: scalar()}}}}
		both(func(c *mongo.Collection) error { _, err := c.UpdateMany(ctx, f, upd); return err })
		f = randFilter()
		if rng.Intn(3) == 0 {
			both(func(c *mongo.Collection) error { _, err := c.DeleteMany(ctx, f); return err })
		}
		for q := 0; q < 10; q++ {
			f := randFilter()
			sort := bson.D{{Key: "b", Value: -1}, {Key: "_id", Value: 1}}
			if rng.Intn(2) == 0 {
				sort = bson.D{{Key: "_id", Value: 1}}
			}
			var results [3][]bson.M
			for i, c := range []*mongo.Collection{plain, indexed, wild} {
				cur, err := c.Find(ctx, f, options.Find().SetSort(sort))
				if err != nil {
					t.Fatal(err)
				}
				if err := cur.All(ctx, &results[i]); err != nil {
					t.Fatal(err)
				}
			}
			if !reflect.DeepEqual(results[0], results[1]) {
				t.Fatalf("round %d filter %v: without index %v, with %v", round, f, results[0], results[1])
			}
			if !reflect.DeepEqual(results[0], results[2]) {
				t.Fatalf("round %d filter %v: without index %v, with wildcard %v", round, f, results[0], results[2])
			}
			if n := mustRun(t, db, bson.D{{Key: "count", Value: "wild"}, {Key: "query", Value: f}})["n"]; fmt.Sprint(n) != fmt.Sprint(len(results[0])) {
				t.Fatalf("round %d filter %v: wildcard count %v, want %d", round, f, n, len(results[0]))
			}
			// count, distinct and a find covered by index a: same answers.
			var counts, distincts [2]any
			for i, name := range []string{"plain", "indexed"} {
				counts[i] = mustRun(t, db, bson.D{{Key: "count", Value: name}, {Key: "query", Value: f}})["n"]
				key := []string{"a", "b", "c.d"}[rng.Intn(3)]
				if i == 1 {
					key = distincts[0].(bson.A)[0].(string)
				}
				res := mustRun(t, db, bson.D{{Key: "distinct", Value: name}, {Key: "key", Value: key}, {Key: "query", Value: f}})
				distincts[i] = append(bson.A{key}, res["values"].(bson.A)...)
			}
			// distinct's order is unspecified: the index-less fallback scans
			// in plan order; compare as sets.
			if !reflect.DeepEqual(counts[0], counts[1]) || !sameValues(distincts[0].(bson.A), distincts[1].(bson.A)) {
				t.Fatalf("round %d filter %v: count %v vs %v, distinct %v vs %v", round, f, counts[0], counts[1], distincts[0], distincts[1])
			}
			if f[0].Key == "a" && len(f) == 1 {
				proj := bson.D{{Key: "_id", Value: 0}, {Key: "a", Value: 1}}
				var results [2][]bson.D
				for i, c := range []*mongo.Collection{plain, indexed} {
					cur, err := c.Find(ctx, f, options.Find().SetProjection(proj).SetSort(bson.D{{Key: "a", Value: 1}}))
					if err != nil {
						t.Fatal(err)
					}
					if err := cur.All(ctx, &results[i]); err != nil {
						t.Fatal(err)
					}
				}
				// Equal sort keys keep scan order, which differs between the
				// plans; compare as multisets of canonical JSON.
				if !sameMultiset(results[0], results[1]) {
					t.Fatalf("round %d covered filter %v: without index %v, with %v", round, f, results[0], results[1])
				}
			}
		}
	}
}

func sameMultiset[T any](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	count := map[string]int{}
	for _, d := range a {
		j, _ := bson.MarshalExtJSON(d, true, false)
		count[string(j)]++
	}
	for _, d := range b {
		j, _ := bson.MarshalExtJSON(d, true, false)
		count[string(j)]--
	}
	for _, n := range count {
		if n != 0 {
			return false
		}
	}
	return true
}

func sameValues(a, b bson.A) bool {
	wrap := func(l bson.A) []bson.D {
		out := make([]bson.D, len(l))
		for i, v := range l {
			// Equal numbers of different types are one distinct value,
			// and which one is reported follows the plan's scan order.
			switch n := v.(type) {
			case int32:
				v = float64(n)
			case int64:
				v = float64(n)
			}
			out[i] = bson.D{{Key: "v", Value: v}}
		}
		return out
	}
	return sameMultiset(wrap(a), wrap(b))
}

// TestUpdateManyThroughIndexMovesEachOnce: an updateMany planned on an
// index over a field it increments moves entries ahead of its own scan;
// each document is still updated exactly once (no Halloween problem),
// over more documents than an index scan reads from memory at a time.
func TestUpdateManyThroughIndexMovesEachOnce(t *testing.T) {
	ts := startServer(t)
	c := ts.client().Database("halloween").Collection("c")
	if _, err := c.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "a", Value: 1}}}); err != nil {
		t.Fatal(err)
	}
	docs := make([]any, 500)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: i}, {Key: "a", Value: i}}
	}
	if _, err := c.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	// Two statements in one command: the first makes the command's
	// transaction own the collection before the second scans the index.
	var res struct{ N, NModified int32 }
	err := c.Database().RunCommand(ctx, bson.D{{Key: "update", Value: "c"}, {Key: "updates", Value: bson.A{
		bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: -1}}}, {Key: "u", Value: bson.D{{Key: "$set", Value: bson.D{{Key: "a", Value: -1}}}}}, {Key: "upsert", Value: true}},
		bson.D{{Key: "q", Value: bson.D{{Key: "a", Value: bson.D{{Key: "$gte", Value: 0}}}}}, {Key: "u", Value: bson.D{{Key: "$inc", Value: bson.D{{Key: "a", Value: 100}}}}}, {Key: "multi", Value: true}},
	}}}).Decode(&res)
	if err != nil || res.N != 501 || res.NModified != 500 {
		t.Fatalf("update: %+v %v", res, err)
	}
	cur, err := c.Find(ctx, bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	var all []bson.M
	if err := cur.All(ctx, &all); err != nil {
		t.Fatal(err)
	}
	for _, d := range all {
		if d["_id"] == int32(-1) {
			continue
		}
		if d["a"] != d["_id"].(int32)+100 {
			t.Fatalf("document %v: a = %v, want %v", d["_id"], d["a"], d["_id"].(int32)+100)
		}
	}
}
