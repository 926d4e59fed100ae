package server_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// tsBase is the first measurement's time in the time-series tests.
var tsBase = time.Date(2024, 3, 1, 10, 0, 0, 0, time.UTC)

// seedTimeseries makes the time-series collection db.weather (timeField
// "ts", metaField "sensor") with n measurements a minute apart, sensors
// "a" and "b" taking turns.
func seedTimeseries(t *testing.T, n int, extra ...bson.E) (*mongo.Database, *mongo.Collection) {
	t.Helper()
	db, _ := startCollection(t, "tsdb", "unused")
	ts := bson.D{{Key: "timeField", Value: "ts"}, {Key: "metaField", Value: "sensor"}}
	mustRun(t, db, append(bson.D{{Key: "create", Value: "weather"}, {Key: "timeseries", Value: ts}}, extra...))
	coll := db.Collection("weather")
	if n == 0 {
		return db, coll
	}
	docs := make([]any, n)
	for i := range docs {
		docs[i] = bson.D{{Key: "ts", Value: tsBase.Add(time.Duration(i) * time.Minute)},
			{Key: "sensor", Value: bson.D{{Key: "id", Value: string(rune('a' + i%2))}}}, {Key: "temp", Value: i}}
	}
	if _, err := coll.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	return db, coll
}

// TestTimeSeriesCreateErrors: create refuses bad timeseries options with
// mongod's codes.
func TestTimeSeriesCreateErrors(t *testing.T) {
	db, _ := startCollection(t, "tsdb", "unused")
	cases := []struct {
		ts   bson.D
		code int32
		name string
	}{
		{bson.D{{Key: "metaField", Value: "m"}}, 40414, ""},
		{bson.D{{Key: "timeField", Value: 1}}, 14, "TypeMismatch"},
		{bson.D{{Key: "timeField", Value: "t"}, {Key: "foo", Value: 1}}, 40415, ""},
		{bson.D{{Key: "timeField", Value: "t"}, {Key: "granularity", Value: "days"}}, 2, "BadValue"},
		{bson.D{{Key: "timeField", Value: "t"}, {Key: "metaField", Value: "t"}}, 72, "InvalidOptions"},
		{bson.D{{Key: "timeField", Value: "t"}, {Key: "metaField", Value: "_id"}}, 72, "InvalidOptions"},
		{bson.D{{Key: "timeField", Value: "a.b"}}, 72, "InvalidOptions"},
		{bson.D{{Key: "timeField", Value: "t"}, {Key: "granularity", Value: "hours"}, {Key: "bucketMaxSpanSeconds", Value: 60}}, 72, "InvalidOptions"},
		{bson.D{{Key: "timeField", Value: "t"}, {Key: "granularity", Value: "hours"}, {Key: "bucketRoundingSeconds", Value: 60}}, 72, "InvalidOptions"},
		{bson.D{{Key: "timeField", Value: "t"}, {Key: "bucketMaxSpanSeconds", Value: 60}}, 72, "InvalidOptions"},
		{bson.D{{Key: "timeField", Value: "t"}, {Key: "bucketMaxSpanSeconds", Value: 60}, {Key: "bucketRoundingSeconds", Value: 30}}, 72, "InvalidOptions"},
		{bson.D{{Key: "timeField", Value: "t"}, {Key: "bucketMaxSpanSeconds", Value: 0}, {Key: "bucketRoundingSeconds", Value: 0}}, 51024, ""},
		{bson.D{{Key: "timeField", Value: "t"}, {Key: "bucketMaxSpanSeconds", Value: "60"}}, 14, "TypeMismatch"},
		{bson.D{{Key: "timeField", Value: "$t"}}, 2, "BadValue"},
		{bson.D{{Key: "timeField", Value: "t"}, {Key: "bucketMaxSpanSeconds", Value: 31536001}, {Key: "bucketRoundingSeconds", Value: 31536001}}, 51024, ""},
	}
	for i, c := range cases {
		_, err := run(t, db, bson.D{{Key: "create", Value: fmt.Sprint("c", i)}, {Key: "timeseries", Value: c.ts}})
		wantCode(t, err, c.code, c.name)
	}
	_, err := run(t, db, bson.D{{Key: "create", Value: "x"}, {Key: "timeseries", Value: "t"}})
	wantCode(t, err, 14, "TypeMismatch")
	_, err = run(t, db, bson.D{{Key: "create", Value: "x"}, {Key: "timeseries", Value: bson.D{{Key: "timeField", Value: "t"}}},
		{Key: "expireAfterSeconds", Value: -1}})
	wantCode(t, err, 72, "InvalidOptions")
	_, err = run(t, db, bson.D{{Key: "create", Value: "x"}, {Key: "timeseries", Value: bson.D{{Key: "timeField", Value: "t"}}},
		{Key: "expireAfterSeconds", Value: "never"}})
	wantCode(t, err, 14, "TypeMismatch")
	_, err = run(t, db, bson.D{{Key: "create", Value: "x"}, {Key: "timeseries", Value: bson.D{{Key: "timeField", Value: "t"}}},
		{Key: "collation", Value: bson.D{{Key: "locale", Value: "fr"}}}})
	wantCode(t, err, 238, "NotImplemented")
	mustRun(t, db, bson.D{{Key: "create", Value: "x"}, {Key: "timeseries", Value: bson.D{{Key: "timeField", Value: "t"}}}})
	_, err = run(t, db, bson.D{{Key: "create", Value: "x"}, {Key: "timeseries", Value: bson.D{{Key: "timeField", Value: "t"}}}})
	wantCode(t, err, 48, "NamespaceExists")
}

// TestTimeSeriesListCollections: the collection lists as "timeseries"
// with its options and their defaults, its bucket collection as mongod
// lists it; drop drops both.
func TestTimeSeriesListCollections(t *testing.T) {
	db, _ := seedTimeseries(t, 0, bson.E{Key: "expireAfterSeconds", Value: 3600})
	mustRun(t, db, bson.D{{Key: "create", Value: "custom"}, {Key: "timeseries", Value: bson.D{{Key: "timeField", Value: "t"},
		{Key: "bucketMaxSpanSeconds", Value: 7200}, {Key: "bucketRoundingSeconds", Value: 7200}}}})
	specs, err := db.ListCollectionSpecifications(ctx, bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, s := range specs {
		got[s.Name] = s.Type + " " + s.Options.String()
	}
	want := map[string]string{
		"weather":                `timeseries {"timeseries": {"timeField": "ts","metaField": "sensor","granularity": "seconds","bucketMaxSpanSeconds": {"$numberInt":"3600"}},"expireAfterSeconds": {"$numberLong":"3600"}}`,
		"custom":                 `timeseries {"timeseries": {"timeField": "t","bucketRoundingSeconds": {"$numberInt":"7200"},"bucketMaxSpanSeconds": {"$numberInt":"7200"}}}`,
		"system.buckets.weather": `collection {"clusteredIndex": true,"expireAfterSeconds": {"$numberLong":"3600"},"timeseries": {"timeField": "ts","metaField": "sensor","granularity": "seconds","bucketMaxSpanSeconds": {"$numberInt":"3600"}}}`,
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("%s lists as\n%s\nwant\n%s", name, got[name], w)
		}
	}
	if _, ok := got["system.views"]; !ok {
		t.Errorf("system.views is not listed: %v", got)
	}
	names, err := db.ListCollectionNames(ctx, bson.D{{Key: "type", Value: "timeseries"}})
	if err != nil || fmt.Sprint(names) != "[custom weather]" && fmt.Sprint(names) != "[weather custom]" {
		t.Fatalf("filter on type: %v %v", names, err)
	}
	if err := db.Collection("weather").Drop(ctx); err != nil {
		t.Fatal(err)
	}
	names, _ = db.ListCollectionNames(ctx, bson.D{{Key: "name", Value: bson.D{{Key: "$regex", Value: "weather"}}}})
	if len(names) != 0 {
		t.Fatalf("after drop: %v", names)
	}
	if err := db.Collection("system.buckets.custom").Drop(ctx); err != nil {
		t.Fatal(err)
	}
	names, _ = db.ListCollectionNames(ctx, bson.D{{Key: "name", Value: bson.D{{Key: "$regex", Value: "custom"}}}})
	if len(names) != 0 {
		t.Fatalf("after dropping the buckets: %v", names)
	}
}

// TestTimeSeriesInsertAndFind: measurements go into buckets (same meta and
// span: one bucket) and read back as documents with their meta.
func TestTimeSeriesInsertAndFind(t *testing.T) {
	db, coll := seedTimeseries(t, 10)
	buckets := db.Collection("system.buckets.weather")
	if n, err := buckets.CountDocuments(ctx, bson.D{}); err != nil || n != 2 {
		t.Fatalf("10 measurements of 2 sensors within an hour make %d buckets (%v), want 2", n, err)
	}
	var b bson.M
	if err := buckets.FindOne(ctx, bson.D{{Key: "meta.id", Value: "a"}}).Decode(&b); err != nil {
		t.Fatal(err)
	}
	if get(b, "control", "version") != int32(1) || get(b, "control", "min", "temp") != int32(0) ||
		get(b, "control", "max", "temp") != int32(8) || get(b, "data", "temp", "4") != int32(8) {
		t.Fatalf("bucket: %v", b)
	}
	if m := get(b, "control", "min", "ts").(bson.DateTime); m.Time().UTC() != tsBase {
		t.Fatalf("control.min.ts %v, want the start rounded to the minute %v", m.Time(), tsBase)
	}
	var docs []bson.M
	cur, err := coll.Find(ctx, bson.D{{Key: "sensor.id", Value: "b"}}, options.Find().SetSort(bson.D{{Key: "ts", Value: 1}}))
	if err != nil {
		t.Fatal(err)
	}
	if err := cur.All(ctx, &docs); err != nil {
		t.Fatal(err)
	}
	if len(docs) != 5 || docs[0]["temp"] != int32(1) || get(docs[0], "sensor", "id") != "b" || docs[0]["_id"] == nil || len(docs[0]) != 4 {
		t.Fatalf("find: %v", docs)
	}
	// Another measurement out of the span starts a bucket; one in it joins.
	if _, err := coll.InsertMany(ctx, []any{
		bson.D{{Key: "ts", Value: tsBase.Add(2 * time.Hour)}, {Key: "sensor", Value: bson.D{{Key: "id", Value: "a"}}}},
		bson.D{{Key: "ts", Value: tsBase.Add(30 * time.Minute)}, {Key: "sensor", Value: bson.D{{Key: "id", Value: "a"}}}},
	}); err != nil {
		t.Fatal(err)
	}
	if n, _ := buckets.CountDocuments(ctx, bson.D{}); n != 3 {
		t.Fatalf("%d buckets, want 3", n)
	}
	if n, err := coll.CountDocuments(ctx, bson.D{}); err != nil || n != 12 {
		t.Fatalf("countDocuments %d %v", n, err)
	}
	if c := mustRun(t, db, bson.D{{Key: "count", Value: "weather"}}); num(c["n"]) != 12 {
		t.Fatalf("count: %v", c)
	}
	var ids []string
	if err := coll.Distinct(ctx, "sensor.id", bson.D{}).Decode(&ids); err != nil || fmt.Sprint(ids) != "[a b]" {
		t.Fatalf("distinct: %v %v", ids, err)
	}
	cur, err = coll.Aggregate(ctx, bson.A{bson.D{{Key: "$group", Value: bson.D{{Key: "_id", Value: "$sensor.id"},
		{Key: "n", Value: bson.D{{Key: "$sum", Value: 1}}}}}}, bson.D{{Key: "$sort", Value: bson.D{{Key: "_id", Value: 1}}}}})
	if err != nil {
		t.Fatal(err)
	}
	docs = nil
	if err := cur.All(ctx, &docs); err != nil || len(docs) != 2 || docs[0]["n"] != int32(7) {
		t.Fatalf("aggregate: %v %v", docs, err)
	}
}

// TestTimeSeriesInsertErrors: a measurement without its time, or with a
// time that is not a date, is refused with mongod's error; duplicate _ids
// are allowed; an ordered insert stops at the bad one.
func TestTimeSeriesInsertErrors(t *testing.T) {
	_, coll := seedTimeseries(t, 0)
	_, err := coll.InsertOne(ctx, bson.D{{Key: "temp", Value: 1}})
	var we mongo.WriteException
	if !errors.As(err, &we) || len(we.WriteErrors) != 1 || we.WriteErrors[0].Code != 2 ||
		we.WriteErrors[0].Message != "'ts' must be present and contain a valid BSON UTC datetime value" {
		t.Fatalf("no time: %v", err)
	}
	_, err = coll.InsertOne(ctx, bson.D{{Key: "ts", Value: "yesterday"}})
	if !errors.As(err, &we) || we.WriteErrors[0].Code != 2 {
		t.Fatalf("a string time: %v", err)
	}
	_, err = coll.InsertMany(ctx, []any{
		bson.D{{Key: "_id", Value: 1}, {Key: "ts", Value: tsBase}},
		bson.D{{Key: "_id", Value: 1}, {Key: "ts", Value: tsBase.Add(time.Second)}},
		bson.D{{Key: "_id", Value: 2}},
		bson.D{{Key: "_id", Value: 3}, {Key: "ts", Value: tsBase}},
	})
	var bwe mongo.BulkWriteException
	if !errors.As(err, &bwe) || len(bwe.WriteErrors) != 1 || bwe.WriteErrors[0].Index != 2 {
		t.Fatalf("ordered insert: %v", err)
	}
	if n, _ := coll.CountDocuments(ctx, bson.D{{Key: "_id", Value: 1}}); n != 2 {
		t.Fatalf("%d measurements with _id 1, want both", n)
	}
	if n, _ := coll.CountDocuments(ctx, bson.D{}); n != 2 {
		t.Fatalf("%d measurements, want 2: the ordered insert stopped", n)
	}
	_, err = coll.InsertMany(ctx, []any{
		bson.D{{Key: "_id", Value: 5}},
		bson.D{{Key: "_id", Value: 6}, {Key: "ts", Value: tsBase}},
		bson.D{{Key: "_id", Value: 7}, {Key: "ts", Value: int64(5)}},
		bson.D{{Key: "_id", Value: 8}, {Key: "ts", Value: tsBase}},
	}, options.InsertMany().SetOrdered(false))
	if !errors.As(err, &bwe) || len(bwe.WriteErrors) != 2 || bwe.WriteErrors[0].Index != 0 || bwe.WriteErrors[1].Index != 2 {
		t.Fatalf("unordered insert: %v", err)
	}
	if n, _ := coll.CountDocuments(ctx, bson.D{}); n != 4 {
		t.Fatalf("%d measurements, want 4: the unordered insert went on", n)
	}
}

// TestTimeSeriesBucketLimits: a bucket holds at most 1000 measurements,
// and with granularity "minutes" a bucket starts on the hour and spans a
// day.
func TestTimeSeriesBucketLimits(t *testing.T) {
	db, _ := startCollection(t, "tsdb", "unused")
	mustRun(t, db, bson.D{{Key: "create", Value: "m"}, {Key: "timeseries", Value: bson.D{{Key: "timeField", Value: "ts"},
		{Key: "granularity", Value: "minutes"}}}})
	coll := db.Collection("m")
	start := tsBase.Add(17*time.Minute + 3*time.Second)
	docs := make([]any, 2500)
	for i := range docs {
		docs[i] = bson.D{{Key: "ts", Value: start.Add(time.Duration(i) * time.Second)}}
	}
	if _, err := coll.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	buckets := db.Collection("system.buckets.m")
	if n, _ := buckets.CountDocuments(ctx, bson.D{}); n != 3 {
		t.Fatalf("2500 measurements make %d buckets, want 3 of at most 1000", n)
	}
	var b bson.M
	if err := buckets.FindOne(ctx, bson.D{}, options.FindOne().SetSort(bson.D{{Key: "_id", Value: 1}})).Decode(&b); err != nil {
		t.Fatal(err)
	}
	if m := get(b, "control", "min", "ts").(bson.DateTime); m.Time().UTC() != tsBase {
		t.Fatalf("the first bucket starts at %v, want the hour %v", m.Time().UTC(), tsBase)
	}
	if id := b["_id"].(bson.ObjectID); id.Timestamp().UTC() != tsBase {
		t.Fatalf("the bucket's _id time is %v, want its start", id.Timestamp())
	}
	// A day later is out of the span: a new bucket.
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "ts", Value: tsBase.Add(25 * time.Hour)}}); err != nil {
		t.Fatal(err)
	}
	if n, _ := buckets.CountDocuments(ctx, bson.D{}); n != 4 {
		t.Fatalf("%d buckets, want 4", n)
	}
	if n, _ := coll.CountDocuments(ctx, bson.D{}); n != 2501 {
		t.Fatalf("%d measurements", n)
	}
}

// TestTimeSeriesShapes: measurements with different fields, without the
// meta field, before 1970, and time ranges at their bounds read back as
// they went in.
func TestTimeSeriesShapes(t *testing.T) {
	_, coll := seedTimeseries(t, 0)
	old := time.Date(1965, 5, 1, 12, 0, 30, 0, time.UTC)
	docs := []any{
		bson.D{{Key: "_id", Value: 1}, {Key: "ts", Value: tsBase}, {Key: "a", Value: 1}},
		bson.D{{Key: "_id", Value: 2}, {Key: "ts", Value: tsBase.Add(time.Second)}, {Key: "b", Value: "x"}},
		bson.D{{Key: "_id", Value: 3}, {Key: "ts", Value: tsBase.Add(2 * time.Second)}, {Key: "sensor", Value: "s"}, {Key: "a", Value: 3}},
		bson.D{{Key: "_id", Value: 4}, {Key: "ts", Value: old}, {Key: "sensor", Value: "s"}},
		bson.D{{Key: "_id", Value: 5}, {Key: "ts", Value: old.Add(-time.Hour)}, {Key: "sensor", Value: "s"}},
	}
	if _, err := coll.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	read := func(filter bson.D) string {
		t.Helper()
		cur, err := coll.Find(ctx, filter, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}))
		if err != nil {
			t.Fatal(err)
		}
		var got []bson.M
		if err := cur.All(ctx, &got); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, d := range got {
			out = append(out, fmt.Sprintf("%v:%d", d["_id"], len(d)))
		}
		return fmt.Sprint(out)
	}
	if got := read(bson.D{}); got != "[1:3 2:3 3:4 4:3 5:3]" {
		t.Fatalf("the measurements' fields: %s", got)
	}
	if got := read(bson.D{{Key: "a", Value: bson.D{{Key: "$exists", Value: false}}}}); got != "[2:3 4:3 5:3]" {
		t.Fatalf("a sparse field: %s", got)
	}
	if got := read(bson.D{{Key: "sensor", Value: nil}}); got != "[1:3 2:3]" {
		t.Fatalf("no meta: %s", got)
	}
	if got := read(bson.D{{Key: "ts", Value: bson.D{{Key: "$lt", Value: tsBase.Add(2 * time.Second)}, {Key: "$gte", Value: tsBase}}}}); got != "[1:3 2:3]" {
		t.Fatalf("a range's bounds: %s", got)
	}
	if got := read(bson.D{{Key: "ts", Value: bson.D{{Key: "$lte", Value: tsBase.Add(2 * time.Second)}, {Key: "$gt", Value: tsBase}}}}); got != "[2:3 3:4]" {
		t.Fatalf("a range's bounds: %s", got)
	}
	if got := read(bson.D{{Key: "ts", Value: bson.D{{Key: "$lt", Value: time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)}}}}); got != "[4:3 5:3]" {
		t.Fatalf("before 1970: %s", got)
	}
	if got := read(bson.D{{Key: "ts", Value: old}}); got != "[4:3]" {
		t.Fatalf("a time before 1970: %s", got)
	}
	if got := read(bson.D{{Key: "ts", Value: bson.D{{Key: "$gte", Value: old.Add(-30 * time.Minute)}}}, {Key: "sensor", Value: "s"}}); got != "[3:4 4:3]" {
		t.Fatalf("a range from before 1970 with the meta: %s", got)
	}
}
