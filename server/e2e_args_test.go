package server_test

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestUpdateConstants: an update statement's c gives its pipeline $$
// variables (beside let's, c's winning), and only a pipeline takes it.
func TestUpdateConstants(t *testing.T) {
	db, coll := startCollection(t, "args", "c")
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	mustRun(t, db, bson.D{{Key: "update", Value: "c"}, {Key: "updates", Value: bson.A{bson.D{
		{Key: "q", Value: bson.D{{Key: "_id", Value: 1}}},
		{Key: "u", Value: bson.A{bson.D{{Key: "$set", Value: bson.D{{Key: "a", Value: "$$x"}, {Key: "b", Value: "$$y"}}}}}},
		{Key: "c", Value: bson.D{{Key: "x", Value: "from c"}}},
	}}}, {Key: "let", Value: bson.D{{Key: "x", Value: "from let"}, {Key: "y", Value: "let's y"}}}})
	var got bson.M
	if err := coll.FindOne(ctx, bson.D{}).Decode(&got); err != nil {
		t.Fatal(err)
	}
	if got["a"] != "from c" || got["b"] != "let's y" {
		t.Errorf("constants: %v", got)
	}
	_, err := run(t, db, bson.D{{Key: "update", Value: "c"}, {Key: "updates", Value: bson.A{bson.D{
		{Key: "q", Value: bson.D{}},
		{Key: "u", Value: bson.D{{Key: "$set", Value: bson.D{{Key: "a", Value: 1}}}}},
		{Key: "c", Value: bson.D{{Key: "x", Value: 1}}},
	}}}})
	wantCode(t, err, 51198, "") // refused as the statement is parsed, as on mongod
}

// TestDistinctHint: distinct's hint must name an index, as on mongod.
func TestDistinctHint(t *testing.T) {
	db, coll := startCollection(t, "args", "d")
	if _, err := coll.InsertMany(ctx, []any{bson.D{{Key: "a", Value: 1}}, bson.D{{Key: "a", Value: 2}}}); err != nil {
		t.Fatal(err)
	}
	mustRun(t, db, bson.D{{Key: "createIndexes", Value: "d"}, {Key: "indexes", Value: bson.A{bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: 1}}}, {Key: "name", Value: "a_1"}}}}})
	out := mustRun(t, db, bson.D{{Key: "distinct", Value: "d"}, {Key: "key", Value: "a"}, {Key: "hint", Value: "a_1"}})
	if vals := out["values"].(bson.A); len(vals) != 2 {
		t.Errorf("distinct with a hint: %v", out)
	}
	_, err := run(t, db, bson.D{{Key: "distinct", Value: "d"}, {Key: "key", Value: "a"}, {Key: "hint", Value: "nope"}})
	wantCode(t, err, 2, "BadValue")
	_, err = run(t, db, bson.D{{Key: "distinct", Value: "d"}, {Key: "key", Value: "a"}, {Key: "hint", Value: 3}})
	wantCode(t, err, 9, "FailedToParse")
}

// TestCountersAreInt32: counters mongod appends with appendNumber are
// 32-bit integers while they fit, so JavaScript clients see numbers.
func TestCountersAreInt32(t *testing.T) {
	db, coll := startCollection(t, "args", "n")
	if _, err := coll.InsertOne(ctx, bson.D{}); err != nil {
		t.Fatal(err)
	}
	if n := mustRun(t, db, bson.D{{Key: "count", Value: "n"}})["n"]; n != int32(1) {
		t.Errorf("count's n = %v (%T)", n, n)
	}
	ops := mustRun(t, db.Client().Database("admin"), bson.D{{Key: "currentOp", Value: 1}})["inprog"].(bson.A)
	for _, op := range ops {
		if id := get(op, "opid"); id != nil {
			if _, ok := id.(int32); !ok {
				t.Errorf("currentOp's opid = %v (%T)", id, id)
			}
		}
	}
}
