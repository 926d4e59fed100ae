package server_test

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestStableAPI: apiVersion must be "1"; apiStrict and
// apiDeprecationErrors need it; with apiStrict, commands and stages
// outside API version 1 answer APIStrictError, and those in it run.
func TestStableAPI(t *testing.T) {
	ts := startServer(t)
	db := ts.client().Database("api")
	db.Collection("c").InsertOne(ctx, bson.D{{Key: "_id", Value: 1}})
	strict := func(cmd bson.D) bson.D {
		return append(cmd, bson.E{Key: "apiVersion", Value: "1"}, bson.E{Key: "apiStrict", Value: true})
	}
	mustRun(t, db, strict(bson.D{{Key: "find", Value: "c"}}))
	mustRun(t, db, bson.D{{Key: "distinct", Value: "c"}, {Key: "key", Value: "_id"}, {Key: "apiVersion", Value: "1"}})
	_, err := run(t, db, strict(bson.D{{Key: "distinct", Value: "c"}, {Key: "key", Value: "_id"}}))
	wantCode(t, err, 323, "APIStrictError")
	_, err = run(t, db.Client().Database("admin"), strict(bson.D{{Key: "aggregate", Value: 1},
		{Key: "pipeline", Value: bson.A{bson.D{{Key: "$listLocalSessions", Value: bson.D{}}}}}, {Key: "cursor", Value: bson.D{}}}))
	wantCode(t, err, 323, "APIStrictError")
	_, err = run(t, db, bson.D{{Key: "find", Value: "c"}, {Key: "apiVersion", Value: "2"}})
	wantCode(t, err, 322, "APIVersionError")
	_, err = run(t, db, bson.D{{Key: "find", Value: "c"}, {Key: "apiStrict", Value: true}})
	wantCode(t, err, 4886600, "")
}
