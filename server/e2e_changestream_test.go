package server_test

import (
	"fmt"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// nextEvent reads one event from a change stream, failing after a while.
func nextEvent(t *testing.T, cs *mongo.ChangeStream) bson.M {
	t.Helper()
	for i := 0; i < 50; i++ {
		if cs.TryNext(ctx) {
			var ev bson.M
			if err := cs.Decode(&ev); err != nil {
				t.Fatal(err)
			}
			return ev
		}
		if err := cs.Err(); err != nil {
			t.Fatalf("change stream: %v", err)
		}
	}
	t.Fatal("no event arrived")
	return nil
}

// TestChangeStreamEventTypes: a collection stream reports insert, update
// (with its updateDescription), replace and delete, then drop and
// invalidate, in order, with documentKey, ns and clusterTime.
func TestChangeStreamEventTypes(t *testing.T) {
	db, coll := startCollection(t, "shop", "items")
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 0}}); err != nil {
		t.Fatal(err)
	}
	cs, err := coll.Watch(ctx, mongo.Pipeline{}, options.ChangeStream().SetMaxAwaitTime(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close(ctx)
	mustDo := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	_, err = coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: 1}, {Key: "arr", Value: bson.A{1, 2, 3}}})
	mustDo(err)
	_, err = coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$set", Value: bson.D{{Key: "b", Value: 2}}}, {Key: "$unset", Value: bson.D{{Key: "a", Value: ""}}}, {Key: "$pop", Value: bson.D{{Key: "arr", Value: 1}}}})
	mustDo(err)
	_, err = coll.ReplaceOne(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "c", Value: 3}})
	mustDo(err)
	_, err = coll.DeleteOne(ctx, bson.D{{Key: "_id", Value: 1}})
	mustDo(err)
	mustDo(coll.Drop(ctx))

	ev := nextEvent(t, cs)
	if ev["operationType"] != "insert" || get(ev, "fullDocument", "a") != int32(1) || get(ev, "documentKey", "_id") != int32(1) ||
		get(ev, "ns", "db") != "shop" || get(ev, "ns", "coll") != "items" || ev["clusterTime"] == nil || ev["wallTime"] == nil {
		t.Fatalf("insert event: %v", ev)
	}
	ev = nextEvent(t, cs)
	ud := ev["updateDescription"]
	if ev["operationType"] != "update" || get(ud, "updatedFields", "b") != int32(2) || ev["fullDocument"] != nil {
		t.Fatalf("update event: %v", ev)
	}
	if rm, _ := get(ud, "removedFields").(bson.A); len(rm) != 1 || rm[0] != "a" {
		t.Fatalf("removedFields: %v", ud)
	}
	if tr, _ := get(ud, "truncatedArrays").(bson.A); len(tr) != 1 || get(tr[0], "field") != "arr" || get(tr[0], "newSize") != int32(2) {
		t.Fatalf("truncatedArrays: %v", ud)
	}
	if get(ud, "disambiguatedPaths") != nil {
		t.Fatalf("disambiguatedPaths without showExpandedEvents: %v", ud)
	}
	ev = nextEvent(t, cs)
	if ev["operationType"] != "replace" || get(ev, "fullDocument", "c") != int32(3) {
		t.Fatalf("replace event: %v", ev)
	}
	ev = nextEvent(t, cs)
	if ev["operationType"] != "delete" || get(ev, "documentKey", "_id") != int32(1) || ev["fullDocument"] != nil {
		t.Fatalf("delete event: %v", ev)
	}
	if ev = nextEvent(t, cs); ev["operationType"] != "drop" {
		t.Fatalf("drop event: %v", ev)
	}
	if ev = nextEvent(t, cs); ev["operationType"] != "invalidate" {
		t.Fatalf("invalidate event: %v", ev)
	}
	if cs.Next(ctx) {
		t.Fatal("an event after invalidate")
	}
	_ = db
}

// TestChangeStreamResume: a stream resumed after an event's token sees
// the events after it, none twice.
func TestChangeStreamResume(t *testing.T) {
	_, coll := startCollection(t, "shop", "items")
	cs, err := coll.Watch(ctx, mongo.Pipeline{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: i}}); err != nil {
			t.Fatal(err)
		}
	}
	nextEvent(t, cs)
	token := cs.ResumeToken()
	cs.Close(ctx)
	cs, err = coll.Watch(ctx, mongo.Pipeline{}, options.ChangeStream().SetResumeAfter(token))
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close(ctx)
	for _, want := range []int32{1, 2} {
		if ev := nextEvent(t, cs); get(ev, "documentKey", "_id") != want {
			t.Fatalf("after resuming: %v, want _id %d", ev, want)
		}
	}
}

// TestChangeStreamDropDatabase: dropping a database gives a database
// stream a drop for each collection, then dropDatabase, then invalidate;
// a collection stream sees its drop and invalidate; a cluster stream sees
// the drops and dropDatabase and goes on.
func TestChangeStreamDropDatabase(t *testing.T) {
	c := startServer(t).client()
	db := c.Database("gone")
	for _, name := range []string{"a", "b"} {
		if _, err := db.Collection(name).InsertOne(ctx, bson.D{{Key: "_id", Value: 1}}); err != nil {
			t.Fatal(err)
		}
	}
	opts := options.ChangeStream().SetMaxAwaitTime(2 * time.Second)
	dbStream, err := db.Watch(ctx, mongo.Pipeline{}, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer dbStream.Close(ctx)
	collStream, err := db.Collection("a").Watch(ctx, mongo.Pipeline{}, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer collStream.Close(ctx)
	all, err := c.Watch(ctx, mongo.Pipeline{}, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer all.Close(ctx)
	if err := db.Drop(ctx); err != nil {
		t.Fatal(err)
	}
	ops := func(cs *mongo.ChangeStream, n int) []string {
		t.Helper()
		var out []string
		for range n {
			ev := nextEvent(t, cs)
			out = append(out, fmt.Sprint(ev["operationType"], ":", get(ev, "ns", "coll")))
		}
		return out
	}
	if got := fmt.Sprint(ops(dbStream, 4)); got != "[drop:a drop:b dropDatabase:<nil> invalidate:<nil>]" {
		t.Fatalf("database stream: %s", got)
	}
	if got := fmt.Sprint(ops(collStream, 2)); got != "[drop:a invalidate:<nil>]" {
		t.Fatalf("collection stream: %s", got)
	}
	if got := fmt.Sprint(ops(all, 3)); got != "[drop:a drop:b dropDatabase:<nil>]" {
		t.Fatalf("cluster stream: %s", got)
	}
	if _, err := c.Database("other").Collection("x").InsertOne(ctx, bson.D{{Key: "_id", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	if ev := nextEvent(t, all); ev["operationType"] != "insert" {
		t.Fatalf("the cluster stream after the drop: %v", ev)
	}
}
