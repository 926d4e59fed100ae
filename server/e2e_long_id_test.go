package server_test

import (
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestLongIDs: an _id of any length is stored, as on mongod: an 8 MiB
// string through a client bulkWrite upsert, and _ids of 5 KB that share
// their first 4 KB. Each is found by equality, $in and a range, updated,
// refused as a duplicate, read through a secondary index, diffed and
// committed, and all are still there after a restart.
func TestLongIDs(t *testing.T) {
	ts := startServer(t)
	c := ts.client()
	coll := c.Database("shop").Collection("c")
	shared := strings.Repeat("s", 5000)
	huge := strings.Repeat("h", 8<<20)
	ids := []string{shared + "b", shared + "a", huge, "plain"}

	if _, err := coll.InsertMany(ctx, []any{
		bson.M{"_id": ids[0], "n": 0}, bson.M{"_id": ids[1], "n": 1},
	}); err != nil {
		t.Fatal(err)
	}
	models := []mongo.ClientBulkWrite{{Database: "shop", Collection: "c",
		Model: mongo.NewClientUpdateOneModel().SetFilter(bson.M{"_id": huge}).SetUpdate(bson.M{"$set": bson.M{"n": 2}}).SetUpsert(true)}}
	if res, err := c.BulkWrite(ctx, models); err != nil || res.UpsertedCount != 1 {
		t.Fatalf("bulkWrite upsert of an 8 MiB _id: %+v, %v", res, err)
	}
	if _, err := coll.InsertOne(ctx, bson.M{"_id": "plain", "n": 3}); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "n", Value: 1}}}); err != nil {
		t.Fatal(err)
	}

	check := func(when string) {
		t.Helper()
		for n, id := range ids {
			var doc bson.M
			if err := coll.FindOne(ctx, bson.M{"_id": id}).Decode(&doc); err != nil || doc["n"] != int32(n) {
				t.Fatalf("%s: _id %d of %d bytes: %v, %v", when, n, len(id), doc["n"], err)
			}
			if err := coll.FindOne(ctx, bson.M{"n": n}).Decode(&doc); err != nil || doc["_id"] != id {
				t.Fatalf("%s: through the index, n %d: %v", when, n, err)
			}
		}
		if got := countIDs(t, coll, bson.M{"_id": bson.M{"$in": bson.A{ids[0], ids[2], "none"}}}); got != 2 {
			t.Fatalf("%s: $in found %d", when, got)
		}
		// Bounds past 4 KiB: only the larger of the two shared-prefix _ids,
		// and every _id of the range whatever its key.
		if got := countIDs(t, coll, bson.M{"_id": bson.M{"$gt": ids[1], "$lt": shared + "c"}}); got != 1 {
			t.Fatalf("%s: range between shared-prefix _ids found %d", when, got)
		}
		if got := countIDs(t, coll, bson.M{"_id": bson.M{"$gte": huge, "$lte": shared + "b"}}); got != 4 {
			t.Fatalf("%s: range found %d", when, got)
		}
	}
	check("after inserts")

	_, err := coll.InsertOne(ctx, bson.M{"_id": shared + "a"})
	if !mongo.IsDuplicateKeyError(err) {
		t.Fatalf("a duplicate long _id: %v", err)
	}
	if res, err := coll.UpdateOne(ctx, bson.M{"_id": huge}, bson.M{"$set": bson.M{"x": 1}}); err != nil || res.ModifiedCount != 1 {
		t.Fatalf("update by an 8 MiB _id: %+v, %v", res, err)
	}
	mustRun(t, c.Database("shop"), bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "long ids"}})
	if res, err := coll.DeleteOne(ctx, bson.M{"_id": ids[1]}); err != nil || res.DeletedCount != 1 {
		t.Fatalf("delete by a long _id: %+v, %v", res, err)
	}
	diff := mustRun(t, c.Database("shop"), bson.D{{Key: "dumboDiff", Value: 1}, {Key: "from", Value: "HEAD"}, {Key: "to", Value: "WORKING"}})
	if raw, _ := bson.Marshal(diff); !strings.Contains(string(raw), shared+"a") {
		t.Fatalf("the diff does not name the deleted long _id")
	}
	if _, err := coll.InsertOne(ctx, bson.M{"_id": ids[1], "n": 1}); err != nil {
		t.Fatal(err)
	}
	if v := mustRun(t, c.Database("shop"), bson.D{{Key: "validate", Value: "c"}}); v["valid"] != true {
		t.Fatalf("validate: %v", v)
	}

	ts.restart()
	coll = ts.client().Database("shop").Collection("c")
	check("after a restart")
}

func countIDs(t *testing.T, coll *mongo.Collection, filter bson.M) int {
	t.Helper()
	cur, err := coll.Find(ctx, filter, options.Find().SetProjection(bson.M{"n": 1}))
	if err != nil {
		t.Fatal(err)
	}
	var docs []bson.M
	if err := cur.All(ctx, &docs); err != nil {
		t.Fatal(err)
	}
	return len(docs)
}
