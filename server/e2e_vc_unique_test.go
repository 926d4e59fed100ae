package server_test

import (
	"errors"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// Two documents from different sides of a merge claiming one unique-index
// key are a conflict, not a corrupt index nor a failed merge.
func TestMergeUniqueIndexClashIsConflict(t *testing.T) {
	ts := startServer(t)
	c := ts.client()
	users := c.Database("crm").Collection("users")
	mustRun(t, c.Database("crm"), bson.D{{Key: "createIndexes", Value: "users"}, {Key: "indexes", Value: bson.A{
		bson.D{{Key: "key", Value: bson.D{{Key: "email", Value: 1}}}, {Key: "name", Value: "email_1"}, {Key: "unique", Value: true}},
	}}})
	if _, err := users.InsertOne(ctx, bson.M{"_id": 10, "email": "old@x", "n": 1}); err != nil {
		t.Fatal(err)
	}
	vc(t, c, "crm", bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "base"}})
	vc(t, c, "crm", bson.D{{Key: "dumboBranch", Value: 1}, {Key: "branch", Value: "side"}})
	side := c.Database("crm@side").Collection("users")
	if _, err := side.InsertOne(ctx, bson.M{"_id": 2, "email": "ann@x"}); err != nil {
		t.Fatal(err)
	}
	if _, err := side.UpdateOne(ctx, bson.M{"_id": 10}, bson.M{"$set": bson.M{"email": "bob@x"}}); err != nil {
		t.Fatal(err)
	}
	vc(t, c, "crm@side", bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "side"}})
	if _, err := users.InsertMany(ctx, []any{bson.M{"_id": 1, "email": "ann@x"}, bson.M{"_id": 3, "email": "bob@x"}}); err != nil {
		t.Fatal(err)
	}
	vc(t, c, "crm", bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "main"}})

	_, err := run(t, c.Database("crm"), bson.D{{Key: "dumboMerge", Value: 1}, {Key: "mergeIn", Value: "side"}})
	wantCode(t, err, 20002, "MergeConflict")
	var ce mongo.CommandError
	errors.As(err, &ce)
	if n := ce.Raw.Lookup("conflicts", "users").Int32(); n != 2 {
		t.Fatalf("conflict counts: %v", ce.Raw)
	}
	confs := vc(t, c, "crm", bson.D{{Key: "dumboConflicts", Value: 1}, {Key: "collection", Value: "users"}})["conflicts"].(bson.A)
	if len(confs) != 2 {
		t.Fatalf("conflicts %v", confs)
	}
	c2, c10 := confs[0].(bson.D), confs[1].(bson.D)
	if get(c2, "_id") != int32(2) || get(c2, "ours") != nil || get(c2, "base") != nil || get(c2, "theirs", "email") != "ann@x" {
		t.Fatalf("conflict on 2: %v", c2)
	}
	if get(c10, "_id") != int32(10) || get(c10, "ours", "email") != "old@x" || get(c10, "base", "email") != "old@x" ||
		get(c10, "theirs", "email") != "bob@x" {
		t.Fatalf("conflict on 10: %v", c10)
	}
	// Ours stays in the data, and the index answers for it.
	if n, _ := users.CountDocuments(ctx, bson.M{"email": "ann@x"}); n != 1 {
		t.Fatalf("%d documents with ann@x", n)
	}
	if n, _ := users.CountDocuments(ctx, bson.M{"_id": 2}); n != 0 {
		t.Fatal("their clashing document is in the data")
	}
	// Taking theirs would still break the index: E11000, conflict kept.
	_, err = run(t, c.Database("crm"), bson.D{{Key: "dumboResolveConflict", Value: 1}, {Key: "collection", Value: "users"},
		{Key: "_id", Value: 2}, {Key: "resolution", Value: "theirs"}})
	wantCode(t, err, 11000, "DuplicateKey")
	_, err = run(t, c.Database("crm"), bson.D{{Key: "dumboMerge", Value: 1}, {Key: "continue", Value: 1}})
	wantCode(t, err, 20009, "")
	if left := vc(t, c, "crm", bson.D{{Key: "dumboConflicts", Value: 1}})["conflicts"].(bson.A); len(left) != 2 {
		t.Fatalf("conflicts after a refused resolution: %v", left)
	}
	vc(t, c, "crm", bson.D{{Key: "dumboResolveConflict", Value: 1}, {Key: "collection", Value: "users"},
		{Key: "_id", Value: 2}, {Key: "resolution", Value: "custom"}, {Key: "document", Value: bson.M{"email": "ann2@x"}}})
	vc(t, c, "crm", bson.D{{Key: "dumboResolveConflict", Value: 1}, {Key: "collection", Value: "users"},
		{Key: "_id", Value: 10}, {Key: "resolution", Value: "ours"}})
	done := vc(t, c, "crm", bson.D{{Key: "dumboMerge", Value: 1}, {Key: "continue", Value: 1}})
	if done["ok"] != float64(1) {
		t.Fatalf("continue %v", done)
	}
	// The merged index holds: a duplicate is still refused, lookups find
	// the resolved document.
	if _, err := users.InsertOne(ctx, bson.M{"_id": 99, "email": "ann2@x"}); !isCode(err, 11000) {
		t.Fatalf("duplicate after the merge: %v", err)
	}
	var got bson.M
	if err := users.FindOne(ctx, bson.M{"email": "ann2@x"}).Decode(&got); err != nil || got["_id"] != int32(2) {
		t.Fatalf("find by email: %v %v", got, err)
	}
	// A merge without a clash still goes through.
	vc(t, c, "crm", bson.D{{Key: "dumboBranch", Value: 1}, {Key: "branch", Value: "clean"}})
	if _, err := c.Database("crm@clean").Collection("users").InsertOne(ctx, bson.M{"_id": 20, "email": "cy@x"}); err != nil {
		t.Fatal(err)
	}
	vc(t, c, "crm@clean", bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "cy"}})
	if _, err := users.InsertOne(ctx, bson.M{"_id": 21, "email": "dee@x"}); err != nil {
		t.Fatal(err)
	}
	vc(t, c, "crm", bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "dee"}})
	vc(t, c, "crm", bson.D{{Key: "dumboMerge", Value: 1}, {Key: "mergeIn", Value: "clean"}})
	if n, _ := users.CountDocuments(ctx, bson.M{}); n != 6 {
		t.Fatalf("%d documents after the clean merge", n)
	}
}
