package server_test

import (
	"errors"
	"testing"
	"time"

	"github.com/dumbodb/dumbodb/wire"

	"github.com/dumbodb/dumbodb/server"

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

// TestFailCommandSpellings: a fail point names a command, whatever
// spelling a client uses for it (findandmodify, dbstats), and the
// lower-case spellings mongod accepts run the command.
func TestFailCommandSpellings(t *testing.T) {
	ts := startServer(t, func(c *server.Config) { c.TestCommands = true })
	c := ts.client(options.Client().SetRetryWrites(false))
	db := c.Database("x")
	mustRun(t, db, bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.M{"_id": 1}}}})
	for _, tc := range []struct {
		configured string
		sent       bson.D
	}{
		{"findAndModify", bson.D{{Key: "findandmodify", Value: "c"}, {Key: "query", Value: bson.M{"_id": 1}}, {Key: "update", Value: bson.M{"$set": bson.M{"a": 1}}}}},
		{"dbStats", bson.D{{Key: "dbstats", Value: 1}}},
		{"dataSize", bson.D{{Key: "datasize", Value: "x.c"}}},
	} {
		mustRun(t, c.Database("admin"), bson.D{{Key: "configureFailPoint", Value: "failCommand"},
			{Key: "mode", Value: bson.M{"times": 1}},
			{Key: "data", Value: bson.M{"failCommands": bson.A{tc.configured}, "errorCode": 8}}})
		_, err := run(t, db, tc.sent)
		wantCode(t, err, 8, "UnknownError")
		if _, err := run(t, db, tc.sent); err != nil {
			t.Fatalf("%s after the fail point: %v", tc.sent[0].Key, err)
		}
	}
}

// TestFailCommandOnHandshake: a fail point for an application's hello
// fails the handshake of a connection of that application, whose hello
// carries the name before the connection knows it; the hello of another
// application's connection succeeds.
func TestFailCommandOnHandshake(t *testing.T) {
	ts := startServer(t, func(c *server.Config) { c.TestCommands = true })
	admin := ts.client().Database("admin")
	mustRun(t, admin, bson.D{{Key: "configureFailPoint", Value: "failCommand"},
		{Key: "mode", Value: "alwaysOn"},
		{Key: "data", Value: bson.M{"failCommands": bson.A{"hello", "isMaster"}, "appName": "failing", "closeConnection": true}}})
	hello := func(app string) *wire.Msg {
		return &wire.Msg{Body: commandFor("admin", bson.D{{Key: "hello", Value: 1},
			{Key: "client", Value: bson.M{"application": bson.M{"name": app}, "driver": bson.M{"name": "test", "version": "1"}}}})}
	}
	other := dialRaw(ts)
	if reply := other.roundTrip(t, hello("other")); !replyOK(reply) {
		t.Fatalf("another application's handshake: %v", bson.Raw(reply))
	}
	failing := dialRaw(ts)
	if err := wire.Write(failing.nc, 1, 0, hello("failing"), wire.CompressorNoop); err != nil {
		t.Fatal(err)
	}
	failing.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, reply, _, err := wire.Read(failing.r); err == nil {
		t.Fatalf("the failing application's handshake was answered: %v", reply)
	}
	mustRun(t, admin, bson.D{{Key: "configureFailPoint", Value: "failCommand"}, {Key: "mode", Value: "off"}})
}
