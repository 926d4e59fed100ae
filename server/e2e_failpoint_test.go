package server_test

import (
	"errors"
	"testing"

	"dumbodb/server"

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

	tc := startServer(t, func(c *server.Config) { c.TestCommands = true }).client(options.Client().SetRetryWrites(false))
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
