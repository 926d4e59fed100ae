package server_test

import (
	"testing"
	"time"

	"github.com/dumbodb/dumbodb/server"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

func TestTTLIndexDeletesExpiredDocuments(t *testing.T) {
	c := startServer(t, func(c *server.Config) { c.TTLInterval = 100 * time.Millisecond }).client()
	coll := c.Database("ttl").Collection("sessions")
	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "at", Value: 1}},
		Options: options.Index().SetExpireAfterSeconds(60)}); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	coll.InsertMany(ctx, []any{
		bson.M{"_id": "old", "at": now.Add(-time.Hour)},
		bson.M{"_id": "fresh", "at": now},
		bson.M{"_id": "no date", "at": "yesterday"},
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		n, _ := coll.CountDocuments(ctx, bson.M{"_id": "old"})
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the expired document was not deleted")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if n, _ := coll.CountDocuments(ctx, bson.M{}); n != 2 {
		t.Fatalf("%d documents left, want the fresh one and the one without a date", n)
	}
}
