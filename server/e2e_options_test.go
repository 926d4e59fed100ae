package server_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// TestUpdateWithSort: MongoDB 8's updateOne sort updates the first
// matching document in that order; sort with multi is refused.
func TestUpdateWithSort(t *testing.T) {
	ts := startServer(t)
	db := ts.client().Database("opts")
	db.Collection("c").InsertMany(ctx, []any{bson.D{{Key: "_id", Value: 1}, {Key: "n", Value: 5}},
		bson.D{{Key: "_id", Value: 2}, {Key: "n", Value: 9}}, bson.D{{Key: "_id", Value: 3}, {Key: "n", Value: 7}}})
	res := mustRun(t, db, bson.D{{Key: "update", Value: "c"}, {Key: "updates", Value: bson.A{bson.D{
		{Key: "q", Value: bson.D{}}, {Key: "u", Value: bson.D{{Key: "$set", Value: bson.D{{Key: "top", Value: true}}}}},
		{Key: "sort", Value: bson.D{{Key: "n", Value: -1}}}}}}})
	if res["nModified"] != int32(1) {
		t.Fatalf("update: %v", res)
	}
	var got bson.M
	db.Collection("c").FindOne(ctx, bson.D{{Key: "top", Value: true}}).Decode(&got)
	if got["_id"] != int32(2) {
		t.Fatalf("the sort picked %v, want _id 2 (the largest n)", got)
	}
	_, err := run(t, db, bson.D{{Key: "update", Value: "c"}, {Key: "updates", Value: bson.A{bson.D{
		{Key: "q", Value: bson.D{}}, {Key: "u", Value: bson.D{{Key: "$set", Value: bson.D{{Key: "x", Value: 1}}}}},
		{Key: "multi", Value: true}, {Key: "sort", Value: bson.D{{Key: "n", Value: 1}}}}}}})
	var we mongo.WriteException
	if !errors.As(err, &we) || len(we.WriteErrors) != 1 || we.WriteErrors[0].Code != 9 {
		t.Fatalf("sort with multi: %v, want a FailedToParse write error", err)
	}
}

// TestFindMinMax: min and max bound the hinted index's keys, min
// inclusive and max exclusive, in index order (a descending field
// reversed); they need a hint of matching fields.
func TestFindMinMax(t *testing.T) {
	ts := startServer(t)
	db := ts.client().Database("opts")
	coll := db.Collection("c")
	for i := range 10 {
		coll.InsertOne(ctx, bson.D{{Key: "_id", Value: i}, {Key: "a", Value: i % 3}})
	}
	coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "a", Value: 1}, {Key: "_id", Value: -1}}})
	ids := func(cmd bson.D) string {
		t.Helper()
		res := mustRun(t, db, cmd)
		var out []any
		for _, d := range get(res, "cursor", "firstBatch").(bson.A) {
			out = append(out, get(d, "_id"))
		}
		return fmt.Sprint(out)
	}
	if got := ids(bson.D{{Key: "find", Value: "c"}, {Key: "hint", Value: bson.D{{Key: "_id", Value: 1}}},
		{Key: "min", Value: bson.D{{Key: "_id", Value: 3}}}, {Key: "max", Value: bson.D{{Key: "_id", Value: 6}}}}); got != "[3 4 5]" {
		t.Errorf("_id in [3, 6): %s", got)
	}
	// On {a: 1, _id: -1}: keys from (1, 7) up to, not including, (2, 5).
	if got := ids(bson.D{{Key: "find", Value: "c"}, {Key: "hint", Value: bson.D{{Key: "a", Value: 1}, {Key: "_id", Value: -1}}},
		{Key: "min", Value: bson.D{{Key: "a", Value: 1}, {Key: "_id", Value: 7}}}, {Key: "max", Value: bson.D{{Key: "a", Value: 2}, {Key: "_id", Value: 5}}},
		{Key: "sort", Value: bson.D{{Key: "_id", Value: 1}}}}); got != "[1 4 7 8]" {
		t.Errorf("compound range: %s", got)
	}
	_, err := run(t, db, bson.D{{Key: "find", Value: "c"}, {Key: "min", Value: bson.D{{Key: "_id", Value: 3}}}})
	wantCode(t, err, 51173, "")
	_, err = run(t, db, bson.D{{Key: "find", Value: "c"}, {Key: "hint", Value: bson.D{{Key: "_id", Value: 1}}}, {Key: "max", Value: bson.D{{Key: "a", Value: 3}}}})
	wantCode(t, err, 51174, "")
}

// TestFindReturnKeyAndShowRecordID: returnKey gives the keys of the
// index a find reads (the _id for a look-up or an _id sort, nothing for a
// collection scan), showRecordId appends $recordId (the _id's key, in the
// documents' order) but for returnKey's documents; tailable answers as on a collection that is not
// capped.
func TestFindReturnKeyAndShowRecordID(t *testing.T) {
	ts := startServer(t)
	db := ts.client().Database("opts")
	for i := 1; i <= 3; i++ {
		db.Collection("c").InsertOne(ctx, bson.D{{Key: "_id", Value: i}, {Key: "a", Value: bson.D{{Key: "b", Value: 10 * i}}}, {Key: "x", Value: "y"}})
	}
	mustRun(t, db, bson.D{{Key: "createIndexes", Value: "c"}, {Key: "indexes", Value: bson.A{
		bson.D{{Key: "key", Value: bson.D{{Key: "a.b", Value: 1}}}, {Key: "name", Value: "ab"}},
		bson.D{{Key: "key", Value: bson.D{{Key: "x", Value: "hashed"}}}, {Key: "name", Value: "xh"}},
	}}})
	batch := func(cmd bson.D) bson.A {
		t.Helper()
		return get(mustRun(t, db, cmd), "cursor", "firstBatch").(bson.A)
	}
	find := bson.E{Key: "find", Value: "c"}
	got := batch(bson.D{find, {Key: "sort", Value: bson.D{{Key: "_id", Value: 1}}}, {Key: "returnKey", Value: true}})
	if len(got) != 3 || fmt.Sprint(got[0]) != fmt.Sprint(bson.D{{Key: "_id", Value: int32(1)}}) {
		t.Errorf("returnKey sorted by _id: %v", got)
	}
	got = batch(bson.D{find, {Key: "filter", Value: bson.D{{Key: "a.b", Value: bson.D{{Key: "$gte", Value: 20}}}}}, {Key: "returnKey", Value: true}})
	if len(got) != 2 || fmt.Sprint(got[0]) != fmt.Sprint(bson.D{{Key: "a.b", Value: int32(20)}}) {
		t.Errorf("returnKey over a.b: %v", got)
	}
	got = batch(bson.D{find, {Key: "filter", Value: bson.D{{Key: "x", Value: "y"}}}, {Key: "hint", Value: bson.D{{Key: "$natural", Value: 1}}}, {Key: "returnKey", Value: true}})
	if len(got) != 3 || len(got[0].(bson.D)) != 0 {
		t.Errorf("returnKey over a collection scan: %v", got)
	}
	_, err := run(t, db, bson.D{find, {Key: "filter", Value: bson.D{{Key: "x", Value: "y"}}}, {Key: "hint", Value: "xh"}, {Key: "returnKey", Value: true}})
	wantCode(t, err, 238, "NotImplemented")

	got = batch(bson.D{find, {Key: "projection", Value: bson.D{{Key: "_id", Value: 0}, {Key: "x", Value: 1}}}, {Key: "showRecordId", Value: true}})
	var last []byte
	for _, d := range got {
		doc := d.(bson.D)
		if len(doc) != 2 || doc[0].Key != "x" || doc[1].Key != "$recordId" {
			t.Fatalf("showRecordId with a projection: %v", doc)
		}
		rid := doc[1].Value.(bson.Binary).Data
		if last != nil && string(rid) <= string(last) {
			t.Errorf("record ids out of the documents' order: %v", got)
		}
		last = rid
	}
	got = batch(bson.D{find, {Key: "filter", Value: bson.D{{Key: "_id", Value: 2}}}, {Key: "returnKey", Value: true}, {Key: "showRecordId", Value: true}})
	if doc := got[0].(bson.D); len(got) != 1 || len(doc) != 1 || doc[0].Key != "_id" {
		t.Errorf("returnKey and showRecordId: %v (the keys alone, as on mongod)", got)
	}
	mustRun(t, db, bson.D{{Key: "create", Value: "v"}, {Key: "viewOn", Value: "c"}, {Key: "pipeline", Value: bson.A{}}})
	_, err = run(t, db, bson.D{{Key: "find", Value: "v"}, {Key: "returnKey", Value: true}})
	wantCode(t, err, 168, "InvalidPipelineOperator")
	_, err = run(t, db, bson.D{find, {Key: "tailable", Value: true}})
	wantCode(t, err, 2, "BadValue")
}

// TestCollStatsAndDBStatsSizes: collStats reports the documents' BSON size
// (what backup tools read), their average, stored and total sizes, with
// scale; dbStats its dataSize.
func TestCollStatsAndDBStatsSizes(t *testing.T) {
	ts := startServer(t)
	db := ts.client().Database("stats")
	var want int64
	for i := range 20 {
		doc := bson.D{{Key: "_id", Value: int32(i)}, {Key: "s", Value: strings.Repeat("x", 100)}}
		raw, _ := bson.Marshal(doc)
		want += int64(len(raw))
		db.Collection("c").InsertOne(ctx, doc)
	}
	st := mustRun(t, db, bson.D{{Key: "collStats", Value: "c"}})
	if num(st["size"]) != want || num(st["count"]) != 20 || num(st["avgObjSize"]) != want/20 || st["capped"] != false {
		t.Fatalf("collStats: size %v count %v avgObjSize %v capped %v, want size %d", st["size"], st["count"], st["avgObjSize"], st["capped"], want)
	}
	if num(st["storageSize"]) <= 0 || num(st["totalSize"]) < num(st["storageSize"]) {
		t.Fatalf("collStats sizes: %v", st)
	}
	scaled := mustRun(t, db, bson.D{{Key: "collStats", Value: "c"}, {Key: "scale", Value: 1024}})
	if num(scaled["size"]) != want/1024 || scaled["scaleFactor"] != int32(1024) {
		t.Fatalf("collStats scale 1024: size %v scaleFactor %v", scaled["size"], scaled["scaleFactor"])
	}
	_, err := run(t, db, bson.D{{Key: "collStats", Value: "c"}, {Key: "scale", Value: 0}})
	wantCode(t, err, 2, "BadValue")
	dbst := mustRun(t, db, bson.D{{Key: "dbStats", Value: 1}})
	if num(dbst["dataSize"]) != want || num(dbst["objects"]) != 20 {
		t.Fatalf("dbStats: dataSize %v objects %v, want %d", dbst["dataSize"], dbst["objects"], want)
	}
}
