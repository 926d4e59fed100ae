package server_test

import (
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestChangeStreamErrors: the mistakes a client can make opening a
// change stream get mongod's codes.
func TestChangeStreamErrors(t *testing.T) {
	c := startServer(t).client()
	db := c.Database("shop")
	coll := db.Collection("items")
	if _, err := coll.InsertOne(ctx, bson.M{"_id": 1}); err != nil {
		t.Fatal(err)
	}
	stage := func(spec bson.D) bson.A { return bson.A{bson.D{{Key: "$changeStream", Value: spec}}} }

	t.Run("group", func(t *testing.T) {
		_, err := coll.Watch(ctx, mongo.Pipeline{{{Key: "$group", Value: bson.M{"_id": "$operationType"}}}})
		wantCode(t, err, 20, "IllegalOperation")
		if !strings.Contains(err.Error(), "$group is not permitted in a $changeStream pipeline") {
			t.Fatalf("message: %v", err)
		}
	})
	t.Run("not first", func(t *testing.T) {
		_, err := csAggregate(db, "items", append(bson.A{bson.D{{Key: "$match", Value: bson.D{}}}}, stage(bson.D{})...))
		wantCode(t, err, 40602, "")
	})
	t.Run("twice", func(t *testing.T) {
		_, err := coll.Watch(ctx, mongo.Pipeline{{{Key: "$changeStream", Value: bson.D{}}}})
		wantCode(t, err, 40602, "")
	})
	t.Run("unknown option", func(t *testing.T) {
		_, err := csAggregate(db, "items", stage(bson.D{{Key: "fullDocumnet", Value: "updateLookup"}}))
		wantCode(t, err, 40415, "")
	})
	t.Run("bad fullDocument", func(t *testing.T) {
		_, err := coll.Watch(ctx, mongo.Pipeline{}, options.ChangeStream().SetFullDocument("sometimes"))
		wantCode(t, err, 2, "BadValue")
		_, err = coll.Watch(ctx, mongo.Pipeline{}, options.ChangeStream().SetFullDocumentBeforeChange(options.UpdateLookup))
		wantCode(t, err, 2, "BadValue")
	})
	t.Run("resumeAfter and startAfter", func(t *testing.T) {
		cs := csWatch(t, coll, nil)
		if cs.TryNext(ctx) {
			t.Fatal("an event")
		}
		token := cs.ResumeToken()
		_, err := coll.Watch(ctx, mongo.Pipeline{}, options.ChangeStream().SetResumeAfter(token).SetStartAfter(token))
		wantCode(t, err, 50865, "")
	})
	t.Run("allChangesForCluster off admin", func(t *testing.T) {
		_, err := csAggregate(db, "", stage(bson.D{{Key: "allChangesForCluster", Value: true}}))
		wantCode(t, err, 72, "InvalidOptions")
		_, err = csAggregate(c.Database("admin"), "items", stage(bson.D{{Key: "allChangesForCluster", Value: true}}))
		wantCode(t, err, 72, "InvalidOptions")
	})
	t.Run("admin without allChangesForCluster", func(t *testing.T) {
		_, err := c.Database("admin").Watch(ctx, mongo.Pipeline{})
		wantCode(t, err, 73, "InvalidNamespace")
		_, err = c.Database("config").Collection("x").Watch(ctx, mongo.Pipeline{})
		wantCode(t, err, 73, "InvalidNamespace")
	})
	t.Run("in a transaction", func(t *testing.T) {
		sess, err := c.StartSession()
		if err != nil {
			t.Fatal(err)
		}
		defer sess.EndSession(ctx)
		if err := sess.StartTransaction(); err != nil {
			t.Fatal(err)
		}
		// The stream as the transaction's first statement (a later one
		// would fail first for the readConcern the driver sends).
		sc := mongo.NewSessionContext(ctx, sess)
		_, err = coll.Watch(sc, mongo.Pipeline{})
		wantCode(t, err, 263, "OperationNotSupportedInTransaction")
		sess.AbortTransaction(ctx)
	})
	t.Run("project out _id", func(t *testing.T) {
		cs := csWatch(t, coll, mongo.Pipeline{{{Key: "$project", Value: bson.M{"_id": 0}}}})
		if _, err := coll.InsertOne(ctx, bson.M{"_id": 2}); err != nil {
			t.Fatal(err)
		}
		ce := csErr(t, cs)
		wantStreamErr(t, ce, 280, "NonResumableChangeStreamError", true)
		if ce.Name != "ChangeStreamFatalError" || ce.HasErrorLabel("ResumableChangeStreamError") {
			t.Fatalf("error %v", ce)
		}
	})
	t.Run("replace the _id", func(t *testing.T) {
		cs := csWatch(t, coll, mongo.Pipeline{{{Key: "$set", Value: bson.M{"_id": "mine"}}}})
		if _, err := coll.InsertOne(ctx, bson.M{"_id": 3}); err != nil {
			t.Fatal(err)
		}
		wantStreamErr(t, csErr(t, cs), 280, "NonResumableChangeStreamError", true)
	})
}

// TestChangeStreamAllowedStages: the stages a change stream may have
// after $changeStream filter and reshape events, keeping _id.
func TestChangeStreamAllowedStages(t *testing.T) {
	_, coll := startCollection(t, "shop", "items")
	cs := csWatch(t, coll, mongo.Pipeline{
		{{Key: "$match", Value: bson.M{"operationType": "insert", "fullDocument.keep": true}}},
		{{Key: "$project", Value: bson.M{"fullDocument": 1, "operationType": 1}}},
		{{Key: "$addFields", Value: bson.M{"seen": true}}},
	})
	if _, err := coll.InsertMany(ctx, []any{bson.M{"_id": 1}, bson.M{"_id": 2, "keep": true}}); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.DeleteOne(ctx, bson.M{"_id": 2}); err != nil {
		t.Fatal(err)
	}
	ev := nextEvent(t, cs)
	if get(ev, "fullDocument", "_id") != int32(2) || ev["seen"] != true || ev["ns"] != nil || ev["_id"] == nil {
		t.Fatalf("filtered event: %v", ev)
	}
	csNone(t, cs)
}
