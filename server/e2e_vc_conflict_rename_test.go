package server_test

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestConflictedCollectionStaysUntilResolved: while a merge has
// unresolved conflicts in a collection, dropping it or renaming it (to
// this database or another) fails with MergeInProgress and changes
// nothing; its conflicts still resolve, and the merge continues.
func TestConflictedCollectionStaysUntilResolved(t *testing.T) {
	client := startServer(t).client()
	shop, admin := client.Database("shop"), client.Database("admin")
	if _, err := shop.Collection("c").InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "x", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	mustRun(t, shop, bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "base"}})
	mustRun(t, shop, bson.D{{Key: "dumboBranch", Value: 1}, {Key: "branch", Value: "feature"}})
	for _, side := range []struct {
		db  string
		x   int
		msg string
	}{{"shop@feature", 10, "theirs"}, {"shop", 20, "ours"}} {
		db := client.Database(side.db)
		if _, err := db.Collection("c").UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$set", Value: bson.D{{Key: "x", Value: side.x}}}}); err != nil {
			t.Fatal(err)
		}
		mustRun(t, db, bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: side.msg}})
	}
	_, err := run(t, shop, bson.D{{Key: "dumboMerge", Value: 1}, {Key: "mergeIn", Value: "feature"}})
	wantCode(t, err, 20002, "MergeConflict")

	_, err = run(t, shop, bson.D{{Key: "drop", Value: "c"}})
	wantCode(t, err, 20007, "MergeInProgress")
	_, err = run(t, admin, bson.D{{Key: "renameCollection", Value: "shop.c"}, {Key: "to", Value: "shop.d"}})
	wantCode(t, err, 20007, "MergeInProgress")
	_, err = run(t, admin, bson.D{{Key: "renameCollection", Value: "shop.c"}, {Key: "to", Value: "other.c"}})
	wantCode(t, err, 20007, "MergeInProgress")
	if names, err := client.Database("other").ListCollectionNames(ctx, bson.D{}); err != nil || len(names) != 0 {
		t.Fatalf("a refused rename across databases left %v (%v)", names, err)
	}

	mustRun(t, shop, bson.D{{Key: "dumboResolveConflict", Value: 1}, {Key: "collection", Value: "c"},
		{Key: "_id", Value: 1}, {Key: "resolution", Value: "theirs"}})
	mustRun(t, shop, bson.D{{Key: "dumboMerge", Value: 1}, {Key: "continue", Value: 1}})
	var doc bson.M
	if err := shop.Collection("c").FindOne(ctx, bson.D{{Key: "_id", Value: 1}}).Decode(&doc); err != nil || doc["x"] != int32(10) {
		t.Fatalf("after the merge: %v %v", doc, err)
	}
	mustRun(t, admin, bson.D{{Key: "renameCollection", Value: "shop.c"}, {Key: "to", Value: "shop.d"}})
}
