package server_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// logMessages runs dumboLog and returns its commits' messages, newest
// first, and its continuation token.
func logMessages(t *testing.T, db *mongo.Database, args ...bson.E) ([]string, string) {
	t.Helper()
	res := mustRun(t, db, append(bson.D{{Key: "dumboLog", Value: 1}}, args...))
	var out []string
	for _, c := range res["commits"].(bson.A) {
		out = append(out, fmt.Sprint(get(c, "message")))
	}
	next, _ := res["next"].(string)
	return out, next
}

// TestDumboLogQueries: dumboLog by several collections and documents, by
// a query on the documents a commit changed (either side), by time and
// author, over every branch, with per-commit counts and patches, and
// paged by its token, each checked against the commits as made.
func TestDumboLogQueries(t *testing.T) {
	ts := startServer(t)
	db := ts.client().Database("hist")
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	n := 0
	commit := func(author string) {
		t.Helper()
		n++
		mustRun(t, db, bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: fmt.Sprintf("c%d", n)},
			{Key: "author", Value: author + " <" + author + "@example.com>"}, {Key: "timestamp", Value: at.Add(time.Duration(n) * time.Hour)}})
	}
	orders, users := db.Collection("orders"), db.Collection("users")
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(orders.InsertMany(ctx, []any{bson.M{"_id": 1, "status": "new"}, bson.M{"_id": 2, "status": "new"}}))
	commit("ann") // c1
	must(users.InsertOne(ctx, bson.M{"_id": "u1"}))
	commit("bob") // c2
	must(orders.UpdateOne(ctx, bson.M{"_id": 1}, bson.M{"$set": bson.M{"status": "paid"}}))
	commit("ann") // c3
	must(orders.DeleteOne(ctx, bson.M{"_id": 2}))
	must(users.InsertOne(ctx, bson.M{"_id": "u2"}))
	commit("bob") // c4
	mustRun(t, db, bson.D{{Key: "dumboBranch", Value: 1}, {Key: "branch", Value: "side"}})
	side := ts.client().Database("hist@side")
	must(side.Collection("users").InsertOne(ctx, bson.M{"_id": "u3"}))
	mustRun(t, side, bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "s1"}, {Key: "timestamp", Value: at.Add(10 * time.Hour)}})

	for _, c := range []struct {
		args bson.D
		want string
	}{
		{bson.D{{Key: "collection", Value: "orders"}}, "[c4 c3 c1]"},
		{bson.D{{Key: "collection", Value: bson.A{"users", "nothere"}}}, "[c4 c2]"},
		{bson.D{{Key: "collection", Value: "orders"}, {Key: "_id", Value: bson.A{2, 99}}}, "[c4 c1]"},
		{bson.D{{Key: "filter", Value: bson.M{"status": "paid"}}}, "[c3]"},
		{bson.D{{Key: "filter", Value: bson.M{"status": "new"}}}, "[c4 c3 c1]"}, // c3's before side, c4's removed one
		{bson.D{{Key: "author", Value: "BOB"}}, "[c4 c2]"},
		{bson.D{{Key: "since", Value: at.Add(2 * time.Hour)}, {Key: "until", Value: at.Add(3 * time.Hour)}}, "[c3 c2]"},
		{bson.D{{Key: "all", Value: true}, {Key: "collection", Value: "users"}}, "[s1 c4 c2]"},
	} {
		got, _ := logMessages(t, db, c.args...)
		if fmt.Sprint(got) != c.want {
			t.Errorf("dumboLog %v: %v, want %s", c.args, got, c.want)
		}
	}

	var pages []string
	var after []bson.E
	for {
		got, next := logMessages(t, db, append([]bson.E{{Key: "limit", Value: 2}, {Key: "collection", Value: bson.A{"orders", "users"}}}, after...)...)
		pages = append(pages, fmt.Sprint(got))
		if next == "" {
			break
		}
		after = []bson.E{{Key: "after", Value: next}}
	}
	if fmt.Sprint(pages) != "[[c4 c3] [c2 c1]]" {
		t.Errorf("pages of 2: %v", pages)
	}

	res := mustRun(t, db, bson.D{{Key: "dumboLog", Value: 1}, {Key: "limit", Value: 1}, {Key: "stat", Value: true}, {Key: "patch", Value: true}})
	c4 := res["commits"].(bson.A)[0]
	if s := fmt.Sprint(get(c4, "stat")); s != `[{"collection":"orders","added":{"$numberInt":"0"},"modified":{"$numberInt":"0"},"removed":{"$numberInt":"1"}} {"collection":"users","added":{"$numberInt":"1"},"modified":{"$numberInt":"0"},"removed":{"$numberInt":"0"}}]` {
		t.Errorf("stat of c4: %s", s)
	}
	if p := fmt.Sprint(get(c4, "patch")); !strings.Contains(p, `"removed":[{"_id":{"$numberInt":"2"},"status":"new"}]`) ||
		!strings.Contains(p, `"added":[{"_id":"u2"}]`) || get(c4, "patchTruncated") != nil {
		t.Errorf("patch of c4: %s", p)
	}
	many := make([]any, 150)
	for i := range many {
		many[i] = bson.M{"_id": 100 + i}
	}
	must(orders.InsertMany(ctx, many))
	commit("ann")
	res = mustRun(t, db, bson.D{{Key: "dumboLog", Value: 1}, {Key: "limit", Value: 1}, {Key: "patch", Value: true}})
	big := res["commits"].(bson.A)[0]
	if get(big, "patchTruncated") != true || strings.Count(fmt.Sprint(get(big, "patch")), "_id") != 100 {
		t.Errorf("patch of 150 inserts: truncated %v, %d documents, want 100", get(big, "patchTruncated"), strings.Count(fmt.Sprint(get(big, "patch")), "_id"))
	}
	if _, err := db.RunCommand(ctx, bson.D{{Key: "dumboLog", Value: 1}, {Key: "after", Value: "0123456789abcdef0123456789abcdef"}}).Raw(); !isCode(err, 20001) {
		t.Errorf("a token of another history: %v, want RevisionNotFound", err)
	}
}
