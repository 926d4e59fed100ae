package server_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dumbodb/dumbodb/server"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// tsTemps reads the temp fields of coll's measurements in time order.
func tsTemps(t *testing.T, coll *mongo.Collection, filter bson.D) string {
	t.Helper()
	cur, err := coll.Find(ctx, filter, options.Find().SetSort(bson.D{{Key: "ts", Value: 1}}))
	if err != nil {
		t.Fatal(err)
	}
	var docs []bson.M
	if err := cur.All(ctx, &docs); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range docs {
		out = append(out, fmt.Sprint(d["temp"]))
	}
	return strings.Join(out, " ")
}

// TestTimeSeriesDeletes: deletes on the meta field drop whole buckets,
// deletes on other fields rewrite buckets; deleteOne deletes one.
func TestTimeSeriesDeletes(t *testing.T) {
	db, coll := seedTimeseries(t, 10)
	res, err := coll.DeleteMany(ctx, bson.D{{Key: "sensor.id", Value: "b"}})
	if err != nil || res.DeletedCount != 5 {
		t.Fatalf("delete on the meta field: %v %v", res, err)
	}
	if n, _ := db.Collection("system.buckets.weather").CountDocuments(ctx, bson.D{}); n != 1 {
		t.Fatalf("%d buckets after deleting sensor b, want 1", n)
	}
	res, err = coll.DeleteMany(ctx, bson.D{{Key: "temp", Value: bson.D{{Key: "$gte", Value: 6}}}})
	if err != nil || res.DeletedCount != 2 {
		t.Fatalf("delete on a measurement field: %v %v", res, err)
	}
	if got := tsTemps(t, coll, bson.D{}); got != "0 2 4" {
		t.Fatalf("left %q, want 0 2 4", got)
	}
	res, err = coll.DeleteOne(ctx, bson.D{})
	if err != nil || res.DeletedCount != 1 {
		t.Fatalf("deleteOne: %v %v", res, err)
	}
	if got := tsTemps(t, coll, bson.D{}); len(strings.Fields(got)) != 2 {
		t.Fatalf("after deleteOne %q", got)
	}
	if _, err := coll.DeleteMany(ctx, bson.D{}); err != nil {
		t.Fatal(err)
	}
	if n, _ := db.Collection("system.buckets.weather").CountDocuments(ctx, bson.D{}); n != 0 {
		t.Fatalf("%d buckets after deleting everything", n)
	}
}

// TestTimeSeriesUpdates: updates of measurement fields and of the meta
// field (the measurement moves to its new meta's bucket), upserts, and an
// update removing the time field refused with mongod's error.
func TestTimeSeriesUpdates(t *testing.T) {
	db, coll := seedTimeseries(t, 10)
	res, err := coll.UpdateMany(ctx, bson.D{{Key: "sensor.id", Value: "a"}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "temp", Value: 100}}}})
	if err != nil || res.MatchedCount != 5 || res.ModifiedCount != 5 {
		t.Fatalf("updateMany on the meta field: %v %v", res, err)
	}
	if got := tsTemps(t, coll, bson.D{}); got != "100 1 102 3 104 5 106 7 108 9" {
		t.Fatalf("after updateMany %q", got)
	}
	res, err = coll.UpdateOne(ctx, bson.D{{Key: "temp", Value: 1}}, bson.D{{Key: "$set", Value: bson.D{{Key: "sensor.id", Value: "c"}}}})
	if err != nil || res.ModifiedCount != 1 {
		t.Fatalf("updateOne of the meta: %v %v", res, err)
	}
	buckets := db.Collection("system.buckets.weather")
	if n, _ := buckets.CountDocuments(ctx, bson.D{{Key: "meta.id", Value: "c"}}); n != 1 {
		t.Fatalf("%d buckets of sensor c, want the moved measurement's", n)
	}
	if got := tsTemps(t, coll, bson.D{{Key: "sensor.id", Value: "c"}}); got != "1" {
		t.Fatalf("sensor c has %q", got)
	}
	res, err = coll.UpdateOne(ctx, bson.D{{Key: "temp", Value: -1}}, bson.D{{Key: "$set", Value: bson.D{{Key: "ts", Value: tsBase}}}},
		options.UpdateOne().SetUpsert(true))
	if err != nil || res.UpsertedID == nil {
		t.Fatalf("upsert: %v %v", res, err)
	}
	if n, _ := coll.CountDocuments(ctx, bson.D{}); n != 11 {
		t.Fatalf("%d measurements after the upsert, want 11", n)
	}
	_, err = coll.UpdateOne(ctx, bson.D{{Key: "temp", Value: 3}}, bson.D{{Key: "$unset", Value: bson.D{{Key: "ts", Value: ""}}}})
	var we mongo.WriteException
	if !errors.As(err, &we) || we.WriteErrors[0].Code != 2 {
		t.Fatalf("unsetting the time field: %v", err)
	}
	if n, _ := coll.CountDocuments(ctx, bson.D{{Key: "temp", Value: 3}}); n != 1 {
		t.Fatalf("the refused update lost the measurement")
	}
	var got bson.M
	err = coll.FindOneAndUpdate(ctx, bson.D{{Key: "temp", Value: 5}}, bson.D{{Key: "$set", Value: bson.D{{Key: "x", Value: 1}}}},
		options.FindOneAndUpdate().SetReturnDocument(options.After)).Decode(&got)
	if err != nil || got["x"] != int32(1) || got["temp"] != int32(5) {
		t.Fatalf("findOneAndUpdate: %v %v", got, err)
	}
	got = nil
	if err := coll.FindOneAndDelete(ctx, bson.D{{Key: "x", Value: 1}}).Decode(&got); err != nil || got["temp"] != int32(5) {
		t.Fatalf("findOneAndDelete: %v %v", got, err)
	}
	if n, _ := coll.CountDocuments(ctx, bson.D{{Key: "temp", Value: 5}}); n != 0 {
		t.Fatalf("findOneAndDelete left the measurement")
	}
	got = nil
	err = coll.FindOneAndUpdate(ctx, bson.D{{Key: "sensor.id", Value: "a"}}, bson.D{{Key: "$set", Value: bson.D{{Key: "x", Value: 2}}}},
		options.FindOneAndUpdate().SetSort(bson.D{{Key: "temp", Value: -1}})).Decode(&got)
	if err != nil || got["temp"] != int32(108) || got["x"] != nil {
		t.Fatalf("findOneAndUpdate with a sort returned %v %v, want the highest temp before the update", got, err)
	}
	if _, err := coll.UpdateOne(ctx, bson.D{}, bson.D{{Key: "$set", Value: bson.D{{Key: "x", Value: 3}}}},
		options.UpdateOne().SetSort(bson.D{{Key: "temp", Value: 1}})); err != nil {
		t.Fatal(err)
	}
	if got := tsTemps(t, coll, bson.D{{Key: "x", Value: bson.D{{Key: "$exists", Value: true}}}}); got != "108 -1" && got != "-1 108" {
		t.Fatalf("the updates with a sort changed %q, want temps 108 (x: 2) and -1 (x: 3)", got)
	}
}

// TestTimeSeriesTimeRangeScan: a time range reads only the buckets that
// can hold it, through an _id range on the bucket collection, and explain
// shows the bucket filter ahead of the unpacking.
func TestTimeSeriesTimeRangeScan(t *testing.T) {
	db, _ := startCollection(t, "tsdb", "unused")
	mustRun(t, db, bson.D{{Key: "create", Value: "m"}, {Key: "timeseries", Value: bson.D{{Key: "timeField", Value: "ts"}}}})
	coll := db.Collection("m")
	var docs []any
	for i := 0; i < 48*60; i++ { // two days, a measurement a minute: 48 buckets
		docs = append(docs, bson.D{{Key: "ts", Value: tsBase.Add(time.Duration(i) * time.Minute)}, {Key: "temp", Value: i}})
	}
	if _, err := coll.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	if n, _ := db.Collection("system.buckets.m").CountDocuments(ctx, bson.D{}); n != 48 {
		t.Fatalf("%d buckets, want 48", n)
	}
	from, to := tsBase.Add(10*time.Hour+30*time.Minute), tsBase.Add(11*time.Hour+30*time.Minute)
	filter := bson.D{{Key: "ts", Value: bson.D{{Key: "$gte", Value: from}, {Key: "$lt", Value: to}}}}
	if n, err := coll.CountDocuments(ctx, filter); err != nil || n != 60 {
		t.Fatalf("an hour has %d measurements (%v), want 60", n, err)
	}
	ex := mustRun(t, db, bson.D{{Key: "explain", Value: bson.D{{Key: "find", Value: "m"}, {Key: "filter", Value: filter}}},
		{Key: "verbosity", Value: "executionStats"}})
	s := fmt.Sprint(ex)
	if !strings.Contains(s, "$_internalUnpackBucket") || !strings.Contains(s, "control.max.ts") {
		t.Fatalf("explain does not show the unpacking after the bucket filter: %v", s)
	}
	// The bucket filter's _id range is scanned, not the whole collection.
	plan := get(ex, "queryPlanner", "winningPlan", "inputStage")
	if get(plan, "stage") != "IXSCAN" || get(plan, "indexName") != "_id_" {
		t.Fatalf("the buckets are not read through an _id range: %v", s)
	}
	bf, ok := get(ex, "queryPlanner", "parsedQuery").(bson.D)
	if !ok {
		t.Fatalf("no bucket filter: %v", s)
	}
	if n, err := db.Collection("system.buckets.m").CountDocuments(ctx, bf); err != nil || n > 3 {
		t.Fatalf("the bucket filter passes %d of 48 buckets (%v), want the 2 or 3 of the hour", n, err)
	}
}

// TestTimeSeriesVersioned: a time-series collection commits, branches,
// diffs, merges and resets, its buckets being ordinary documents.
func TestTimeSeriesVersioned(t *testing.T) {
	db, coll := seedTimeseries(t, 4)
	mustRun(t, db, bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "four"}})
	mustRun(t, db, bson.D{{Key: "dumboBranch", Value: "feature"}})
	feature := db.Client().Database("tsdb@feature").Collection("weather")
	if _, err := feature.InsertOne(ctx, bson.D{{Key: "ts", Value: tsBase.Add(3 * time.Hour)}, {Key: "temp", Value: 50}}); err != nil {
		t.Fatal(err)
	}
	mustRun(t, db.Client().Database("tsdb@feature"), bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "five"}})
	if n, _ := coll.CountDocuments(ctx, bson.D{}); n != 4 {
		t.Fatalf("main sees %d measurements, want 4", n)
	}
	diff := mustRun(t, db, bson.D{{Key: "dumboDiff", Value: 1}, {Key: "from", Value: "main"}, {Key: "to", Value: "feature"}})
	if !strings.Contains(fmt.Sprint(diff), "system.buckets.weather") {
		t.Fatalf("the diff does not show the new bucket: %v", diff)
	}
	mustRun(t, db, bson.D{{Key: "dumboMerge", Value: 1}, {Key: "mergeIn", Value: "feature"}})
	if got := tsTemps(t, coll, bson.D{}); got != "0 1 2 3 50" {
		t.Fatalf("after the merge %q", got)
	}
	if _, err := coll.DeleteMany(ctx, bson.D{}); err != nil {
		t.Fatal(err)
	}
	mustRun(t, db, bson.D{{Key: "dumboReset", Value: 1}, {Key: "hard", Value: true}})
	if got := tsTemps(t, coll, bson.D{}); got != "0 1 2 3 50" {
		t.Fatalf("after the reset %q", got)
	}
}

// TestTimeSeriesTTL: expireAfterSeconds deletes the buckets whose latest
// measurement has expired.
func TestTimeSeriesTTL(t *testing.T) {
	db := startServer(t, func(c *server.Config) { c.TTLInterval = 100 * time.Millisecond }).client().Database("tsdb")
	mustRun(t, db, bson.D{{Key: "create", Value: "w"}, {Key: "expireAfterSeconds", Value: 3600},
		{Key: "timeseries", Value: bson.D{{Key: "timeField", Value: "ts"}}}})
	coll := db.Collection("w")
	now := time.Now()
	if _, err := coll.InsertMany(ctx, []any{bson.M{"ts": now.Add(-3 * time.Hour), "temp": 1}, bson.M{"ts": now, "temp": 2}}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if got := tsTemps(t, coll, bson.D{}); got == "2" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("left %q, want the fresh measurement only", tsTemps(t, coll, bson.D{}))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestTimeSeriesStats: collStats and $collStats answer with the buckets'
// figures.
func TestTimeSeriesStats(t *testing.T) {
	db, coll := seedTimeseries(t, 10)
	st := mustRun(t, db, bson.D{{Key: "collStats", Value: "weather"}})
	if st["ns"] != "tsdb.weather" || num(get(st, "timeseries", "bucketCount")) != 2 {
		t.Fatalf("collStats: %v", st)
	}
	cur, err := coll.Aggregate(ctx, bson.A{bson.D{{Key: "$collStats", Value: bson.D{{Key: "count", Value: bson.D{}}}}}})
	if err != nil {
		t.Fatal(err)
	}
	var docs []bson.M
	if err := cur.All(ctx, &docs); err != nil || len(docs) != 1 {
		t.Fatalf("$collStats: %v %v", docs, err)
	}
}

// TestTimeSeriesCollMod: collMod changes expireAfterSeconds and grows the
// bucketing, with mongod's checks; other collMod options and renames are
// refused.
func TestTimeSeriesCollMod(t *testing.T) {
	db, coll := seedTimeseries(t, 4)
	mustRun(t, db, bson.D{{Key: "collMod", Value: "weather"}, {Key: "expireAfterSeconds", Value: 600}})
	mustRun(t, db, bson.D{{Key: "collMod", Value: "weather"}, {Key: "timeseries", Value: bson.D{{Key: "granularity", Value: "minutes"}}}})
	specs, err := db.ListCollectionSpecifications(ctx, bson.D{{Key: "name", Value: "weather"}})
	if err != nil || len(specs) != 1 {
		t.Fatal(specs, err)
	}
	if got := specs[0].Options.String(); got != `{"timeseries": {"timeField": "ts","metaField": "sensor","granularity": "minutes","bucketMaxSpanSeconds": {"$numberInt":"86400"}},"expireAfterSeconds": {"$numberLong":"600"}}` {
		t.Fatalf("options after collMod: %s", got)
	}
	bad := []struct {
		ts   bson.D
		code int32
	}{
		{bson.D{{Key: "granularity", Value: "seconds"}}, 72},
		{bson.D{{Key: "timeField", Value: "x"}}, 40415},
		{bson.D{{Key: "bucketMaxSpanSeconds", Value: 100}}, 72},
		{bson.D{{Key: "bucketMaxSpanSeconds", Value: 100}, {Key: "bucketRoundingSeconds", Value: 100}}, 72},
	}
	for _, c := range bad {
		_, err := run(t, db, bson.D{{Key: "collMod", Value: "weather"}, {Key: "timeseries", Value: c.ts}})
		wantCode(t, err, c.code, "")
	}
	mustRun(t, db, bson.D{{Key: "collMod", Value: "weather"}, {Key: "expireAfterSeconds", Value: "off"}})
	_, err = run(t, db, bson.D{{Key: "collMod", Value: "weather"}, {Key: "validator", Value: bson.D{{Key: "a", Value: 1}}}})
	wantCode(t, err, 238, "NotImplemented")
	admin := db.Client().Database("admin")
	_, err = run(t, admin, bson.D{{Key: "renameCollection", Value: "tsdb.weather"}, {Key: "to", Value: "tsdb.w2"}})
	wantCode(t, err, 166, "CommandNotSupportedOnView")
	_, err = run(t, admin, bson.D{{Key: "renameCollection", Value: "tsdb.system.buckets.weather"}, {Key: "to", Value: "tsdb.w2"}})
	wantCode(t, err, 20, "IllegalOperation")
	_, err = run(t, admin, bson.D{{Key: "renameCollection", Value: "tsdb.unused"}, {Key: "to", Value: "tsdb.weather"}, {Key: "dropTarget", Value: true}})
	wantCode(t, err, 238, "NotImplemented")
	if got := tsTemps(t, coll, bson.D{}); got != "0 1 2 3" {
		t.Fatalf("the measurements after collMod: %q", got)
	}
	// Buckets made with the old span are still found by a time range.
	if n, err := coll.CountDocuments(ctx, bson.D{{Key: "ts", Value: bson.D{{Key: "$gte", Value: tsBase.Add(time.Minute)}}}}); err != nil || n != 3 {
		t.Fatalf("a range after collMod counts %d (%v), want 3", n, err)
	}
}

// TestTimeSeriesReadShapes: projections, sorts, limits and aggregations
// with a leading $match on the meta field read the measurements as mongod
// does; a transaction may read but not write.
func TestTimeSeriesReadShapes(t *testing.T) {
	db, coll := seedTimeseries(t, 10)
	var doc bson.D
	err := coll.FindOne(ctx, bson.D{{Key: "sensor.id", Value: "a"}}, options.FindOne().
		SetSort(bson.D{{Key: "temp", Value: -1}}).SetProjection(bson.D{{Key: "_id", Value: 0}, {Key: "temp", Value: 1}})).Decode(&doc)
	if err != nil || len(doc) != 1 || doc[0].Key != "temp" || doc[0].Value != int32(8) {
		t.Fatalf("findOne with sort and projection: %v %v", doc, err)
	}
	cur, err := coll.Aggregate(ctx, bson.A{
		bson.D{{Key: "$match", Value: bson.D{{Key: "sensor", Value: bson.D{{Key: "id", Value: "b"}}}}}},
		bson.D{{Key: "$group", Value: bson.D{{Key: "_id", Value: nil}, {Key: "max", Value: bson.D{{Key: "$max", Value: "$temp"}}}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var docs []bson.M
	if err := cur.All(ctx, &docs); err != nil || len(docs) != 1 || docs[0]["max"] != int32(9) {
		t.Fatalf("aggregate on the meta: %v %v", docs, err)
	}
	ex := mustRun(t, db, bson.D{{Key: "explain", Value: bson.D{{Key: "aggregate", Value: "weather"},
		{Key: "pipeline", Value: bson.A{bson.D{{Key: "$match", Value: bson.D{{Key: "sensor.id", Value: "b"}}}}}}, {Key: "cursor", Value: bson.D{}}}}})
	if !strings.Contains(fmt.Sprint(get(ex, "queryPlanner", "parsedQuery")), "meta.id") {
		t.Fatalf("the meta filter is not on the buckets: %v", ex)
	}
	sess, err := db.Client().StartSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.EndSession(ctx)
	_, err = sess.WithTransaction(ctx, func(sc context.Context) (any, error) {
		if n, err := coll.CountDocuments(sc, bson.D{}); err != nil || n != 10 {
			return nil, fmt.Errorf("count in a transaction: %d %v", n, err)
		}
		_, err := coll.InsertOne(sc, bson.D{{Key: "ts", Value: tsBase}})
		return nil, err
	})
	wantCode(t, err, 263, "OperationNotSupportedInTransaction")
	_, err = coll.Watch(ctx, mongo.Pipeline{})
	wantCode(t, err, 166, "CommandNotSupportedOnView")
}

// TestTimeSeriesIndexes: mongod's default {meta: 1, time: 1} index, and
// secondary indexes made, listed and dropped in the measurements' terms
// while they index the buckets.
func TestTimeSeriesIndexes(t *testing.T) {
	db, coll := seedTimeseries(t, 10)
	keys := func() string {
		t.Helper()
		specs, err := coll.Indexes().ListSpecifications(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, s := range specs {
			out = append(out, s.Name+" "+s.KeysDocument.String())
		}
		return strings.Join(out, "; ")
	}
	if got := keys(); got != `sensor_1_ts_1 {"sensor": {"$numberInt":"1"},"ts": {"$numberInt":"1"}}` {
		t.Fatalf("the default index: %s", got)
	}
	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "sensor.id", Value: 1}, {Key: "temp", Value: -1}}}); err != nil {
		t.Fatal(err)
	}
	if got := keys(); !strings.HasSuffix(got, `sensor.id_1_temp_-1 {"sensor.id": {"$numberInt":"1"},"temp": {"$numberInt":"-1"}}`) {
		t.Fatalf("after createIndexes: %s", got)
	}
	bspecs, err := db.Collection("system.buckets.weather").Indexes().ListSpecifications(ctx)
	if err != nil || len(bspecs) != 3 || bspecs[2].KeysDocument.String() != `{"meta.id": {"$numberInt":"1"},"control.max.temp": {"$numberInt":"-1"},"control.min.temp": {"$numberInt":"-1"}}` {
		t.Fatalf("the bucket indexes: %v %v", bspecs, err)
	}
	if got := tsTemps(t, coll, bson.D{{Key: "sensor.id", Value: "b"}}); got != "1 3 5 7 9" {
		t.Fatalf("a read on the meta with the index: %q", got)
	}
	for _, hint := range []any{bson.D{{Key: "sensor.id", Value: 1}, {Key: "temp", Value: -1}}, "sensor_1_ts_1", bson.D{{Key: "$natural", Value: 1}}} {
		n, err := coll.CountDocuments(ctx, bson.D{{Key: "sensor.id", Value: "b"}}, options.Count().SetHint(hint))
		if err != nil || n != 5 {
			t.Fatalf("a read hinted %v: %d %v", hint, n, err)
		}
	}
	if err := coll.Indexes().DropWithKey(ctx, bson.D{{Key: "sensor.id", Value: 1}, {Key: "temp", Value: -1}}); err != nil {
		t.Fatal(err)
	}
	if got := keys(); strings.Contains(got, "temp") {
		t.Fatalf("after dropIndexes: %s", got)
	}
	_, err = coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "temp", Value: 1}}, Options: options.Index().SetUnique(true)})
	wantCode(t, err, 72, "InvalidOptions")
	_, err = coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "temp", Value: 1}},
		Options: options.Index().SetPartialFilterExpression(bson.D{{Key: "temp", Value: 1}})})
	wantCode(t, err, 238, "NotImplemented")
	if err := coll.Indexes().DropAll(ctx); err != nil {
		t.Fatal(err)
	}
	if got := keys(); got != "" {
		t.Fatalf("after dropping all: %s", got)
	}
}

// TestTimeSeriesRestart: a time-series collection, its buckets and its
// options survive a restart.
func TestTimeSeriesRestart(t *testing.T) {
	srv := startServer(t)
	db := srv.client().Database("tsdb")
	mustRun(t, db, bson.D{{Key: "create", Value: "w"}, {Key: "timeseries", Value: bson.D{{Key: "timeField", Value: "ts"},
		{Key: "metaField", Value: "sensor"}, {Key: "granularity", Value: "hours"}}}})
	for i := 0; i < 3; i++ {
		if _, err := db.Collection("w").InsertOne(ctx, bson.D{{Key: "ts", Value: tsBase.Add(time.Duration(i) * time.Hour)}, {Key: "temp", Value: i}}); err != nil {
			t.Fatal(err)
		}
	}
	srv.restart()
	db = srv.client().Database("tsdb")
	coll := db.Collection("w")
	if got := tsTemps(t, coll, bson.D{}); got != "0 1 2" {
		t.Fatalf("after a restart: %q", got)
	}
	if n, _ := db.Collection("system.buckets.w").CountDocuments(ctx, bson.D{}); n != 1 {
		t.Fatalf("%d buckets, want the one of the day", n)
	}
	names, err := db.ListCollectionNames(ctx, bson.D{{Key: "type", Value: "timeseries"}})
	if err != nil || fmt.Sprint(names) != "[w]" {
		t.Fatalf("listCollections after a restart: %v %v", names, err)
	}
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "ts", Value: tsBase.Add(3 * time.Hour)}, {Key: "temp", Value: 3}}); err != nil {
		t.Fatal(err)
	}
	if n, _ := db.Collection("system.buckets.w").CountDocuments(ctx, bson.D{}); n != 1 {
		t.Fatalf("%d buckets: the insert after the restart did not reopen the bucket", n)
	}
}

// TestTimeSeriesMerge: measurements added to the same bucket on both
// sides of a merge are all kept (buckets merge by measurements, not field
// by field), and so are those in different buckets; a bucket deleted on
// one side keeps what the other side added to it.
func TestTimeSeriesMerge(t *testing.T) {
	db, coll := seedTimeseries(t, 2)
	mustRun(t, db, bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "two"}})
	mustRun(t, db, bson.D{{Key: "dumboBranch", Value: "feature"}})
	fdb := db.Client().Database("tsdb@feature")
	insert := func(c *mongo.Collection, at time.Duration, sensor string, temp int) {
		t.Helper()
		if _, err := c.InsertOne(ctx, bson.D{{Key: "ts", Value: tsBase.Add(at)}, {Key: "sensor", Value: bson.D{{Key: "id", Value: sensor}}},
			{Key: "temp", Value: temp}}); err != nil {
			t.Fatal(err)
		}
	}
	insert(fdb.Collection("weather"), 5*time.Minute, "c", 30) // a new bucket on feature
	mustRun(t, fdb, bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "c"}})
	insert(coll, 6*time.Minute, "d", 40) // a new bucket on main
	mustRun(t, db, bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "d"}})
	mustRun(t, db, bson.D{{Key: "dumboMerge", Value: 1}, {Key: "mergeIn", Value: "feature"}})
	if got := tsTemps(t, coll, bson.D{}); got != "0 1 30 40" {
		t.Fatalf("after a clean merge: %q", got)
	}
	insert(fdb.Collection("weather"), 7*time.Minute, "a", 50) // sensor a's bucket on both sides
	mustRun(t, fdb, bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "a on feature"}})
	insert(coll, 8*time.Minute, "a", 60)
	mustRun(t, db, bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "a on main"}})
	mustRun(t, db, bson.D{{Key: "dumboMerge", Value: 1}, {Key: "mergeIn", Value: "feature"}})
	if got := tsTemps(t, coll, bson.D{}); got != "0 1 30 40 50 60" {
		t.Fatalf("after merging two sides' measurements of one bucket: %q", got)
	}
	if n, _ := db.Collection("system.buckets.weather").CountDocuments(ctx, bson.D{{Key: "meta.id", Value: "a"}}); n != 1 {
		t.Fatalf("sensor a has %d buckets after the merge, want its one", n)
	}
	// Both sides add to sensor b's bucket and delete from it: the other
	// side's changes are kept.
	insert(fdb.Collection("weather"), 9*time.Minute, "b", 70)
	if _, err := fdb.Collection("weather").DeleteOne(ctx, bson.D{{Key: "temp", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	mustRun(t, fdb, bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "b on feature"}})
	insert(coll, 10*time.Minute, "b", 80)
	mustRun(t, db, bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "b on main"}})
	mustRun(t, db, bson.D{{Key: "dumboMerge", Value: 1}, {Key: "mergeIn", Value: "feature"}})
	if got := tsTemps(t, coll, bson.D{}); got != "0 30 40 50 60 70 80" {
		t.Fatalf("after merging adds and a delete in one bucket: %q", got)
	}
	// Sensor c's bucket: deleted on main, added to on feature.
	insert(fdb.Collection("weather"), 11*time.Minute, "c", 90)
	mustRun(t, fdb, bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "c on feature"}})
	if _, err := coll.DeleteMany(ctx, bson.D{{Key: "sensor.id", Value: "c"}}); err != nil {
		t.Fatal(err)
	}
	mustRun(t, db, bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "no c on main"}})
	mustRun(t, db, bson.D{{Key: "dumboMerge", Value: 1}, {Key: "mergeIn", Value: "feature"}})
	if got := tsTemps(t, coll, bson.D{{Key: "sensor.id", Value: "c"}}); got != "90" {
		t.Fatalf("sensor c after merging its deletion with an addition: %q, want the addition only", got)
	}
	// Sensor a's bucket: deleted on feature (its 0 and 50), added to on
	// main since (60): main's addition stays.
	if _, err := fdb.Collection("weather").DeleteMany(ctx, bson.D{{Key: "sensor.id", Value: "a"}}); err != nil {
		t.Fatal(err)
	}
	mustRun(t, fdb, bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "no a on feature"}})
	mustRun(t, db, bson.D{{Key: "dumboMerge", Value: 1}, {Key: "mergeIn", Value: "feature"}})
	if got := tsTemps(t, coll, bson.D{{Key: "sensor.id", Value: "a"}}); got != "60" {
		t.Fatalf("sensor a after merging its deletion: %q, want main's addition only", got)
	}
}

// TestTimeSeriesOut: $out with timeseries makes a time-series collection
// of the pipeline's documents, and replaces the measurements of one with
// the same options; $merge into one is refused as into a view.
func TestTimeSeriesOut(t *testing.T) {
	db, coll := seedTimeseries(t, 6)
	out := func(target bson.D) error {
		t.Helper()
		cur, err := coll.Aggregate(ctx, bson.A{bson.D{{Key: "$match", Value: bson.D{{Key: "sensor.id", Value: "a"}}}},
			bson.D{{Key: "$project", Value: bson.D{{Key: "_id", Value: 0}}}}, bson.D{{Key: "$out", Value: target}}})
		if err == nil {
			err = cur.Close(ctx)
		}
		return err
	}
	ts := bson.D{{Key: "timeField", Value: "ts"}, {Key: "metaField", Value: "sensor"}}
	if err := out(bson.D{{Key: "db", Value: "tsdb"}, {Key: "coll", Value: "copy"}, {Key: "timeseries", Value: ts}}); err != nil {
		t.Fatal(err)
	}
	copied := db.Collection("copy")
	if got := tsTemps(t, copied, bson.D{}); got != "0 2 4" {
		t.Fatalf("the $out copy: %q", got)
	}
	names, _ := db.ListCollectionNames(ctx, bson.D{{Key: "type", Value: "timeseries"}})
	if fmt.Sprint(names) != "[copy weather]" && fmt.Sprint(names) != "[weather copy]" {
		t.Fatalf("time-series collections after $out: %v", names)
	}
	if _, err := coll.DeleteMany(ctx, bson.D{{Key: "temp", Value: 0}}); err != nil {
		t.Fatal(err)
	}
	if err := out(bson.D{{Key: "db", Value: "tsdb"}, {Key: "coll", Value: "copy"}}); err != nil {
		t.Fatal(err)
	}
	if got := tsTemps(t, copied, bson.D{}); got != "2 4" {
		t.Fatalf("the replaced $out copy: %q", got)
	}
	err := out(bson.D{{Key: "db", Value: "tsdb"}, {Key: "coll", Value: "copy"}, {Key: "timeseries", Value: bson.D{{Key: "timeField", Value: "ts"}}}})
	wantCode(t, err, 72, "InvalidOptions")
	_, err = coll.Aggregate(ctx, bson.A{bson.D{{Key: "$merge", Value: bson.D{{Key: "into", Value: "copy"}}}}})
	wantCode(t, err, 166, "CommandNotSupportedOnView")
	_, err = coll.Aggregate(ctx, bson.A{bson.D{{Key: "$project", Value: bson.D{{Key: "ts", Value: 0}}}},
		bson.D{{Key: "$out", Value: bson.D{{Key: "db", Value: "tsdb"}, {Key: "coll", Value: "bad"}, {Key: "timeseries", Value: ts}}}}})
	wantCode(t, err, 2, "BadValue")
}
