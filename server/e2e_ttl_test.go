package server_test

import (
	"context"
	"io"
	"testing"
	"time"

	"dumbodb/server"
	"dumbodb/storage"

	"github.com/rs/zerolog"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

func TestTTLIndexDeletesExpiredDocuments(t *testing.T) {
	eng, err := storage.Open(t.TempDir(), storage.Options{}, zerolog.New(io.Discard))
	if err != nil {
		t.Fatal(err)
	}
	srv := server.New(server.Config{BindIPs: []string{"127.0.0.1"}, TTLInterval: 100 * time.Millisecond},
		eng, zerolog.New(io.Discard), server.NewLogRing(4))
	if err := srv.Listen(); err != nil {
		t.Fatal(err)
	}
	srv.Serve()
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
		eng.Close()
	}()
	c, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + srv.Addrs()[0].String()))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Disconnect(ctx)
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
