package server_test

import (
	"errors"
	"testing"

	"github.com/dumbodb/dumbodb/server"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestClientBulkWrite: the driver's client.BulkWrite (MongoDB 8's bulkWrite
// command) writes across databases and collections, with per-op verbose
// results, an upsert, ordered and unordered failures at their index.
func TestClientBulkWrite(t *testing.T) {
	c := startServer(t).client()
	a, b := c.Database("shop").Collection("items"), c.Database("crm").Collection("people")
	if _, err := a.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "qty", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	writes := []mongo.ClientBulkWrite{
		{Database: "shop", Collection: "items", Model: mongo.NewClientInsertOneModel().SetDocument(bson.D{{Key: "_id", Value: 2}})},
		{Database: "crm", Collection: "people", Model: mongo.NewClientInsertOneModel().SetDocument(bson.D{{Key: "_id", Value: "ada"}})},
		{Database: "shop", Collection: "items", Model: mongo.NewClientUpdateOneModel().SetFilter(bson.D{{Key: "_id", Value: 1}}).
			SetUpdate(bson.D{{Key: "$inc", Value: bson.D{{Key: "qty", Value: 1}}}})},
		{Database: "crm", Collection: "people", Model: mongo.NewClientUpdateOneModel().SetFilter(bson.D{{Key: "_id", Value: "bob"}}).
			SetUpdate(bson.D{{Key: "$set", Value: bson.D{{Key: "x", Value: 1}}}}).SetUpsert(true)},
		{Database: "shop", Collection: "items", Model: mongo.NewClientDeleteManyModel().SetFilter(bson.D{{Key: "_id", Value: 2}})},
	}
	res, err := c.BulkWrite(ctx, writes, options.ClientBulkWrite().SetVerboseResults(true))
	if err != nil {
		t.Fatal(err)
	}
	if res.InsertedCount != 2 || res.MatchedCount != 1 || res.ModifiedCount != 1 || res.UpsertedCount != 1 || res.DeletedCount != 1 {
		t.Fatalf("counts: %+v", res)
	}
	if res.UpdateResults[3].UpsertedID != "bob" || res.DeleteResults[4].DeletedCount != 1 {
		t.Fatalf("verbose results: %+v %+v", res.UpdateResults, res.DeleteResults)
	}
	var doc bson.M
	if err := a.FindOne(ctx, bson.D{{Key: "_id", Value: 1}}).Decode(&doc); err != nil || doc["qty"] != int32(2) {
		t.Fatalf("shop.items 1: %v %v", doc, err)
	}
	if n, _ := b.CountDocuments(ctx, bson.D{}); n != 2 {
		t.Fatalf("crm.people holds %d documents, want 2", n)
	}

	dup := []mongo.ClientBulkWrite{
		{Database: "shop", Collection: "items", Model: mongo.NewClientInsertOneModel().SetDocument(bson.D{{Key: "_id", Value: 1}})},
		{Database: "shop", Collection: "items", Model: mongo.NewClientInsertOneModel().SetDocument(bson.D{{Key: "_id", Value: 10}})},
	}
	_, err = c.BulkWrite(ctx, dup)
	var bwe mongo.ClientBulkWriteException
	if !errors.As(err, &bwe) || len(bwe.WriteErrors) != 1 || bwe.WriteErrors[0].Code != 11000 {
		t.Fatalf("ordered duplicate: %v", err)
	}
	if n, _ := a.CountDocuments(ctx, bson.D{{Key: "_id", Value: 10}}); n != 0 {
		t.Fatal("an ordered bulk write went on after its failure")
	}
	_, err = c.BulkWrite(ctx, dup, options.ClientBulkWrite().SetOrdered(false))
	if !errors.As(err, &bwe) || len(bwe.WriteErrors) != 1 {
		t.Fatalf("unordered duplicate: %v", err)
	}
	if n, _ := a.CountDocuments(ctx, bson.D{{Key: "_id", Value: 10}}); n != 1 {
		t.Fatal("an unordered bulk write stopped at its failure")
	}
	_, err = run(t, c.Database("shop"), bson.D{{Key: "bulkWrite", Value: 1}, {Key: "ops", Value: bson.A{}}, {Key: "nsInfo", Value: bson.A{}}})
	wantCode(t, err, 13, "Unauthorized")
}

// TestClientBulkWriteRetried: a bulk write whose connection drops after
// it wrote (onPrimaryTransactionalWrite) is retried by the driver, and the
// retry answers from the recorded outcomes: each op runs once.
func TestClientBulkWriteRetried(t *testing.T) {
	c := startServer(t, func(c *server.Config) { c.TestCommands = true }).client()
	mustRun(t, c.Database("admin"), bson.D{{Key: "configureFailPoint", Value: "onPrimaryTransactionalWrite"},
		{Key: "mode", Value: bson.D{{Key: "times", Value: 1}}}, {Key: "data", Value: bson.D{{Key: "closeConnection", Value: true}}}})
	writes := []mongo.ClientBulkWrite{
		{Database: "shop", Collection: "items", Model: mongo.NewClientInsertOneModel().SetDocument(bson.D{{Key: "_id", Value: 1}})},
		{Database: "shop", Collection: "counts", Model: mongo.NewClientUpdateOneModel().SetFilter(bson.D{{Key: "_id", Value: "n"}}).
			SetUpdate(bson.D{{Key: "$inc", Value: bson.D{{Key: "v", Value: 1}}}}).SetUpsert(true)},
	}
	res, err := c.BulkWrite(ctx, writes)
	if err != nil {
		t.Fatal(err)
	}
	if res.InsertedCount != 1 || res.UpsertedCount != 1 {
		t.Fatalf("counts after the retry: %+v", res)
	}
	var doc bson.M
	if err := c.Database("shop").Collection("counts").FindOne(ctx, bson.D{{Key: "_id", Value: "n"}}).Decode(&doc); err != nil || doc["v"] != int32(1) {
		t.Fatalf("the upsert ran %v times, want once: %v", doc["v"], err)
	}
}

// TestClientBulkWriteInTransaction: bulkWrite runs in a transaction, as on
// mongod 8: its writes over two databases are seen by no one until the
// commit, and an abort leaves nothing.
func TestClientBulkWriteInTransaction(t *testing.T) {
	c := startServer(t).client()
	writes := func(id int) []mongo.ClientBulkWrite {
		return []mongo.ClientBulkWrite{
			{Database: "shop", Collection: "items", Model: mongo.NewClientInsertOneModel().SetDocument(bson.D{{Key: "_id", Value: id}})},
			{Database: "crm", Collection: "people", Model: mongo.NewClientInsertOneModel().SetDocument(bson.D{{Key: "_id", Value: id}})},
		}
	}
	for _, commit := range []bool{true, false} {
		sess, err := c.StartSession()
		if err != nil {
			t.Fatal(err)
		}
		id := map[bool]int{true: 1, false: 2}[commit]
		if err := sess.StartTransaction(); err != nil {
			t.Fatal(err)
		}
		sctx := mongo.NewSessionContext(ctx, sess)
		if _, err := c.BulkWrite(sctx, writes(id)); err != nil {
			t.Fatalf("bulkWrite in a transaction: %v", err)
		}
		if n, _ := c.Database("crm").Collection("people").CountDocuments(ctx, bson.D{{Key: "_id", Value: id}}); n != 0 {
			t.Fatal("a write of an open transaction is visible outside it")
		}
		if commit {
			err = sess.CommitTransaction(ctx)
		} else {
			err = sess.AbortTransaction(ctx)
		}
		sess.EndSession(ctx)
		if err != nil {
			t.Fatal(err)
		}
		want := map[bool]int64{true: 1, false: 0}[commit]
		for _, db := range []string{"shop", "crm"} {
			coll := map[string]string{"shop": "items", "crm": "people"}[db]
			if n, _ := c.Database(db).Collection(coll).CountDocuments(ctx, bson.D{{Key: "_id", Value: id}}); n != want {
				t.Fatalf("commit %v: %s has %d of the transaction's documents, want %d", commit, db, n, want)
			}
		}
	}
}
