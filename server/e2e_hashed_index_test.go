package server_test

import (
	"errors"
	"fmt"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestHashedIndex: {field: "hashed"} (alone and compound) serves equality
// and $in through the index with mongod's hash values, answers the same
// as a collection scan, and refuses arrays, unique and two hashed fields.
func TestHashedIndex(t *testing.T) {
	db, coll := startCollection(t, "shop", "users")
	for i := 0; i < 50; i++ {
		if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: i}, {Key: "email", Value: fmt.Sprintf("u%d@x", i%10)}, {Key: "n", Value: i % 7}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "email", Value: "hashed"}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "n", Value: 1}, {Key: "email", Value: "hashed"}}}); err != nil {
		t.Fatal(err)
	}
	count := func(filter bson.D) int64 {
		t.Helper()
		n, err := coll.CountDocuments(ctx, filter)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, f := range []bson.D{
		{{Key: "email", Value: "u3@x"}},
		{{Key: "email", Value: bson.D{{Key: "$in", Value: bson.A{"u1@x", "u2@x", "nobody"}}}}},
		{{Key: "email", Value: bson.D{{Key: "$gt", Value: "u8@x"}}}},
		{{Key: "n", Value: 3}, {Key: "email", Value: "u3@x"}},
	} {
		planned := count(f)
		scan, err := coll.CountDocuments(ctx, f, options.Count().SetHint(bson.D{{Key: "$natural", Value: 1}}))
		if err != nil {
			t.Fatal(err)
		}
		if planned != scan {
			t.Fatalf("%v: %d through the planner, %d by a collection scan", f, planned, scan)
		}
	}
	if n := count(bson.D{{Key: "email", Value: "u3@x"}}); n != 5 {
		t.Fatalf("email u3@x: %d, want 5", n)
	}
	ex := mustRun(t, db, bson.D{{Key: "explain", Value: bson.D{{Key: "find", Value: "users"}, {Key: "filter", Value: bson.D{{Key: "email", Value: "u3@x"}}}}}})
	if s := fmt.Sprint(ex["queryPlanner"]); !containsString(s, "email_hashed") || !containsString(s, "IXSCAN") {
		t.Fatalf("explain does not use the hashed index: %v", s)
	}
	h := mustRun(t, db, bson.D{{Key: "convertShardKeyToHashed", Value: int32(42)}})
	if h["outputValue"] != int64(-944302157085130861) {
		t.Fatalf("convertShardKeyToHashed(42): %v, want mongod's -944302157085130861", h)
	}
	_, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 100}, {Key: "email", Value: bson.A{"a", "b"}}})
	var we mongo.WriteException
	if !errors.As(err, &we) || len(we.WriteErrors) != 1 || we.WriteErrors[0].Code != 16766 {
		t.Fatalf("an array in a hashed field: %v, want write error 16766", err)
	}
	_, err = coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "n", Value: "hashed"}}, Options: nil})
	if err != nil {
		t.Fatal(err)
	}
	_, err = run(t, db, bson.D{{Key: "createIndexes", Value: "users"}, {Key: "indexes", Value: bson.A{bson.D{{Key: "key", Value: bson.D{{Key: "x", Value: "hashed"}}}, {Key: "name", Value: "u"}, {Key: "unique", Value: true}}}}})
	wantCode(t, err, 16764, "")
	_, err = run(t, db, bson.D{{Key: "createIndexes", Value: "users"}, {Key: "indexes", Value: bson.A{bson.D{{Key: "key", Value: bson.D{{Key: "x", Value: "hashed"}, {Key: "y", Value: "hashed"}}}, {Key: "name", Value: "two"}}}}})
	wantCode(t, err, 31303, "")
}
