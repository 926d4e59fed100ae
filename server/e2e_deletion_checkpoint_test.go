package server_test

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestSlidingWindowDeletesCheckpointEarly: a collection kept as a sliding
// window (deleteMany of everything below a cutoff that keeps rising)
// makes each deleteMany step over every deletion since the checkpoint;
// the server folds them early (serverStatus.storageEngine.
// deletionCheckpoints), and the window reads the same before and after.
func TestSlidingWindowDeletesCheckpointEarly(t *testing.T) {
	db, coll := startCollection(t, "test", "window")
	const total, step = 20_000, 200
	docs := make([]any, 0, 1000)
	for i := range total {
		docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "n", Value: i % 7}})
		if len(docs) == cap(docs) {
			if _, err := coll.InsertMany(ctx, docs); err != nil {
				t.Fatal(err)
			}
			docs = docs[:0]
		}
	}
	before := storageEngineStat(t, db.Client(), "deletionCheckpoints")
	for cutoff := step; cutoff <= total/2; cutoff += step {
		res, err := coll.DeleteMany(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$lt", Value: cutoff}}}})
		if err != nil {
			t.Fatal(err)
		}
		if res.DeletedCount != step {
			t.Fatalf("cutoff %d: %d deleted, want %d", cutoff, res.DeletedCount, step)
		}
	}
	if got := storageEngineStat(t, db.Client(), "deletionCheckpoints") - before; got < 1 {
		t.Fatalf("%d early checkpoints after the window's deletes", got)
	}
	if n, err := coll.CountDocuments(ctx, bson.D{}); err != nil || n != total/2 {
		t.Fatalf("%d documents left (%v), want %d", n, err, total/2)
	}
	var first bson.M
	if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$gte", Value: 0}}}}).Decode(&first); err != nil {
		t.Fatal(err)
	}
	if first["_id"] != int32(total/2) {
		t.Fatalf("first document left: %v, want _id %d", first, total/2)
	}
}
