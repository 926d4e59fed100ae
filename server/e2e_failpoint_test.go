package server_test

import (
	"context"
	"errors"
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

func TestFailCommandFailPoint(t *testing.T) {
	ts := startServer(t)
	c := ts.client()
	// Off by default, as on mongod without enableTestCommands.
	_, err := run(t, c.Database("admin"), bson.D{{Key: "configureFailPoint", Value: "failCommand"}, {Key: "mode", Value: "alwaysOn"}})
	wantCode(t, err, 59, "CommandNotFound")

	eng, _ := storage.Open(t.TempDir(), storage.Options{}, zerolog.New(io.Discard))
	srv := server.New(server.Config{BindIPs: []string{"127.0.0.1"}, TestCommands: true}, eng, zerolog.New(io.Discard), server.NewLogRing(4))
	if err := srv.Listen(); err != nil {
		t.Fatal(err)
	}
	srv.Serve()
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		eng.Close()
	}()
	tc, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + srv.Addrs()[0].String()).SetRetryWrites(false))
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Disconnect(ctx)
	mustRun(t, tc.Database("admin"), bson.D{{Key: "configureFailPoint", Value: "failCommand"},
		{Key: "mode", Value: bson.M{"times": 1}},
		{Key: "data", Value: bson.M{"failCommands": bson.A{"insert"}, "errorCode": 8, "errorLabels": bson.A{"Test"}}}})
	coll := tc.Database("x").Collection("c")
	_, err = coll.InsertOne(ctx, bson.M{"_id": 1})
	var ce mongo.CommandError
	if !errors.As(err, &ce) || ce.Code != 8 || !ce.HasErrorLabel("Test") {
		t.Fatalf("first insert: %v", err)
	}
	if _, err := coll.InsertOne(ctx, bson.M{"_id": 1}); err != nil {
		t.Fatalf("the fail point fired twice: %v", err)
	}
}
