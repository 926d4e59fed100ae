package server_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/dumbodb/dumbodb/server"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// TestAutoCommitPerDatabase: dumboConfig switches automatic commits for
// one database; then each write command is a commit whose message is the
// command, a write that changed nothing makes none, a transaction's
// commit is one, and null gives the database back to --autoCommit.
func TestAutoCommitPerDatabase(t *testing.T) {
	ts := startServer(t)
	db := ts.client().Database("shop")
	coll := db.Collection("orders")
	config := func(args ...bson.E) bson.M {
		t.Helper()
		return mustRun(t, db, append(bson.D{{Key: "dumboConfig", Value: 1}}, args...))
	}
	if got := config(); got["autoCommit"] != false || got["autoCommitFrom"] != "server" {
		t.Fatalf("dumboConfig before any switch: %v", got)
	}
	if _, err := coll.InsertOne(ctx, bson.M{"_id": 0}); err != nil {
		t.Fatal(err)
	}
	if msgs, _ := logMessages(t, db); len(msgs) != 1 { // the database's first commit alone
		t.Fatalf("a write without automatic commits committed: %v", msgs)
	}
	if got := config(bson.E{Key: "autoCommit", Value: true}); got["autoCommit"] != true || got["autoCommitFrom"] != "database" {
		t.Fatalf("dumboConfig autoCommit true: %v", got)
	}
	if _, err := coll.InsertOne(ctx, bson.M{"_id": 1, "item": "tea"}); err != nil {
		t.Fatal(err)
	}
	msgs, _ := logMessages(t, db)
	if len(msgs) != 2 || !strings.Contains(msgs[0], `insert: "orders"`) || !strings.Contains(msgs[0], `item: "tea"`) {
		t.Fatalf("commits after an insert: %q", msgs)
	}
	if st := mustRun(t, db, bson.D{{Key: "dumboStatus", Value: 1}}); st["dirty"] != false {
		t.Errorf("working set after an automatic commit: %v", st)
	}
	if _, err := coll.UpdateOne(ctx, bson.M{"_id": "none"}, bson.M{"$set": bson.M{"x": 1}}); err != nil {
		t.Fatal(err)
	}
	if msgs, _ := logMessages(t, db); len(msgs) != 2 {
		t.Errorf("an update that changed nothing committed: %q", msgs)
	}
	commitInTransaction(t, db.Client(), coll)
	if msgs, _ := logMessages(t, db); len(msgs) != 3 || !strings.HasPrefix(msgs[0], "{ commitTransaction: 1") {
		t.Errorf("commits after a transaction: %q", msgs)
	}
	many := make([]any, 200)
	for i := range many {
		many[i] = bson.M{"_id": fmt.Sprint("bulk", i), "note": strings.Repeat("x", 100)}
	}
	if _, err := coll.InsertMany(ctx, many); err != nil {
		t.Fatal(err)
	}
	if msgs, _ := logMessages(t, db); len(msgs[0]) > 1100 || !strings.HasSuffix(msgs[0], " …") {
		t.Errorf("the message of a large insert is %d bytes, want it cut at 1 KiB: %.80q", len(msgs[0]), msgs[0])
	}
	if got := config(bson.E{Key: "autoCommit", Value: nil}); got["autoCommit"] != false || got["autoCommitFrom"] != "server" {
		t.Errorf("dumboConfig autoCommit null: %v", got)
	}
	_, err := run(t, db, bson.D{{Key: "dumboConfig", Value: 1}, {Key: "autoCommit", Value: "yes"}})
	wantCode(t, err, 14, "TypeMismatch")
}

// commitInTransaction inserts a document in a transaction and commits it.
func commitInTransaction(t *testing.T, client *mongo.Client, coll *mongo.Collection) {
	t.Helper()
	sess, err := client.StartSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.EndSession(ctx)
	_, err = sess.WithTransaction(ctx, func(sc context.Context) (any, error) {
		return coll.InsertOne(sc, bson.M{"_id": "in-txn"})
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestAutoCommitGroupsConcurrentWrites: with --autoCommit, writers at
// once each hear of their insert only once a commit holds it: the head
// commit has every document, each in exactly one commit, and grouped
// commits list their commands. A database's own switch turns it off.
func TestAutoCommitGroupsConcurrentWrites(t *testing.T) {
	ts := startServer(t, func(c *server.Config) { c.AutoCommit = true })
	client := ts.client()
	db := client.Database("load")
	coll := db.Collection("c")
	const writers, each = 16, 10
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				if _, err := coll.InsertOne(ctx, bson.M{"_id": fmt.Sprintf("w%d-%d", w, i)}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	head := client.Database("load@HEAD~0").Collection("c")
	if n, err := head.CountDocuments(ctx, bson.M{}); err != nil || n != writers*each {
		t.Fatalf("the head commit holds %d documents (%v), want %d", n, err, writers*each)
	}
	for _, id := range []string{"w0-0", "w7-5", "w15-9"} {
		if msgs, _ := logMessages(t, db, bson.E{Key: "collection", Value: "c"}, bson.E{Key: "_id", Value: id}); len(msgs) != 1 {
			t.Errorf("commits of %s: %q, want exactly one", id, msgs)
		}
	}
	msgs, _ := logMessages(t, db, bson.E{Key: "limit", Value: 1000})
	t.Logf("%d inserts made %d commits", writers*each, len(msgs))
	listed := 0
	for _, m := range msgs {
		listed += strings.Count(m, `insert: "c"`)
	}
	if listed != writers*each {
		t.Errorf("the commits' messages list %d inserts, want each of the %d once", listed, writers*each)
	}
	if got := mustRun(t, db, bson.D{{Key: "dumboConfig", Value: 1}, {Key: "autoCommit", Value: false}}); got["autoCommit"] != false {
		t.Fatalf("dumboConfig autoCommit false: %v", got)
	}
	if _, err := coll.InsertOne(ctx, bson.M{"_id": "after"}); err != nil {
		t.Fatal(err)
	}
	if after, _ := logMessages(t, db, bson.E{Key: "limit", Value: 1000}); len(after) != len(msgs) {
		t.Errorf("a write committed after the database turned automatic commits off")
	}
}
