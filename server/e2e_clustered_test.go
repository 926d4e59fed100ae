package server_test

import (
	"testing"
	"time"

	"github.com/dumbodb/dumbodb/server"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestClusteredCollection: create with clusteredIndex as mongod takes it,
// listed by listCollections (no idIndex) and listIndexes (the clustered
// index), with mongod's errors for what it refuses.
func TestClusteredCollection(t *testing.T) {
	db := startServer(t).client().Database("ci")
	mustRun(t, db, bson.D{{Key: "create", Value: "c"}, {Key: "clusteredIndex", Value: bson.D{
		{Key: "key", Value: bson.D{{Key: "_id", Value: 1}}}, {Key: "unique", Value: true}, {Key: "name", Value: "by id"}}}})
	specs, err := db.ListCollectionSpecifications(ctx, bson.D{{Key: "name", Value: "c"}})
	if err != nil || len(specs) != 1 || specs[0].IDIndex.Name != "" {
		t.Fatalf("listCollections: %+v %v", specs, err)
	}
	var opts bson.M
	if err := bson.Unmarshal(specs[0].Options, &opts); err != nil || get(opts, "clusteredIndex", "name") != "by id" ||
		get(opts, "clusteredIndex", "unique") != true || get(opts, "clusteredIndex", "v") != int32(2) {
		t.Fatalf("clusteredIndex option: %v %v", opts, err)
	}
	cur, err := db.Collection("c").Indexes().List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ix []bson.M
	if err := cur.All(ctx, &ix); err != nil || len(ix) != 1 || ix[0]["clustered"] != true || ix[0]["name"] != "by id" {
		t.Fatalf("listIndexes: %v %v", ix, err)
	}
	for _, bad := range []struct {
		spec bson.D
		code int32
	}{
		{bson.D{{Key: "key", Value: bson.D{{Key: "_id", Value: 1}}}, {Key: "unique", Value: false}}, 5979700},
		{bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: 1}}}, {Key: "unique", Value: true}}, 197},
		{bson.D{{Key: "key", Value: bson.D{{Key: "_id", Value: 1}}}, {Key: "unique", Value: true}, {Key: "v", Value: 1}}, 5979704},
		{bson.D{{Key: "key", Value: bson.D{{Key: "_id", Value: 1}}}, {Key: "unique", Value: true}, {Key: "x", Value: 1}}, 40415},
	} {
		_, err := run(t, db, bson.D{{Key: "create", Value: "bad"}, {Key: "clusteredIndex", Value: bad.spec}})
		wantCode(t, err, bad.code, "")
	}
	_, err = run(t, db, bson.D{{Key: "create", Value: "ttl"}, {Key: "expireAfterSeconds", Value: 10}})
	wantCode(t, err, 72, "InvalidOptions")
}

// TestClusteredTTL: a clustered collection's expireAfterSeconds deletes
// the documents whose _id is a date older than that.
func TestClusteredTTL(t *testing.T) {
	db := startServer(t, func(c *server.Config) { c.TTLInterval = 100 * time.Millisecond }).client().Database("ci")
	mustRun(t, db, bson.D{{Key: "create", Value: "events"}, {Key: "expireAfterSeconds", Value: 60}, {Key: "clusteredIndex", Value: bson.D{
		{Key: "key", Value: bson.D{{Key: "_id", Value: 1}}}, {Key: "unique", Value: true}}}})
	coll := db.Collection("events")
	now := time.Now()
	if _, err := coll.InsertMany(ctx, []any{bson.M{"_id": now.Add(-time.Hour)}, bson.M{"_id": now}, bson.M{"_id": "not a date"}}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		n, err := coll.CountDocuments(ctx, bson.M{})
		if err != nil {
			t.Fatal(err)
		}
		if n == 2 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d documents left, want the fresh one and the one whose _id is not a date", n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
