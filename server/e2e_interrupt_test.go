package server_test

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestAggregateMaxTimeMS: joins that would run for seconds stop at their
// maxTimeMS with MaxTimeMSExpired, as mongod's do: a $lookup running its
// sub-pipeline over the whole foreign collection for every document, and
// a $graphLookup walking a long chain for every document.
func TestAggregateMaxTimeMS(t *testing.T) {
	ts := startServer(t)
	// No client-side timeout: the driver would append a maxTimeMS of its
	// own to the command, after ours.
	db := ts.client(options.Client().SetTimeout(0)).Database("interrupt")
	seed := func(coll string, n int, mk func(i int) bson.D) {
		docs := make([]any, n)
		for i := range docs {
			docs[i] = mk(i)
		}
		if _, err := db.Collection(coll).InsertMany(ctx, docs); err != nil {
			t.Fatal(err)
		}
	}
	seed("local", 1500, func(i int) bson.D { return bson.D{{Key: "_id", Value: i}, {Key: "k", Value: i}} })
	seed("foreign", 1500, func(i int) bson.D { return bson.D{{Key: "_id", Value: i}, {Key: "k", Value: i}} })
	seed("chain", 2000, func(i int) bson.D { return bson.D{{Key: "_id", Value: i}, {Key: "next", Value: i + 1}} })
	for name, stage := range map[string]bson.D{
		"$lookup": {{Key: "$lookup", Value: bson.D{{Key: "from", Value: "foreign"}, {Key: "let", Value: bson.D{{Key: "k", Value: "$k"}}},
			{Key: "pipeline", Value: mongo.Pipeline{{{Key: "$match", Value: bson.D{{Key: "$expr",
				Value: bson.D{{Key: "$eq", Value: bson.A{"$k", "$$k"}}}}}}}}}, {Key: "as", Value: "m"}}}},
		"$graphLookup": {{Key: "$graphLookup", Value: bson.D{{Key: "from", Value: "chain"}, {Key: "startWith", Value: 0},
			{Key: "connectFromField", Value: "next"}, {Key: "connectToField", Value: "_id"}, {Key: "as", Value: "path"}}}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := run(t, db, bson.D{{Key: "aggregate", Value: "local"}, {Key: "pipeline", Value: bson.A{stage}},
				{Key: "cursor", Value: bson.D{}}, {Key: "maxTimeMS", Value: 50}})
			wantCode(t, err, 50, "MaxTimeMSExpired")
		})
	}
}
