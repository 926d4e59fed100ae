package server_test

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestVersionControlErrors checks the error cases of each command.
func TestVersionControlErrors(t *testing.T) {
	ts := startServer(t)
	c := ts.client()
	db := c.Database("e")
	db.Collection("items").InsertOne(ctx, bson.M{"_id": 1, "v": 1})
	first := vc(t, c, "e", bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "one"}})

	cases := []struct {
		db   string
		cmd  bson.D
		code int32
	}{
		{"e", bson.D{{Key: "dumboCommit", Value: 1}}, 40414},                          // no message
		{"e", bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: 5}}, 14}, // wrong type
		{"e", bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "x"}, {Key: "bogus", Value: 1}}, 40415},
		{"e@" + first["commitId"].(string), bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "x"}}, 20000},
		{"e", bson.D{{Key: "dumboBranch", Value: 1}, {Key: "branch", Value: "main"}}, 20004},
		{"e", bson.D{{Key: "dumboBranch", Value: 1}, {Key: "branch", Value: "bad name"}}, 2},
		{"e", bson.D{{Key: "dumboBranch", Value: 1}, {Key: "branch", Value: "main"}, {Key: "delete", Value: 1}}, 20},
		{"e", bson.D{{Key: "dumboBranch", Value: 1}, {Key: "branch", Value: "nope"}, {Key: "delete", Value: 1}}, 20001},
		{"e", bson.D{{Key: "dumboCheckout", Value: 1}, {Key: "branch", Value: first["commitId"]}}, 2},
		{"e", bson.D{{Key: "dumboLog", Value: 1}, {Key: "_id", Value: 1}}, 2},
		{"e", bson.D{{Key: "dumboLog", Value: 1}, {Key: "from", Value: "nope~3"}}, 20001},
		{"e", bson.D{{Key: "dumboDiff", Value: 1}, {Key: "from", Value: "main~9"}}, 20001},
		{"e", bson.D{{Key: "dumboMerge", Value: 1}}, 40414},
		{"e", bson.D{{Key: "dumboMerge", Value: 1}, {Key: "continue", Value: 1}}, 20008},
		{"e", bson.D{{Key: "dumboMerge", Value: 1}, {Key: "abort", Value: 1}}, 20008},
		{"e", bson.D{{Key: "dumboResolveConflict", Value: 1}, {Key: "collection", Value: "items"}, {Key: "_id", Value: 1}, {Key: "resolution", Value: "mine"}}, 2},
		{"e", bson.D{{Key: "dumboResolveConflict", Value: 1}, {Key: "collection", Value: "items"}, {Key: "_id", Value: 1}, {Key: "resolution", Value: "ours"}}, 4},
		{"e", bson.D{{Key: "dumboCherryPick", Value: 1}}, 40414},
		{"e", bson.D{{Key: "dumboRevert", Value: 1}, {Key: "commit", Value: "zzzzzzzz"}}, 20001},
		{"e", bson.D{{Key: "dumboRebase", Value: 1}}, 40414},
		{"e", bson.D{{Key: "dumboReset", Value: 1}, {Key: "to", Value: "nope"}}, 20001},
		{"e", bson.D{{Key: "dumboTag", Value: 1}, {Key: "name", Value: "v1"}, {Key: "delete", Value: 1}}, 20001},
		{"nodb", bson.D{{Key: "dumboStatus", Value: 1}}, 26},
	}
	for _, tc := range cases {
		_, err := run(t, c.Database(tc.db), tc.cmd)
		if !isCode(err, int(tc.code)) {
			t.Errorf("%s %v: want code %d, got %v", tc.db, tc.cmd, tc.code, err)
		}
	}
	// Dirty working sets block merges and deletes, until committed.
	vc(t, c, "e", bson.D{{Key: "dumboBranch", Value: "side"}})
	c.Database("e@side").Collection("items").InsertOne(ctx, bson.M{"_id": 2})
	_, err := run(t, c.Database("e"), bson.D{{Key: "dumboBranch", Value: 1}, {Key: "branch", Value: "side"}, {Key: "delete", Value: 1}})
	if !isCode(err, 20006) {
		t.Errorf("deleting a dirty branch: %v", err)
	}
	db.Collection("items").InsertOne(ctx, bson.M{"_id": 3})
	_, err = run(t, db, bson.D{{Key: "dumboMerge", Value: 1}, {Key: "mergeIn", Value: "side"}})
	if !isCode(err, 20006) {
		t.Errorf("merging into a dirty branch: %v", err)
	}
	// Tags: create, refuse a duplicate, delete.
	vc(t, c, "e", bson.D{{Key: "dumboTag", Value: "v1"}, {Key: "commit", Value: first["commitId"]}})
	_, err = run(t, db, bson.D{{Key: "dumboTag", Value: "v1"}})
	if !isCode(err, 20004) {
		t.Errorf("duplicate tag: %v", err)
	}
	vc(t, c, "e", bson.D{{Key: "dumboTag", Value: 1}, {Key: "name", Value: "v1"}, {Key: "delete", Value: 1}})
	if tags := vc(t, c, "e", bson.D{{Key: "dumboTag", Value: 1}}); len(tags["tags"].(bson.A)) != 0 {
		t.Errorf("tag not deleted: %v", tags)
	}
	// A soft reset keeps the working state.
	vc(t, c, "e", bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "three"}})
	vc(t, c, "e", bson.D{{Key: "dumboReset", Value: 1}, {Key: "to", Value: "HEAD~1"}})
	st := vc(t, c, "e", bson.D{{Key: "dumboStatus", Value: 1}})
	if st["dirty"] != true {
		t.Errorf("soft reset: %v", st)
	}
	if n, _ := db.Collection("items").CountDocuments(ctx, bson.M{}); n != 2 {
		t.Errorf("a soft reset changed the data: %d documents", n)
	}
	// soft and hard together must agree; soft: false is a hard reset.
	_, err = run(t, db, bson.D{{Key: "dumboReset", Value: 1}, {Key: "soft", Value: true}, {Key: "hard", Value: true}})
	if !isCode(err, 2) {
		t.Errorf("soft and hard: %v", err)
	}
	vc(t, c, "e", bson.D{{Key: "dumboReset", Value: 1}, {Key: "soft", Value: false}})
	if st := vc(t, c, "e", bson.D{{Key: "dumboStatus", Value: 1}}); st["dirty"] != false {
		t.Errorf("soft: false did not reset hard: %v", st)
	}
}
