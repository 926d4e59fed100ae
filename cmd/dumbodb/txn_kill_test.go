package main

import (
	"context"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"dumbodb/internal/dumboproc"
)

// TestCommittedTransactionSurvivesKill9: a transaction acknowledged by
// commitTransaction is all there after SIGKILL and a restart.
func TestCommittedTransactionSurvivesKill9(t *testing.T) {
	dir := t.TempDir()
	p := dumboproc.StartT(t, dir)
	ctx := context.Background()
	client, err := mongo.Connect(options.Client().ApplyURI(p.URL()).SetTimeout(10 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	db := client.Database("bank")
	db.Collection("accounts").InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "bal", Value: 10}})
	sess, _ := client.StartSession()
	sess.StartTransaction()
	sc := mongo.NewSessionContext(ctx, sess)
	if _, err := db.Collection("accounts").UpdateOne(sc, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "bal", Value: -5}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Collection("transfers").InsertOne(sc, bson.D{{Key: "_id", Value: "x"}}); err != nil {
		t.Fatal(err)
	}
	if err := sess.CommitTransaction(ctx); err != nil {
		t.Fatal(err)
	}
	p.Kill()
	dctx, cancel := context.WithTimeout(ctx, time.Second)
	client.Disconnect(dctx)
	cancel()
	p = dumboproc.StartT(t, dir)
	client, _ = mongo.Connect(options.Client().ApplyURI(p.URL()))
	defer client.Disconnect(ctx)
	db = client.Database("bank")
	var acct bson.M
	db.Collection("accounts").FindOne(ctx, bson.D{{Key: "_id", Value: 1}}).Decode(&acct)
	n, _ := db.Collection("transfers").CountDocuments(ctx, bson.D{})
	if acct["bal"] != int32(5) || n != 1 {
		t.Fatalf("after kill -9: account %v, %d transfers\n%s", acct, n, p.Output())
	}
}
