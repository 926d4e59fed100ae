package server_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

func createCapped(t *testing.T, db *mongo.Database, name string, size, max int64) {
	t.Helper()
	cmd := bson.D{{Key: "create", Value: name}, {Key: "capped", Value: true}, {Key: "size", Value: size}}
	if max > 0 {
		cmd = append(cmd, bson.E{Key: "max", Value: max})
	}
	mustRun(t, db, cmd)
}

func insertIDs(t *testing.T, c *mongo.Collection, ids ...int) {
	t.Helper()
	for _, id := range ids {
		if _, err := c.InsertOne(ctx, bson.M{"_id": id, "pad": "x"}); err != nil {
			t.Fatal(err)
		}
	}
}

// naturalIDs runs a find and lists the _ids in the order returned.
func naturalIDs(t *testing.T, c *mongo.Collection, opts ...options.Lister[options.FindOptions]) string {
	t.Helper()
	cur, err := c.Find(ctx, bson.M{}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	var docs []bson.M
	if err := cur.All(ctx, &docs); err != nil {
		t.Fatal(err)
	}
	ids := make([]string, len(docs))
	for i, d := range docs {
		ids[i] = fmt.Sprint(d["_id"])
	}
	return strings.Join(ids, " ")
}

func TestCappedCreateOptionsAndErrors(t *testing.T) {
	db := startServer(t).client().Database("cap")
	for _, tc := range []struct {
		cmd  bson.D
		code int32
		name string
	}{
		{bson.D{{Key: "create", Value: "a"}, {Key: "capped", Value: true}}, 72, "InvalidOptions"},
		{bson.D{{Key: "create", Value: "a"}, {Key: "size", Value: 100}}, 72, "InvalidOptions"},
		{bson.D{{Key: "create", Value: "a"}, {Key: "max", Value: 3}}, 72, "InvalidOptions"},
		{bson.D{{Key: "create", Value: "a"}, {Key: "capped", Value: false}, {Key: "size", Value: 100}}, 72, "InvalidOptions"},
		{bson.D{{Key: "create", Value: "a"}, {Key: "capped", Value: true}, {Key: "size", Value: "big"}}, 14, "TypeMismatch"},
		{bson.D{{Key: "create", Value: "a"}, {Key: "capped", Value: true}, {Key: "size", Value: 0}}, 51024, ""},
		{bson.D{{Key: "create", Value: "a"}, {Key: "capped", Value: true}, {Key: "size", Value: int64(1)<<50 + 1}}, 51024, ""},
		{bson.D{{Key: "create", Value: "a"}, {Key: "capped", Value: true}, {Key: "size", Value: 100}, {Key: "max", Value: int64(1) << 31}}, 51024, ""},
		{bson.D{{Key: "create", Value: "a"}, {Key: "capped", Value: true}, {Key: "size", Value: 100}, {Key: "viewOn", Value: "b"}}, 72, "InvalidOptions"},
	} {
		_, err := run(t, db, tc.cmd)
		wantCode(t, err, tc.code, tc.name)
	}
	createCapped(t, db, "log", 1000, 5)
	colls, err := db.ListCollectionSpecifications(ctx, bson.M{"name": "log"})
	if err != nil || len(colls) != 1 {
		t.Fatal(colls, err)
	}
	var opts bson.M
	if err := bson.Unmarshal(colls[0].Options, &opts); err != nil {
		t.Fatal(err)
	}
	if get(opts, "capped") != true || num(get(opts, "size")) != 1024 || num(get(opts, "max")) != 5 {
		t.Fatalf("listCollections options %v", opts)
	}
	st := mustRun(t, db, bson.D{{Key: "collStats", Value: "log"}})
	if st["capped"] != true || num(st["maxSize"]) != 1024 || num(st["max"]) != 5 {
		t.Fatalf("collStats %v", st)
	}
	cur, err := db.Collection("log").Aggregate(ctx, mongo.Pipeline{{{Key: "$collStats", Value: bson.M{"storageStats": bson.M{}}}}})
	if err != nil {
		t.Fatal(err)
	}
	var out []bson.M
	if err := cur.All(ctx, &out); err != nil || len(out) != 1 || get(out[0], "storageStats", "capped") != true ||
		num(get(out[0], "storageStats", "maxSize")) != 1024 {
		t.Fatalf("$collStats %v %v", out, err)
	}
}

func TestCappedNaturalOrderAndOverflow(t *testing.T) {
	db := startServer(t).client().Database("cap")
	createCapped(t, db, "bymax", 1<<20, 3)
	c := db.Collection("bymax")
	insertIDs(t, c, 5, 1, 9, 3, 7)
	if got := naturalIDs(t, c); got != "9 3 7" {
		t.Fatalf("by max, natural order: %q", got)
	}
	if got := naturalIDs(t, c, options.Find().SetSort(bson.M{"$natural": -1})); got != "7 3 9" {
		t.Fatalf("$natural: -1: %q", got)
	}
	if got := naturalIDs(t, c, options.Find().SetHint(bson.M{"$natural": 1})); got != "9 3 7" {
		t.Fatalf("hint $natural: 1: %q", got)
	}
	if got := naturalIDs(t, c, options.Find().SetSort(bson.M{"_id": 1})); got != "3 7 9" {
		t.Fatalf("sort by _id: %q", got)
	}
	if got := naturalIDs(t, c, options.Find().SetHint("_id_")); got != "3 7 9" {
		t.Fatalf("hint _id_: %q", got)
	}
	if got := naturalIDs(t, c, options.Find().SetHint(bson.M{"_id": 1}).SetSort(bson.M{"_id": -1})); got != "9 7 3" {
		t.Fatalf("hint {_id: 1}, sort {_id: -1}: %q", got)
	}
	// By size: each {_id, pad} is 25 bytes; 200 is rounded up to 256,
	// which holds 10.
	createCapped(t, db, "bysize", 200, 0)
	s := db.Collection("bysize")
	for i := 0; i < 20; i++ {
		insertIDs(t, s, i)
	}
	if got := naturalIDs(t, s); got != "10 11 12 13 14 15 16 17 18 19" {
		t.Fatalf("by size: %q", got)
	}
	_, err := s.InsertOne(ctx, bson.M{"_id": "big", "pad": strings.Repeat("x", 300)})
	var we mongo.WriteException
	if !errors.As(err, &we) || len(we.WriteErrors) != 1 || we.WriteErrors[0].Code != 2 {
		t.Fatalf("document larger than the collection: %v", err)
	}
	// Deletes and growing updates are allowed (mongod 5.3+).
	if _, err := s.DeleteOne(ctx, bson.M{"_id": 12}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.UpdateOne(ctx, bson.M{"_id": 13}, bson.M{"$set": bson.M{"pad": "much longer than before"}}); err != nil {
		t.Fatal(err)
	}
	if got := naturalIDs(t, s); got != "10 11 13 14 15 16 17 18 19" {
		t.Fatalf("after delete and update: %q", got)
	}
	if v := mustRun(t, db, bson.D{{Key: "validate", Value: "bysize"}}); v["valid"] != true {
		t.Fatalf("validate: %v", v)
	}
}

func TestCappedTailableAwaitData(t *testing.T) {
	db := startServer(t).client().Database("cap")
	createCapped(t, db, "feed", 1<<20, 0)
	c := db.Collection("feed")
	insertIDs(t, c, 1, 2)
	cur, err := c.Find(ctx, bson.M{}, options.Find().SetCursorType(options.TailableAwait).SetMaxAwaitTime(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cur.Close(ctx)
	var got []string
	for len(got) < 2 && cur.Next(ctx) {
		got = append(got, fmt.Sprint(cur.Current.Lookup("_id").Int32()))
	}
	go func() {
		time.Sleep(200 * time.Millisecond)
		insertIDs(t, c, 3)
	}()
	start := time.Now()
	if !cur.Next(ctx) {
		t.Fatalf("no document after the insert: %v", cur.Err())
	}
	got = append(got, fmt.Sprint(cur.Current.Lookup("_id").Int32()))
	if strings.Join(got, " ") != "1 2 3" || time.Since(start) > 1900*time.Millisecond {
		t.Fatalf("tailed %v in %v", got, time.Since(start))
	}
	// An empty getMore keeps the cursor open.
	if cur.TryNext(ctx) || cur.ID() == 0 || cur.Err() != nil {
		t.Fatalf("empty batch: id %d err %v", cur.ID(), cur.Err())
	}
	// tailable on a collection that is not capped keeps mongod's error.
	mustRun(t, db, bson.D{{Key: "create", Value: "plain"}})
	_, err = run(t, db, bson.D{{Key: "find", Value: "plain"}, {Key: "tailable", Value: true}})
	wantCode(t, err, 2, "BadValue")
	_, err = run(t, db, bson.D{{Key: "find", Value: "feed"}, {Key: "tailable", Value: true}, {Key: "sort", Value: bson.M{"_id": 1}}})
	wantCode(t, err, 2, "BadValue")
}

// TestCappedOverflowIsSeenAsDeletes: the documents an insert removes are
// ordinary deletes, which a change stream reports after the insert.
func TestCappedOverflowIsSeenAsDeletes(t *testing.T) {
	db := startServer(t).client().Database("cap")
	createCapped(t, db, "log", 4096, 2)
	c := db.Collection("log")
	cs := csWatch(t, c, nil)
	insertIDs(t, c, 1, 2, 3)
	var got []string
	for _, ev := range csDrain(t, cs) {
		got = append(got, fmt.Sprint(ev.Lookup("operationType").StringValue(), ev.Lookup("documentKey", "_id").Int32()))
	}
	if strings.Join(got, " ") != "insert1 insert2 insert3 delete1" {
		t.Fatalf("events %v", got)
	}
}

// TestCappedNaturalSortIgnoresIndexes: {$natural: ±1} is insertion order
// even when an index or an _id range could serve the filter.
func TestCappedNaturalSortIgnoresIndexes(t *testing.T) {
	db := startServer(t).client().Database("cap")
	createCapped(t, db, "log", 1<<20, 0)
	c := db.Collection("log")
	if _, err := c.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.M{"pad": 1}}); err != nil {
		t.Fatal(err)
	}
	insertIDs(t, c, 4, 2, 8, 6)
	for _, tc := range []struct {
		filter bson.M
		dir    int
		want   string
	}{
		{bson.M{"pad": "x"}, 1, "4 2 8 6"},
		{bson.M{"pad": "x"}, -1, "6 8 2 4"},
		{bson.M{"_id": bson.M{"$gte": 2}}, 1, "4 2 8 6"},
	} {
		cur, err := c.Find(ctx, tc.filter, options.Find().SetSort(bson.M{"$natural": tc.dir}))
		if err != nil {
			t.Fatal(err)
		}
		var docs []bson.M
		if err := cur.All(ctx, &docs); err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, d := range docs {
			ids = append(ids, fmt.Sprint(d["_id"]))
		}
		if got := strings.Join(ids, " "); got != tc.want {
			t.Fatalf("%v $natural %d: %q, want %q", tc.filter, tc.dir, got, tc.want)
		}
	}
}

// TestCappedCollModLimits: collMod's cappedSize and cappedMax change the
// limits (cappedSize as given, not rounded); the documents over them go
// at the next insert, as on mongod 6.0+.
func TestCappedCollModLimits(t *testing.T) {
	db := startServer(t).client().Database("cap")
	createCapped(t, db, "log", 1<<20, 0)
	c := db.Collection("log")
	insertIDs(t, c, 1, 2, 3, 4, 5)
	mustRun(t, db, bson.D{{Key: "collMod", Value: "log"}, {Key: "cappedMax", Value: 2}, {Key: "cappedSize", Value: 1000}})
	st := mustRun(t, db, bson.D{{Key: "collStats", Value: "log"}})
	if num(st["max"]) != 2 || num(st["maxSize"]) != 1000 || num(st["count"]) != 5 {
		t.Fatalf("after collMod: %v", st)
	}
	insertIDs(t, c, 6)
	if got := naturalIDs(t, c); got != "5 6" {
		t.Fatalf("after the next insert: %q", got)
	}
	mustRun(t, db, bson.D{{Key: "collMod", Value: "log"}, {Key: "cappedMax", Value: 0}})
	st = mustRun(t, db, bson.D{{Key: "collStats", Value: "log"}})
	if num(st["max"]) != 0x7fffffff {
		t.Fatalf("cappedMax 0: max %v", st["max"])
	}
	for _, bad := range []bson.D{
		{{Key: "collMod", Value: "log"}, {Key: "cappedSize", Value: 0}},
		{{Key: "collMod", Value: "log"}, {Key: "cappedSize", Value: int64(1)<<50 + 1}},
		{{Key: "collMod", Value: "log"}, {Key: "cappedMax", Value: int64(1) << 31}},
	} {
		_, err := run(t, db, bad)
		wantCode(t, err, 51024, "")
	}
}

// TestCappedShowRecordID: a capped collection's $recordId is its record
// id, a long that grows with each insert, as on mongod.
func TestCappedShowRecordID(t *testing.T) {
	db := startServer(t).client().Database("cap")
	createCapped(t, db, "log", 1<<20, 2)
	insertIDs(t, db.Collection("log"), 9, 4, 7)
	cur, err := db.Collection("log").Find(ctx, bson.M{}, options.Find().SetShowRecordID(true))
	if err != nil {
		t.Fatal(err)
	}
	var docs []bson.M
	if err := cur.All(ctx, &docs); err != nil {
		t.Fatal(err)
	}
	if len(docs) != 2 || docs[0]["$recordId"] != int64(2) || docs[1]["$recordId"] != int64(3) {
		t.Fatalf("record ids %v", docs)
	}
}

// TestCappedOutRefused: $out does not replace a capped collection, as on
// mongod.
func TestCappedOutRefused(t *testing.T) {
	db := startServer(t).client().Database("cap")
	createCapped(t, db, "log", 4096, 0)
	insertIDs(t, db.Collection("src"), 1)
	cur, err := db.Collection("src").Aggregate(ctx, mongo.Pipeline{{{Key: "$out", Value: "log"}}})
	if err == nil {
		cur.Close(ctx)
	}
	wantCode(t, err, 17152, "")
}

// TestCappedTailableFilterAndPositionLost: a tailable cursor filters and
// projects what it returns; it dies with CappedPositionLost when the
// document it stopped at is removed by an overflow, as on mongod.
func TestCappedTailableFilterAndPositionLost(t *testing.T) {
	// No client timeout: the driver would add a maxTimeMS to each command.
	db := startServer(t).client(options.Client().SetTimeout(0)).Database("cap")
	createCapped(t, db, "feed", 1<<20, 3)
	c := db.Collection("feed")
	for i := 1; i <= 3; i++ {
		if _, err := c.InsertOne(ctx, bson.M{"_id": i, "even": i%2 == 0, "pad": "x"}); err != nil {
			t.Fatal(err)
		}
	}
	sc := oneSession(t, db)
	first := mustRunIn(t, sc, db, bson.D{{Key: "find", Value: "feed"}, {Key: "tailable", Value: true},
		{Key: "filter", Value: bson.M{"even": false}}, {Key: "projection", Value: bson.M{"pad": 0}}, {Key: "batchSize", Value: 1}})
	id := get(first, "cursor", "id").(int64)
	batch := get(first, "cursor", "firstBatch").(bson.A)
	if id == 0 || len(batch) != 1 || get(batch[0], "_id") != int32(1) || get(batch[0], "pad") != nil {
		t.Fatalf("first batch %v", first)
	}
	next := mustRunIn(t, sc, db, bson.D{{Key: "getMore", Value: id}, {Key: "collection", Value: "feed"}})
	if batch := get(next, "cursor", "nextBatch").(bson.A); len(batch) != 1 || get(batch[0], "_id") != int32(3) {
		t.Fatalf("second batch %v", next)
	}
	_, err := runIn(sc, db, bson.D{{Key: "getMore", Value: id}, {Key: "collection", Value: "feed"}, {Key: "maxTimeMS", Value: 10}})
	wantCode(t, err, 2, "BadValue") // not an awaitData cursor
	// Four inserts push out _id 3, where the cursor stopped.
	for i := 4; i <= 7; i++ {
		if _, err := c.InsertOne(ctx, bson.M{"_id": i, "even": i%2 == 0}); err != nil {
			t.Fatal(err)
		}
	}
	_, err = runIn(sc, db, bson.D{{Key: "getMore", Value: id}, {Key: "collection", Value: "feed"}})
	wantCode(t, err, 136, "CappedPositionLost")
}
