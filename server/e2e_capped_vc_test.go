package server_test

import (
	"context"
	"errors"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

func TestCappedConvertAndClone(t *testing.T) {
	db := startServer(t).client().Database("cap")
	c := db.Collection("plain")
	insertIDs(t, c, 3, 1, 2, 5, 4)
	if _, err := c.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.M{"pad": 1}}); err != nil {
		t.Fatal(err)
	}
	_, err := run(t, db, bson.D{{Key: "convertToCapped", Value: "plain"}})
	wantCode(t, err, 40414, "")
	_, err = run(t, db, bson.D{{Key: "convertToCapped", Value: "missing"}, {Key: "size", Value: 1000}})
	wantCode(t, err, 26, "NamespaceNotFound")
	_, err = run(t, db, bson.D{{Key: "convertToCapped", Value: "plain"}, {Key: "size", Value: -1}})
	wantCode(t, err, 51024, "")
	// A collection that is not capped is copied in _id order, its natural
	// order; 100 bytes (rounded to 256) hold all five 25-byte documents.
	mustRun(t, db, bson.D{{Key: "convertToCapped", Value: "plain"}, {Key: "size", Value: 100}})
	if got := naturalIDs(t, c); got != "1 2 3 4 5" {
		t.Fatalf("converted: %q", got)
	}
	st := mustRun(t, db, bson.D{{Key: "collStats", Value: "plain"}})
	if st["capped"] != true || num(st["maxSize"]) != 256 || num(st["nindexes"]) != 1 {
		t.Fatalf("converted collStats %v", st)
	}
	insertIDs(t, c, 0)
	_, err = run(t, db, bson.D{{Key: "cloneCollectionAsCapped", Value: "plain"}, {Key: "toCollection", Value: "small"}, {Key: "size", Value: 50}})
	if err != nil {
		t.Fatal(err)
	}
	// 50 bytes (rounded to 256) keep the newest ten at most: all six fit.
	if got := naturalIDs(t, db.Collection("small")); got != "1 2 3 4 5 0" {
		t.Fatalf("clone: %q", got)
	}
	_, err = run(t, db, bson.D{{Key: "cloneCollectionAsCapped", Value: "plain"}, {Key: "toCollection", Value: "small"}, {Key: "size", Value: 50}})
	wantCode(t, err, 48, "NamespaceExists")
	_, err = run(t, db, bson.D{{Key: "cloneCollectionAsCapped", Value: "nope"}, {Key: "toCollection", Value: "x"}, {Key: "size", Value: 50}})
	wantCode(t, err, 26, "NamespaceNotFound")
	_, err = run(t, db, bson.D{{Key: "cloneCollectionAsCapped", Value: "plain"}, {Key: "size", Value: 50}})
	wantCode(t, err, 40414, "")
}

func TestCappedWritesInTransactionsAreRefused(t *testing.T) {
	client := startServer(t).client()
	db := client.Database("cap")
	createCapped(t, db, "log", 4096, 0)
	sess, err := client.StartSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.EndSession(ctx)
	_, err = sess.WithTransaction(ctx, func(sc context.Context) (any, error) {
		_, err := db.Collection("log").InsertOne(sc, bson.M{"_id": 1})
		return nil, err
	})
	var ce mongo.CommandError
	var we mongo.WriteException
	switch {
	case errors.As(err, &ce) && ce.Code == 263:
	case errors.As(err, &we) && len(we.WriteErrors) == 1 && we.WriteErrors[0].Code == 263:
	default:
		t.Fatalf("capped write in a transaction: %v", err)
	}
}

// TestCappedVersionControl: the insertion order is versioned data: a
// branch's inserts, a merge (ours' order, then theirs' new documents), a
// conflicting merge, a reset and a restart keep it.
func TestCappedVersionControl(t *testing.T) {
	ts := startServer(t)
	client := ts.client()
	main := client.Database("shop")
	feature := client.Database("shop@feature")
	createCapped(t, main, "log", 1<<20, 0)
	insertIDs(t, main.Collection("log"), 5, 1)
	mustRun(t, main, bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "base"}})
	mustRun(t, main, bson.D{{Key: "dumboBranch", Value: 1}, {Key: "branch", Value: "feature"}})
	insertIDs(t, feature.Collection("log"), 9, 2)
	if _, err := feature.Collection("log").DeleteOne(ctx, bson.M{"_id": 5}); err != nil {
		t.Fatal(err)
	}
	mustRun(t, feature, bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "theirs"}})
	insertIDs(t, main.Collection("log"), 8, 0)
	mustRun(t, main, bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "ours"}})
	if got := naturalIDs(t, feature.Collection("log")); got != "1 9 2" {
		t.Fatalf("branch order %q", got)
	}
	mustRun(t, main, bson.D{{Key: "dumboMerge", Value: 1}, {Key: "mergeIn", Value: "feature"}})
	want := "1 8 0 9 2"
	if got := naturalIDs(t, main.Collection("log")); got != want {
		t.Fatalf("merged order %q, want %q", got, want)
	}
	// Uncommitted inserts go with a hard reset.
	insertIDs(t, main.Collection("log"), 4)
	mustRun(t, main, bson.D{{Key: "dumboReset", Value: 1}, {Key: "hard", Value: true}})
	if got := naturalIDs(t, main.Collection("log")); got != want {
		t.Fatalf("after reset %q", got)
	}
	// A conflicting merge: both sides change one document's field.
	if _, err := feature.Collection("log").UpdateOne(ctx, bson.M{"_id": 1}, bson.M{"$set": bson.M{"pad": "theirs"}}); err != nil {
		t.Fatal(err)
	}
	mustRun(t, feature, bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "theirs 2"}})
	if _, err := main.Collection("log").UpdateOne(ctx, bson.M{"_id": 1}, bson.M{"$set": bson.M{"pad": "ours"}}); err != nil {
		t.Fatal(err)
	}
	mustRun(t, main, bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "ours 2"}})
	_, err := run(t, main, bson.D{{Key: "dumboMerge", Value: 1}, {Key: "mergeIn", Value: "feature"}})
	if err == nil {
		t.Fatal("conflicting merge succeeded")
	}
	if got := naturalIDs(t, main.Collection("log")); got != want {
		t.Fatalf("order during the conflicting merge %q", got)
	}
	mustRun(t, main, bson.D{{Key: "dumboMerge", Value: 1}, {Key: "abort", Value: true}})
	// A diff lists an overflow's removals as removed documents.
	mustRun(t, main, bson.D{{Key: "collMod", Value: "log"}, {Key: "cappedMax", Value: 5}})
	insertIDs(t, main.Collection("log"), 3)
	diff := mustRun(t, main, bson.D{{Key: "dumboDiff", Value: 1}})
	colls, _ := diff["collections"].(bson.A)
	if len(colls) != 1 {
		t.Fatalf("diff: %v", diff)
	}
	added, _ := get(colls[0], "added").(bson.A)
	removed, _ := get(colls[0], "removed").(bson.A)
	if len(added) != 1 || get(added[0], "_id") != int32(3) || len(removed) != 1 || get(removed[0], "_id") != int32(1) {
		t.Fatalf("diff of an overflowing insert: %v", colls[0])
	}
	mustRun(t, main, bson.D{{Key: "dumboReset", Value: 1}, {Key: "hard", Value: true}})
	// A restart keeps the order and the next record id.
	insertIDs(t, main.Collection("log"), 7)
	ts.restart()
	main = ts.client().Database("shop")
	insertIDs(t, main.Collection("log"), 6)
	if got := naturalIDs(t, main.Collection("log")); got != want+" 7 6" {
		t.Fatalf("after restart %q", got)
	}
}
