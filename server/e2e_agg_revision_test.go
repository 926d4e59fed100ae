package server_test

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// TestAggregateReadsOneRevision: an aggregation on db@main~1 reads that
// revision, and so do $lookup, $graphLookup and $unionWith inside it.
func TestAggregateReadsOneRevision(t *testing.T) {
	ts := startServer(t)
	c := ts.client()
	db := c.Database("r")
	db.Collection("orders").InsertOne(ctx, bson.M{"_id": 1, "cust": "a"})
	db.Collection("customers").InsertOne(ctx, bson.M{"_id": "a", "name": "old", "boss": "b"})
	db.Collection("customers").InsertOne(ctx, bson.M{"_id": "b", "name": "boss"})
	vc(t, c, "r", bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "old"}})
	db.Collection("customers").UpdateOne(ctx, bson.M{"_id": "a"}, bson.M{"$set": bson.M{"name": "new"}})
	db.Collection("customers").InsertOne(ctx, bson.M{"_id": "c", "name": "later"})
	vc(t, c, "r", bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "new"}})

	pipeline := mongo.Pipeline{
		{{Key: "$lookup", Value: bson.D{{Key: "from", Value: "customers"}, {Key: "localField", Value: "cust"},
			{Key: "foreignField", Value: "_id"}, {Key: "as", Value: "c"}}}},
		{{Key: "$graphLookup", Value: bson.D{{Key: "from", Value: "customers"}, {Key: "startWith", Value: "$cust"},
			{Key: "connectFromField", Value: "boss"}, {Key: "connectToField", Value: "_id"}, {Key: "as", Value: "chain"}}}},
		{{Key: "$unionWith", Value: "customers"}},
	}
	for _, tc := range []struct {
		db    string
		name  string
		total int
	}{{"r@main~1", "old", 3}, {"r", "new", 4}} {
		cur, err := c.Database(tc.db).Collection("orders").Aggregate(ctx, pipeline)
		if err != nil {
			t.Fatal(err)
		}
		var out []bson.M
		if err := cur.All(ctx, &out); err != nil {
			t.Fatal(err)
		}
		if len(out) != tc.total {
			t.Fatalf("%s: %d results (the $unionWith read the wrong revision): %v", tc.db, len(out), out)
		}
		joined := out[0]["c"].(bson.A)[0].(bson.D)
		if get(joined, "name") != tc.name || len(out[0]["chain"].(bson.A)) != 2 {
			t.Fatalf("%s: $lookup/$graphLookup read %v", tc.db, out[0])
		}
	}
}
