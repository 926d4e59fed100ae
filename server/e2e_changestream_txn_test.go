package server_test

import (
	"bytes"
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// TestChangeStreamTransaction: a committed transaction's statements
// appear after the commit only, one event each in statement order, all
// with the session's lsid and the txnNumber; an aborted transaction's
// appear never; a retryable write outside a transaction has neither lsid
// nor txnNumber, though the driver sends both.
func TestChangeStreamTransaction(t *testing.T) {
	c := startServer(t).client()
	coll := c.Database("shop").Collection("items")
	if _, err := coll.InsertOne(ctx, bson.M{"_id": 0}); err != nil {
		t.Fatal(err)
	}
	cs := csWatch(t, coll, nil)
	sess, err := c.StartSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.EndSession(ctx)
	sc := mongo.NewSessionContext(ctx, sess)

	if err := sess.StartTransaction(); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.InsertOne(sc, bson.M{"_id": 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.UpdateOne(sc, bson.M{"_id": 0}, bson.M{"$set": bson.M{"a": 1}}); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.DeleteOne(sc, bson.M{"_id": 1}); err != nil {
		t.Fatal(err)
	}
	csNone(t, cs) // nothing before the commit
	if err := sess.CommitTransaction(ctx); err != nil {
		t.Fatal(err)
	}
	evs := csEvents(t, cs, 3)
	wantOps(t, evs, [2]any{"insert", int32(1)}, [2]any{"update", int32(0)}, [2]any{"delete", int32(1)})
	_, lsid := sess.ID().Lookup("id").Binary()
	var txn any
	for i, ev := range evs {
		id, ok := get(ev, "lsid", "id").(bson.Binary)
		if !ok || !bytes.Equal(id.Data, lsid) {
			t.Fatalf("event %d: lsid %v, want the session's %v", i, ev["lsid"], lsid)
		}
		if _, ok := get(ev, "lsid", "uid").(bson.Binary); !ok {
			t.Fatalf("event %d: lsid without uid: %v", i, ev["lsid"])
		}
		n, ok := ev["txnNumber"].(int64)
		if !ok || (txn != nil && n != txn) {
			t.Fatalf("event %d: txnNumber %v (first %v)", i, ev["txnNumber"], txn)
		}
		txn = n
	}

	// An aborted transaction: nothing, then the next write's event.
	if err := sess.StartTransaction(); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.InsertOne(sc, bson.M{"_id": 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.UpdateOne(sc, bson.M{"_id": 0}, bson.M{"$set": bson.M{"a": 2}}); err != nil {
		t.Fatal(err)
	}
	if err := sess.AbortTransaction(ctx); err != nil {
		t.Fatal(err)
	}
	csNone(t, cs)

	// A retryable write, in the same session.
	if _, err := coll.InsertOne(sc, bson.M{"_id": 3}); err != nil {
		t.Fatal(err)
	}
	ev := nextEvent(t, cs)
	if op, id := csOp(ev); op != "insert" || id != int32(3) {
		t.Fatalf("after the aborted transaction: %v, want the insert of _id 3", ev)
	}
	if _, has := ev["lsid"]; has {
		t.Fatalf("a retryable write's event has an lsid: %v", ev)
	}
	if _, has := ev["txnNumber"]; has {
		t.Fatalf("a retryable write's event has a txnNumber: %v", ev)
	}

	// A second transaction gets its own, greater txnNumber.
	if _, err := sess.WithTransaction(ctx, func(sc context.Context) (any, error) {
		return coll.InsertOne(sc, bson.M{"_id": 4})
	}); err != nil {
		t.Fatal(err)
	}
	ev = nextEvent(t, cs)
	if n, _ := ev["txnNumber"].(int64); n <= txn.(int64) {
		t.Fatalf("second transaction's txnNumber %v, first %v", ev["txnNumber"], txn)
	}
}
