package server_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/dumbodb/dumbodb/internal/testload"
	"github.com/dumbodb/dumbodb/server"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readpref"
)

// eventually retries cond until it holds, for the polls of a replica.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testload.Timeout(20 * time.Second))
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within the time allowed", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestReadReplicaFollowsPushes: a replica of a root the primary pushes
// to clones the database, serves its commits (through a driver that
// prefers secondaries), takes each new pushed commit, refuses writes with
// NotWritablePrimary, says secondary in hello and reports its polls.
func TestReadReplicaFollowsPushes(t *testing.T) {
	root := filepath.Join(t.TempDir(), "replicas")
	primary := startServer(t).client()
	shop := primary.Database("shop")
	if _, err := shop.Collection("items").InsertOne(ctx, bson.M{"_id": 1, "v": 1}); err != nil {
		t.Fatal(err)
	}
	vc(t, primary, "shop", bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "one"}})
	vc(t, primary, "shop", bson.D{{Key: "dumboRemote", Value: "add"}, {Key: "name", Value: "replicas"},
		{Key: "url", Value: "file://" + filepath.Join(root, "shop")}})
	vc(t, primary, "shop", bson.D{{Key: "dumboPush", Value: 1}, {Key: "remote", Value: "replicas"}, {Key: "setUpstream", Value: true}})

	rs := startServer(t, func(c *server.Config) { c.ReplicaOf, c.ReplicaPoll = "file://"+root, 50*time.Millisecond })
	replica, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + rs.addr + "/?directConnection=true").
		SetReadPreference(readpref.SecondaryPreferred()).
		// A NotWritablePrimary answer makes the driver check the server
		// again before its next operation; by default that waits up to
		// the 10 s heartbeat.
		SetHeartbeatInterval(500 * time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { replica.Disconnect(ctx) })
	eventually(t, "the replica clones shop", func() bool { return findV(t, replica, "shop", 1) == int32(1) })

	hello := mustRun(t, replica.Database("admin"), bson.D{{Key: "hello", Value: 1}})
	if hello["isWritablePrimary"] != false || hello["secondary"] != true || hello["primary"] != nil {
		t.Errorf("hello %v", hello)
	}
	if st := mustRun(t, replica.Database("admin"), bson.D{{Key: "replSetGetStatus", Value: 1}}); st["myState"] != int32(2) {
		t.Errorf("replSetGetStatus myState %v, want 2 (SECONDARY)", st["myState"])
	}
	_, err = replica.Database("shop").Collection("items").InsertOne(ctx, bson.M{"_id": 2})
	wantCode(t, err, 10107, "NotWritablePrimary")
	_, err = run(t, replica.Database("shop"), bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "no"}})
	wantCode(t, err, 10107, "NotWritablePrimary")
	_, err = run(t, replica.Database("shop"), bson.D{{Key: "aggregate", Value: "items"},
		{Key: "pipeline", Value: bson.A{bson.M{"$out": "copy"}}}, {Key: "cursor", Value: bson.M{}}})
	wantCode(t, err, 10107, "NotWritablePrimary")

	for i := 2; i <= 4; i++ {
		if _, err := shop.Collection("items").InsertOne(ctx, bson.M{"_id": i, "v": i}); err != nil {
			t.Fatal(err)
		}
		vc(t, primary, "shop", bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "more"}})
		vc(t, primary, "shop", bson.D{{Key: "dumboPush", Value: 1}})
		want := int64(i)
		eventually(t, "the replica takes the new commit", func() bool {
			n, err := replica.Database("shop").Collection("items").CountDocuments(ctx, bson.M{})
			return err == nil && n == want
		})
	}
	status := mustRun(t, replica.Database("admin"), bson.D{{Key: "serverStatus", Value: 1}})
	if get(status, "replica", "databases", "shop", "lastSync") == nil || get(status, "replica", "polls").(int64) < 2 {
		t.Errorf("serverStatus.replica %v", status["replica"])
	}
}
