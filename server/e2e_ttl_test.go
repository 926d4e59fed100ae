package server_test

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/dumbodb/dumbodb/internal/testload"
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

// TestTTLMonitorSleepSecs: setParameter ttlMonitorSleepSecs changes how
// long the TTL monitor sleeps between passes at once, without a restart
// (from the default 60 s, an expired document would wait a minute), and
// getParameter reads it back; the values mongod's definition refuses are
// refused in its words. ttlMonitorEnabled false stops the passes, true
// resumes them. --setParameter takes ttlMonitorSleepSecs too.
func TestTTLMonitorSleepSecs(t *testing.T) {
	ts := startServer(t)
	c := ts.client()
	admin := c.Database("admin")
	param := func(name string) any {
		return mustRun(t, admin, bson.D{{Key: "getParameter", Value: 1}, {Key: name, Value: 1}})[name]
	}
	set := func(name string, v any) (bson.M, error) {
		return run(t, admin, bson.D{{Key: "setParameter", Value: 1}, {Key: name, Value: v}})
	}
	if param("ttlMonitorSleepSecs") != int32(60) || param("ttlMonitorEnabled") != true {
		t.Fatalf("defaults: %v %v", param("ttlMonitorSleepSecs"), param("ttlMonitorEnabled"))
	}
	coll := c.Database("ttl").Collection("sessions")
	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "at", Value: 1}},
		Options: options.Index().SetExpireAfterSeconds(0)}); err != nil {
		t.Fatal(err)
	}
	past := time.Now().Add(-time.Hour)
	if _, err := coll.InsertOne(ctx, bson.M{"_id": 1, "at": past}); err != nil {
		t.Fatal(err)
	}
	if reply, err := set("ttlMonitorSleepSecs", 1); err != nil || reply["was"] != int32(60) {
		t.Fatalf("setParameter: %v %v", reply, err)
	}
	if param("ttlMonitorSleepSecs") != int32(1) {
		t.Fatalf("getParameter after setting 1: %v", param("ttlMonitorSleepSecs"))
	}
	waitExpired(t, coll, 1)

	for v, msg := range map[any]string{
		0:              "Invalid value for parameter ttlMonitorSleepSecs: 0 is not greater than 0",
		-3:             "Invalid value for parameter ttlMonitorSleepSecs: -3 is not greater than 0",
		0.5:            "Invalid value for parameter ttlMonitorSleepSecs: 0 is not greater than 0",
		"ten":          "Failed validating ttlMonitorSleepSecs: Unable to coerce value to integral type",
		int64(1 << 40): "Failed validating ttlMonitorSleepSecs: Out of bounds coercing to integral value",
		math.Inf(1):    "Failed validating ttlMonitorSleepSecs: Unable to coerce NaN/Inf to integral type",
	} {
		_, err := set("ttlMonitorSleepSecs", v)
		wantCode(t, err, 2, "BadValue")
		if !strings.Contains(err.Error(), msg) {
			t.Errorf("%v: %v, want %q", v, err, msg)
		}
	}
	if _, err := set("ttlMonitorSleepSecs", 2.9); err != nil || param("ttlMonitorSleepSecs") != int32(2) {
		t.Fatalf("2.9 is taken as 2, as mongod coerces it: %v %v", param("ttlMonitorSleepSecs"), err)
	}

	if reply, err := set("ttlMonitorEnabled", false); err != nil || reply["was"] != true || param("ttlMonitorEnabled") != false {
		t.Fatalf("disabling: %v %v", reply, err)
	}
	if _, err := coll.InsertOne(ctx, bson.M{"_id": 2, "at": past}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Second) // passes that would have deleted it are skipped
	if n, _ := coll.CountDocuments(ctx, bson.M{"_id": 2}); n != 1 {
		t.Fatal("a document expired while the TTL monitor was disabled")
	}
	if _, err := set("ttlMonitorEnabled", 1); err != nil {
		t.Fatal(err)
	}
	waitExpired(t, coll, 2)

	if err := ts.srv.SetStartupParameter("ttlMonitorSleepSecs", 0); err == nil {
		t.Error("--setParameter ttlMonitorSleepSecs=0 was taken")
	}
	if err := ts.srv.SetStartupParameter("ttlMonitorSleepSecs", 7); err != nil || param("ttlMonitorSleepSecs") != int32(7) {
		t.Errorf("--setParameter ttlMonitorSleepSecs=7: %v %v", err, param("ttlMonitorSleepSecs"))
	}
}

// waitExpired waits, as long as the machine's load calls for, for the
// TTL monitor to delete the document with _id id.
func waitExpired(t *testing.T, coll *mongo.Collection, id int) {
	t.Helper()
	deadline := time.Now().Add(testload.Timeout(60 * time.Second))
	for {
		n, err := coll.CountDocuments(ctx, bson.M{"_id": id})
		if err == nil && n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("document %d did not expire", id)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
