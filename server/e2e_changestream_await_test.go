package server_test

import (
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestChangeStreamAwaitData: a getMore waiting up to maxAwaitTimeMS 10 s
// returns as soon as another client's insert lands, with its event; an
// idle getMore returns an empty batch once its maxAwaitTimeMS is over,
// not before.
func TestChangeStreamAwaitData(t *testing.T) {
	ts := startServer(t)
	coll := ts.client().Database("shop").Collection("items")
	other := ts.client().Database("shop").Collection("items")
	if _, err := coll.InsertOne(ctx, bson.M{"_id": 0}); err != nil {
		t.Fatal(err)
	}

	cs, err := coll.Watch(ctx, mongo.Pipeline{}, options.ChangeStream().SetMaxAwaitTime(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close(ctx)
	// The driver's first TryNext takes the aggregate's (empty) first
	// batch; the getMores come after.
	if cs.TryNext(ctx) {
		t.Fatalf("an event before any write: %v", cs.Current)
	}
	const delay = 300 * time.Millisecond
	inserted := make(chan error, 1)
	start := time.Now()
	go func() {
		time.Sleep(delay)
		_, err := other.InsertOne(ctx, bson.M{"_id": 1})
		inserted <- err
	}()
	if !cs.TryNext(ctx) {
		t.Fatalf("no event from a getMore waiting for an insert (%v): %v", time.Since(start), cs.Err())
	}
	took := time.Since(start)
	if err := <-inserted; err != nil {
		t.Fatal(err)
	}
	if id := cs.Current.Lookup("documentKey", "_id").Int32(); id != 1 {
		t.Fatalf("event %v", cs.Current)
	}
	if took < delay || took > 8*time.Second {
		t.Fatalf("the getMore answered after %v; the insert landed after %v and the getMore waits up to 10s", took, delay)
	}

	// Idle: one getMore, an empty batch after its maxAwaitTimeMS.
	idle, err := coll.Watch(ctx, mongo.Pipeline{}, options.ChangeStream().SetMaxAwaitTime(1500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close(ctx)
	if idle.TryNext(ctx) {
		t.Fatalf("an event on an idle stream: %v", idle.Current)
	}
	start = time.Now()
	if idle.TryNext(ctx) {
		t.Fatalf("an event on an idle stream: %v", idle.Current)
	}
	took = time.Since(start)
	if err := idle.Err(); err != nil {
		t.Fatal(err)
	}
	if took < 1400*time.Millisecond || took > 8*time.Second {
		t.Fatalf("an idle getMore with maxAwaitTimeMS 1500 answered after %v", took)
	}
	if idle.ID() == 0 {
		t.Fatal("the idle stream's cursor was closed")
	}

	// By hand: an empty nextBatch, and the cursor stays open.
	raw, _ := csOpenRaw(t, coll.Database(), "items", bson.D{})
	start = time.Now()
	if evs := raw.getMore(time.Second); len(evs) != 0 {
		t.Fatalf("events %v", evs)
	}
	if took := time.Since(start); took < 900*time.Millisecond || took > 8*time.Second {
		t.Fatalf("an idle getMore with maxTimeMS 1000 answered after %v", took)
	}
	if _, err := other.InsertOne(ctx, bson.M{"_id": 2}); err != nil {
		t.Fatal(err)
	}
	if evs := raw.next(1); get(evs[0], "documentKey", "_id") != int32(2) {
		t.Fatalf("after an idle getMore: %v", evs)
	}
}
