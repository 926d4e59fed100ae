package server_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// csToken is an event's resume token (_id) as the driver takes it.
func csToken(t *testing.T, ev bson.M) bson.Raw {
	t.Helper()
	raw, err := bson.Marshal(ev["_id"])
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// TestChangeStreamResumeAfterEvent: a stream resumed after any event's
// token, also one in the middle of a multi-document write, sees exactly
// the events after it: none twice, none lost.
func TestChangeStreamResumeAfterEvent(t *testing.T) {
	db, coll := startCollection(t, "shop", "items")
	cs := csWatch(t, db, nil)
	if _, err := coll.InsertMany(ctx, []any{bson.M{"_id": 1}, bson.M{"_id": 2}, bson.M{"_id": 3}}); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.DeleteMany(ctx, bson.M{"_id": bson.M{"$lte": 2}}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Collection("other").InsertOne(ctx, bson.M{"_id": 4}); err != nil {
		t.Fatal(err)
	}
	all := csEvents(t, cs, 6)
	wantOps(t, all, [2]any{"insert", int32(1)}, [2]any{"insert", int32(2)}, [2]any{"insert", int32(3)},
		[2]any{"delete", int32(1)}, [2]any{"delete", int32(2)}, [2]any{"insert", int32(4)})
	for i := range all {
		resumed := csWatch(t, db, nil, options.ChangeStream().SetResumeAfter(csToken(t, all[i])))
		rest := csEvents(t, resumed, len(all)-1-i)
		for j, ev := range rest {
			if !bytes.Equal(csToken(t, ev), csToken(t, all[i+1+j])) {
				t.Fatalf("resumed after event %d: event %d is %v, want %v", i, j, ev, all[i+1+j])
			}
		}
		csNone(t, resumed)
	}
}

// TestChangeStreamStartAfterInvalidate: after a watched collection is
// dropped, startAfter its invalidate token opens a stream that sees the
// re-created collection's events; resumeAfter that token is refused with
// InvalidResumeToken (260).
func TestChangeStreamStartAfterInvalidate(t *testing.T) {
	_, coll := startCollection(t, "shop", "items")
	if _, err := coll.InsertOne(ctx, bson.M{"_id": 1}); err != nil {
		t.Fatal(err)
	}
	cs := csWatch(t, coll, nil)
	if err := coll.Drop(ctx); err != nil {
		t.Fatal(err)
	}
	evs := csEvents(t, cs, 2)
	if evs[0]["operationType"] != "drop" || evs[1]["operationType"] != "invalidate" {
		t.Fatalf("drop and invalidate: %v", evs)
	}
	invalidate := csToken(t, evs[1])
	if !bytes.Equal(cs.ResumeToken(), invalidate) {
		t.Fatalf("ResumeToken %v after the invalidate, want its _id %v", cs.ResumeToken(), invalidate)
	}
	if cs.Next(ctx) || cs.ID() != 0 {
		t.Fatalf("the stream goes on after its invalidate (cursor %d)", cs.ID())
	}
	if _, err := coll.InsertOne(ctx, bson.M{"_id": 2}); err != nil {
		t.Fatal(err)
	}

	_, err := coll.Watch(ctx, mongo.Pipeline{}, options.ChangeStream().SetResumeAfter(invalidate))
	wantCode(t, err, 260, "InvalidResumeToken")

	after := csWatch(t, coll, nil, options.ChangeStream().SetStartAfter(invalidate))
	ev := nextEvent(t, after)
	if op, id := csOp(ev); op != "insert" || id != int32(2) {
		t.Fatalf("startAfter the invalidate: first event %v, want the insert of _id 2", ev)
	}
	csNone(t, after)

	// startAfter the drop event itself reports the invalidate again.
	again := csWatch(t, coll, nil, options.ChangeStream().SetStartAfter(csToken(t, evs[0])))
	if ev := nextEvent(t, again); ev["operationType"] != "invalidate" {
		t.Fatalf("startAfter the drop: %v, want invalidate", ev)
	}
}

// TestChangeStreamStartAtOperationTime: startAtOperationTime at a write's
// or a transaction commit's operationTime (from its session) includes
// that write and what follows, not what came before.
func TestChangeStreamStartAtOperationTime(t *testing.T) {
	c := startServer(t).client()
	coll := c.Database("shop").Collection("items")
	if _, err := coll.InsertOne(ctx, bson.M{"_id": 1}); err != nil {
		t.Fatal(err)
	}
	sess, err := c.StartSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.EndSession(ctx)
	if _, err := coll.InsertOne(mongo.NewSessionContext(ctx, sess), bson.M{"_id": 2}); err != nil {
		t.Fatal(err)
	}
	at := sess.OperationTime()
	if at == nil {
		t.Fatal("no operationTime after a write")
	}
	if _, err := coll.UpdateOne(ctx, bson.M{"_id": 2}, bson.M{"$set": bson.M{"a": 1}}); err != nil {
		t.Fatal(err)
	}
	cs := csWatch(t, coll, nil, options.ChangeStream().SetStartAtOperationTime(at))
	evs := csEvents(t, cs, 2)
	wantOps(t, evs, [2]any{"insert", int32(2)}, [2]any{"update", int32(2)})
	if ct, _ := evs[0]["clusterTime"].(bson.Timestamp); ct != *at {
		t.Fatalf("the write's event has clusterTime %v, its operationTime was %v", evs[0]["clusterTime"], *at)
	}
	csNone(t, cs)

	// Likewise a transaction's commit.
	if _, err := sess.WithTransaction(ctx, func(sc context.Context) (any, error) {
		if _, err := coll.InsertOne(sc, bson.M{"_id": 3}); err != nil {
			return nil, err
		}
		return coll.DeleteOne(sc, bson.M{"_id": 1})
	}); err != nil {
		t.Fatal(err)
	}
	at = sess.OperationTime()
	if _, err := coll.InsertOne(ctx, bson.M{"_id": 4}); err != nil {
		t.Fatal(err)
	}
	cs = csWatch(t, coll, nil, options.ChangeStream().SetStartAtOperationTime(at))
	wantOps(t, csEvents(t, cs, 3), [2]any{"insert", int32(3)}, [2]any{"delete", int32(1)}, [2]any{"insert", int32(4)})
	csNone(t, cs)
}

// TestChangeStreamPostBatchResumeToken: every batch, empty or not, has a
// postBatchResumeToken; a non-empty batch's is its last event's _id; an
// empty batch's moves on past writes the stream does not report, and as
// time passes; resuming after one sees the writes after it.
func TestChangeStreamPostBatchResumeToken(t *testing.T) {
	db, coll := startCollection(t, "shop", "items")
	cs := csWatch(t, coll, nil)
	if cs.TryNext(ctx) {
		t.Fatal("an event on an idle collection")
	}
	first := cs.ResumeToken()
	if first == nil {
		t.Fatal("no resume token after an empty batch")
	}
	// Writes the stream does not report move it on.
	if _, err := db.Collection("other").InsertOne(ctx, bson.M{"_id": 1}); err != nil {
		t.Fatal(err)
	}
	if cs.TryNext(ctx) {
		t.Fatalf("an event of another collection: %v", cs.Current)
	}
	if bytes.Equal(first, cs.ResumeToken()) {
		t.Fatalf("the postBatchResumeToken did not move past another collection's write: %v", first)
	}
	// So does time, on an idle server.
	first = cs.ResumeToken()
	time.Sleep(1100 * time.Millisecond)
	if cs.TryNext(ctx) {
		t.Fatal("an event on an idle collection")
	}
	second := cs.ResumeToken()
	if bytes.Equal(first, second) {
		t.Fatalf("the postBatchResumeToken did not move in a second: %v", first)
	}
	if _, err := coll.InsertOne(ctx, bson.M{"_id": 1}); err != nil {
		t.Fatal(err)
	}
	// A stream resumed after the empty batch's token sees the insert.
	resumed := csWatch(t, coll, nil, options.ChangeStream().SetResumeAfter(second))
	if _, id := csOp(nextEvent(t, resumed)); id != int32(1) {
		t.Fatalf("resumed after a postBatchResumeToken: want the insert of _id 1")
	}

	// By hand: the aggregate and every getMore answer one.
	raw, batch := csOpenRaw(t, db, "items", bson.D{})
	if len(batch) != 0 {
		t.Fatalf("first batch %v", batch)
	}
	empty := raw.pbrt
	if evs := raw.getMore(200 * time.Millisecond); len(evs) != 0 {
		t.Fatalf("events %v", evs)
	}
	if _, err := coll.InsertMany(ctx, []any{bson.M{"_id": 2}, bson.M{"_id": 3}}); err != nil {
		t.Fatal(err)
	}
	evs := raw.next(2)
	if !bytes.Equal(raw.pbrt, csToken(t, evs[1])) {
		t.Fatalf("postBatchResumeToken %v of a batch ending with event %v", raw.pbrt, evs[1]["_id"])
	}
	if bytes.Equal(raw.pbrt, empty) {
		t.Fatal("the postBatchResumeToken did not move past the batch's events")
	}
	// Resuming after the batch sees nothing more; after the empty batch,
	// both inserts.
	after := csWatch(t, coll, nil, options.ChangeStream().SetResumeAfter(raw.pbrt))
	csNone(t, after)
	before := csWatch(t, coll, nil, options.ChangeStream().SetResumeAfter(empty))
	wantOps(t, csEvents(t, before, 2), [2]any{"insert", int32(2)}, [2]any{"insert", int32(3)})
}

// TestChangeStreamHistoryLost: with changeStreamRetentionMB 1, once the
// log has rotated past its first 16 MiB segment, resuming from a token in
// it, starting at an operation time before it, and a getMore of a stream
// left behind in it all fail with ChangeStreamHistoryLost (286), labelled
// NonResumableChangeStreamError.
func TestChangeStreamHistoryLost(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 20 MiB")
	}
	c := startServer(t).client()
	mustRun(t, c.Database("admin"), bson.D{{Key: "setParameter", Value: 1}, {Key: "changeStreamRetentionMB", Value: 1}})
	coll := c.Database("shop").Collection("items")
	early := csWatch(t, coll, nil)
	sess, err := c.StartSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.EndSession(ctx)
	if _, err := coll.InsertOne(mongo.NewSessionContext(ctx, sess), bson.M{"_id": 0}); err != nil {
		t.Fatal(err)
	}
	at := sess.OperationTime()
	token := csToken(t, nextEvent(t, early))
	behind := csWatch(t, coll, nil) // opened, never read until the log moved on

	big := strings.Repeat("x", 4<<20)
	for i := 1; i <= 5; i++ {
		if _, err := coll.InsertOne(ctx, bson.M{"_id": i, "s": big}); err != nil {
			t.Fatal(err)
		}
	}
	st := mustRun(t, c.Database("admin"), bson.D{{Key: "serverStatus", Value: 1}})
	if first, _ := get(st, "changeStreams", "firstSequence").(int64); first <= 1 {
		t.Fatalf("the log kept its first segment: %v", get(st, "changeStreams"))
	}

	_, err = coll.Watch(ctx, mongo.Pipeline{}, options.ChangeStream().SetResumeAfter(token))
	wantCode(t, err, 286, "ChangeStreamHistoryLost")
	var ce mongo.CommandError
	if errors.As(err, &ce); !ce.HasErrorLabel("NonResumableChangeStreamError") {
		t.Errorf("resumeAfter a lost token: labels %v, want NonResumableChangeStreamError", ce.Labels)
	}
	_, err = coll.Watch(ctx, mongo.Pipeline{}, options.ChangeStream().SetStartAtOperationTime(at))
	wantCode(t, err, 286, "ChangeStreamHistoryLost")

	wantStreamErr(t, csErr(t, behind), 286, "NonResumableChangeStreamError", true)
}
