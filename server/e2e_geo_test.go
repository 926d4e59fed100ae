package server_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

func geoPoint(lng, lat float64) bson.D {
	return bson.D{{Key: "type", Value: "Point"}, {Key: "coordinates", Value: bson.A{lng, lat}}}
}

func geoBox(x0, y0, x1, y1 float64) bson.D {
	return bson.D{{Key: "type", Value: "Polygon"}, {Key: "coordinates", Value: bson.A{bson.A{
		bson.A{x0, y0}, bson.A{x1, y0}, bson.A{x1, y1}, bson.A{x0, y1}, bson.A{x0, y0}}}}}
}

func geoIDs(t *testing.T, coll *mongo.Collection, filter any, opts ...options.Lister[options.FindOptions]) []int32 {
	t.Helper()
	cur, err := coll.Find(ctx, filter, opts...)
	if err != nil {
		t.Fatalf("find %v: %v", filter, err)
	}
	var docs []struct {
		ID int32 `bson:"_id"`
	}
	if err := cur.All(ctx, &docs); err != nil {
		t.Fatal(err)
	}
	out := make([]int32, len(docs))
	for i, d := range docs {
		out[i] = d.ID
	}
	return out
}

// TestGeoOperatorsE2E: each geo operator through the driver, with and
// without a 2dsphere index, and mongod's errors.
func TestGeoOperatorsE2E(t *testing.T) {
	db, coll := startCollection(t, "geo", "places")
	docs := []any{
		bson.D{{Key: "_id", Value: int32(1)}, {Key: "loc", Value: geoPoint(0, 0)}},
		bson.D{{Key: "_id", Value: int32(2)}, {Key: "loc", Value: geoPoint(1, 1)}},
		bson.D{{Key: "_id", Value: int32(3)}, {Key: "loc", Value: geoPoint(3, 3)}},
		bson.D{{Key: "_id", Value: int32(4)}, {Key: "loc", Value: bson.A{179.9, 0.0}}},
		bson.D{{Key: "_id", Value: int32(5)}, {Key: "loc", Value: geoPoint(-179.9, 0)}},
		bson.D{{Key: "_id", Value: int32(6)}, {Key: "loc", Value: geoBox(10, 10, 12, 12)}},
		bson.D{{Key: "_id", Value: int32(7)}, {Key: "name", Value: "no location"}},
	}
	if _, err := coll.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	within := bson.D{{Key: "loc", Value: bson.D{{Key: "$geoWithin", Value: bson.D{{Key: "$geometry", Value: geoBox(-1, -1, 2, 2)}}}}}}
	antimeridian := bson.D{{Key: "loc", Value: bson.D{{Key: "$geoWithin", Value: bson.D{{Key: "$centerSphere", Value: bson.A{bson.A{180.0, 0.0}, 0.01}}}}}}}
	intersects := bson.D{{Key: "loc", Value: bson.D{{Key: "$geoIntersects", Value: bson.D{{Key: "$geometry", Value: geoPoint(11, 11)}}}}}}
	sorted := options.Find().SetSort(bson.D{{Key: "_id", Value: 1}})
	check := func(stage string) {
		t.Helper()
		if got := geoIDs(t, coll, within, sorted); fmt.Sprint(got) != "[1 2]" {
			t.Errorf("%s: $geoWithin: %v", stage, got)
		}
		if got := geoIDs(t, coll, antimeridian, sorted); fmt.Sprint(got) != "[4 5]" {
			t.Errorf("%s: $centerSphere across the antimeridian: %v", stage, got)
		}
		if got := geoIDs(t, coll, intersects, sorted); fmt.Sprint(got) != "[6]" {
			t.Errorf("%s: $geoIntersects: %v", stage, got)
		}
	}
	check("scan")
	near := bson.D{{Key: "loc", Value: bson.D{{Key: "$near", Value: bson.D{{Key: "$geometry", Value: geoPoint(0.9, 0.9)}, {Key: "$maxDistance", Value: 600000}}}}}}
	_, err := coll.Find(ctx, near)
	wantCode(t, err, 291, "NoQueryExecutionPlans")
	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "loc", Value: "2dsphere"}}}); err != nil {
		t.Fatal(err)
	}
	check("2dsphere")
	if got := geoIDs(t, coll, near); fmt.Sprint(got) != "[2 1 3]" {
		t.Errorf("$near: %v, want nearest first [2 1 3]", got)
	}
	if got := geoIDs(t, coll, near, options.Find().SetHint("loc_2dsphere")); fmt.Sprint(got) != "[2 1 3]" {
		t.Errorf("$near hinted to its index: %v", got)
	}
	_, err = coll.Find(ctx, near, options.Find().SetHint(bson.D{{Key: "$natural", Value: 1}}))
	wantCode(t, err, 291, "NoQueryExecutionPlans")
	nearSphere := bson.D{{Key: "loc", Value: bson.D{{Key: "$nearSphere", Value: bson.A{0.9, 0.9}}, {Key: "$minDistance", Value: 0.01}}}}
	if got := geoIDs(t, coll, nearSphere, options.Find().SetLimit(2)); fmt.Sprint(got) != "[1 3]" {
		t.Errorf("$nearSphere with $minDistance, limit 2: %v", got)
	}
	ex := mustRun(t, db, bson.D{{Key: "explain", Value: bson.D{{Key: "find", Value: "places"}, {Key: "filter", Value: within}}}})
	if s := fmt.Sprint(ex["queryPlanner"]); !containsString(s, "IXSCAN") || !containsString(s, "loc_2dsphere") {
		t.Errorf("explain of $geoWithin does not scan the index: %v", s)
	}
	ex = mustRun(t, db, bson.D{{Key: "explain", Value: bson.D{{Key: "find", Value: "places"}, {Key: "filter", Value: near}}}})
	if s := fmt.Sprint(ex["queryPlanner"]); !containsString(s, "GEO_NEAR_2DSPHERE") {
		t.Errorf("explain of $near: %v", s)
	}
	_, err = coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 100}, {Key: "loc", Value: bson.D{{Key: "type", Value: "Point"}, {Key: "coordinates", Value: bson.A{}}}}})
	var we mongo.WriteException
	if !errors.As(err, &we) || len(we.WriteErrors) != 1 || we.WriteErrors[0].Code != 16755 || !containsString(we.WriteErrors[0].Message, "Can't extract geo keys") {
		t.Fatalf("a bad point in a 2dsphere field: %v, want write error 16755", err)
	}
	_, err = coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 101}, {Key: "loc", Value: geoBox(0, 0, 1, 1)[:1]}})
	if !errors.As(err, &we) || we.WriteErrors[0].Code != 16755 {
		t.Fatalf("a geometry without coordinates: %v, want 16755", err)
	}
	_, err = coll.Find(ctx, bson.D{{Key: "loc", Value: bson.D{{Key: "$geoWithin", Value: bson.D{{Key: "$geometry", Value: geoPoint(0, 0)}}}}}})
	wantCode(t, err, 2, "BadValue")
	_, err = run(t, db, bson.D{{Key: "createIndexes", Value: "places"}, {Key: "indexes", Value: bson.A{bson.D{{Key: "key", Value: bson.D{{Key: "p", Value: "geoHaystack"}, {Key: "a", Value: 1}}}, {Key: "name", Value: "h"}}}}})
	wantCode(t, err, 67, "CannotCreateIndex")
	for _, c := range []struct {
		spec bson.D
		code int32
	}{
		{bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: 1}, {Key: "p", Value: "2d"}}}, {Key: "name", Value: "x"}}, 67},
		{bson.D{{Key: "key", Value: bson.D{{Key: "p", Value: "2d"}}}, {Key: "name", Value: "x"}, {Key: "bits", Value: 40}}, 67},
		{bson.D{{Key: "key", Value: bson.D{{Key: "p", Value: "2dsphere"}}}, {Key: "name", Value: "x"}, {Key: "bits", Value: 4}}, 197},
		{bson.D{{Key: "key", Value: bson.D{{Key: "p", Value: "2dsphere"}}}, {Key: "name", Value: "x"}, {Key: "2dsphereIndexVersion", Value: 1}}, 238},
		{bson.D{{Key: "key", Value: bson.D{{Key: "p", Value: "2dsphere"}, {Key: "h", Value: "hashed"}}}, {Key: "name", Value: "x"}}, 67},
	} {
		_, err = run(t, db, bson.D{{Key: "createIndexes", Value: "places"}, {Key: "indexes", Value: bson.A{c.spec}}})
		wantCode(t, err, c.code, "")
	}
	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "other", Value: "2dsphere"}}}); err != nil {
		t.Fatal(err)
	}
	_, err = coll.Aggregate(ctx, bson.A{bson.D{{Key: "$geoNear", Value: bson.D{{Key: "near", Value: geoPoint(0, 0)}, {Key: "distanceField", Value: "d"}}}}})
	wantCode(t, err, 27, "IndexNotFound")
	list := mustRun(t, db, bson.D{{Key: "listIndexes", Value: "places"}})
	if s := fmt.Sprint(list); !containsString(s, "2dsphereIndexVersion") {
		t.Errorf("listIndexes lacks 2dsphereIndexVersion: %v", s)
	}
}

// TestGeoIndexAgreesWithScan: random points and random regions answer
// the same through the 2dsphere index as by a collection scan, $near
// returns them by distance, and a 2d index agrees for $box and $near.
func TestGeoIndexAgreesWithScan(t *testing.T) {
	_, coll := startCollection(t, "geo", "random")
	rng := rand.New(rand.NewSource(17))
	var docs []any
	coords := map[int32][2]float64{}
	for i := 0; i < 2000; i++ {
		lng, lat := rng.Float64()*360-180, math.Asin(rng.Float64()*2-1)*180/math.Pi
		if i%10 == 0 { // crowd some near the antimeridian and the poles
			lng, lat = 179.5+rng.Float64()-0.5, rng.Float64()*4-2
			if lng > 180 {
				lng -= 360
			}
		}
		if i%10 == 1 {
			lat = 88 + rng.Float64()*2
		}
		coords[int32(i)] = [2]float64{lng, lat}
		docs = append(docs, bson.D{{Key: "_id", Value: int32(i)}, {Key: "loc", Value: geoPoint(lng, lat)}, {Key: "flat", Value: bson.A{lng, lat}}, {Key: "k", Value: int32(i % 3)}})
	}
	if _, err := coll.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	for _, m := range []mongo.IndexModel{{Keys: bson.D{{Key: "loc", Value: "2dsphere"}}}, {Keys: bson.D{{Key: "flat", Value: "2d"}}}} {
		if _, err := coll.Indexes().CreateOne(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	scan := options.Find().SetHint(bson.D{{Key: "$natural", Value: 1}}).SetSort(bson.D{{Key: "_id", Value: 1}})
	sorted := options.Find().SetSort(bson.D{{Key: "_id", Value: 1}})
	for q := 0; q < 40; q++ {
		lng, lat := rng.Float64()*360-180, rng.Float64()*170-85
		w, h := rng.Float64()*30+0.5, rng.Float64()*20+0.5
		x1 := math.Min(lng+w, 180)
		y1 := math.Min(lat+h, 89)
		filters := []bson.D{
			{{Key: "loc", Value: bson.D{{Key: "$geoWithin", Value: bson.D{{Key: "$geometry", Value: geoBox(lng, lat, x1, y1)}}}}}},
			{{Key: "loc", Value: bson.D{{Key: "$geoIntersects", Value: bson.D{{Key: "$geometry", Value: geoBox(lng, lat, x1, y1)}}}}}},
			{{Key: "loc", Value: bson.D{{Key: "$geoWithin", Value: bson.D{{Key: "$centerSphere", Value: bson.A{bson.A{lng, lat}, rng.Float64() * 0.3}}}}}}, {Key: "k", Value: int32(1)}},
			{{Key: "flat", Value: bson.D{{Key: "$geoWithin", Value: bson.D{{Key: "$box", Value: bson.A{bson.A{lng, lat}, bson.A{x1, y1}}}}}}}},
		}
		for _, f := range filters {
			a, b := geoIDs(t, coll, f, sorted), geoIDs(t, coll, f, scan)
			if fmt.Sprint(a) != fmt.Sprint(b) {
				t.Fatalf("%v: index %v, scan %v", f, a, b)
			}
		}
		center := geoPoint(lng, lat)
		maxD := rng.Float64() * 3e6
		near := bson.D{{Key: "loc", Value: bson.D{{Key: "$near", Value: bson.D{{Key: "$geometry", Value: center}, {Key: "$maxDistance", Value: maxD}}}}}}
		within := bson.D{{Key: "loc", Value: bson.D{{Key: "$geoWithin", Value: bson.D{{Key: "$centerSphere", Value: bson.A{bson.A{lng, lat}, maxD / 6378100}}}}}}}
		got, all := geoIDs(t, coll, near), geoIDs(t, coll, within, scan)
		if len(got) != len(all) {
			t.Fatalf("$near %v within %v m: %d documents, $centerSphere finds %d", center, maxD, len(got), len(all))
		}
		last := 0.0
		for _, id := range got {
			d := greatCircle(lng, lat, coords[id][0], coords[id][1])
			if d < last-1e-9 {
				t.Fatalf("$near from %v: %d at %v rad after %v rad", center, id, d, last)
			}
			last = d
		}
		limited := geoIDs(t, coll, near, options.Find().SetLimit(5))
		if len(got) >= 5 && fmt.Sprint(limited) != fmt.Sprint(got[:5]) {
			t.Fatalf("$near limit 5: %v, the first five of all: %v", limited, got[:5])
		}
		flatNear := bson.D{{Key: "flat", Value: bson.D{{Key: "$near", Value: bson.A{lng, lat}}, {Key: "$maxDistance", Value: 10.0}}}}
		flatWithin := bson.D{{Key: "flat", Value: bson.D{{Key: "$geoWithin", Value: bson.D{{Key: "$center", Value: bson.A{bson.A{lng, lat}, 10.0}}}}}}}
		a, b := geoIDs(t, coll, flatNear), geoIDs(t, coll, flatWithin, scan)
		if len(a) != len(b) {
			t.Fatalf("2d $near: %d documents, $center finds %d", len(a), len(b))
		}
		last = 0
		for _, id := range a {
			d := math.Hypot(coords[id][0]-lng, coords[id][1]-lat)
			if d < last-1e-9 {
				t.Fatalf("2d $near from %v, %v: %d at %v after %v", lng, lat, id, d, last)
			}
			last = d
		}
		rad := maxD / 6378100
		sphereOn2d := bson.D{{Key: "flat", Value: bson.D{{Key: "$nearSphere", Value: bson.A{lng, lat}}, {Key: "$maxDistance", Value: rad}}}}
		capOn2d := bson.D{{Key: "flat", Value: bson.D{{Key: "$geoWithin", Value: bson.D{{Key: "$centerSphere", Value: bson.A{bson.A{lng, lat}, rad}}}}}}}
		a, b, c := geoIDs(t, coll, sphereOn2d), geoIDs(t, coll, capOn2d, sorted), geoIDs(t, coll, capOn2d, scan)
		if len(a) != len(c) || fmt.Sprint(b) != fmt.Sprint(c) {
			t.Fatalf("2d $nearSphere: %d, $centerSphere by the 2d index %d, by scan %d", len(a), len(b), len(c))
		}
		last = 0
		for _, id := range a {
			d := greatCircle(lng, lat, coords[id][0], coords[id][1])
			if d < last-1e-9 {
				t.Fatalf("2d $nearSphere from %v, %v: %d at %v after %v", lng, lat, id, d, last)
			}
			last = d
		}
	}
	ex := mustRun(t, coll.Database(), bson.D{{Key: "explain", Value: bson.D{{Key: "find", Value: "random"},
		{Key: "filter", Value: bson.D{{Key: "flat", Value: bson.D{{Key: "$near", Value: bson.A{0.0, 0.0}}}}}}}}})
	if s := fmt.Sprint(ex["queryPlanner"]); !containsString(s, "GEO_NEAR_2D") || !containsString(s, "flat_2d") {
		t.Errorf("explain of a 2d $near: %v", s)
	}
	ex = mustRun(t, coll.Database(), bson.D{{Key: "explain", Value: bson.D{{Key: "find", Value: "random"},
		{Key: "filter", Value: bson.D{{Key: "flat", Value: bson.D{{Key: "$geoWithin", Value: bson.D{{Key: "$box", Value: bson.A{bson.A{0, 0}, bson.A{1, 1}}}}}}}}}}}})
	if s := fmt.Sprint(ex["queryPlanner"]); !containsString(s, "IXSCAN") || !containsString(s, "flat_2d") {
		t.Errorf("explain of a 2d $box: %v", s)
	}
}

// greatCircle is the angle between two longitude/latitude points (the
// spherical law of cosines, precise enough to check an order).
func greatCircle(lng1, lat1, lng2, lat2 float64) float64 {
	r := math.Pi / 180
	c := math.Sin(lat1*r)*math.Sin(lat2*r) + math.Cos(lat1*r)*math.Cos(lat2*r)*math.Cos((lng1-lng2)*r)
	return math.Acos(math.Max(-1, math.Min(1, c)))
}

// TestGeoNearStageE2E: $geoNear reads the geo index nearest first, adds
// distanceField (times distanceMultiplier) and includeLocs, honours
// query, key, minDistance and maxDistance, finds its key alone when the
// collection has one geo index, and answers $meta.
func TestGeoNearStageE2E(t *testing.T) {
	db, coll := startCollection(t, "geo", "shops")
	var docs []any
	for i := 0; i < 50; i++ {
		docs = append(docs, bson.D{{Key: "_id", Value: int32(i)}, {Key: "at", Value: geoPoint(float64(i)*0.1, 0)}, {Key: "kind", Value: int32(i % 2)}})
	}
	if _, err := coll.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	pipeline := bson.A{
		bson.D{{Key: "$geoNear", Value: bson.D{{Key: "near", Value: geoPoint(2.02, 0)}, {Key: "distanceField", Value: "dist.m"},
			{Key: "query", Value: bson.D{{Key: "kind", Value: int32(0)}}}, {Key: "includeLocs", Value: "where"},
			{Key: "maxDistance", Value: 50000}, {Key: "distanceMultiplier", Value: 0.001}}}},
		bson.D{{Key: "$limit", Value: 3}},
		bson.D{{Key: "$project", Value: bson.D{{Key: "dist", Value: 1}, {Key: "where", Value: 1}, {Key: "meta", Value: bson.D{{Key: "$meta", Value: "geoNearDistance"}}}}}},
	}
	_, err := coll.Aggregate(ctx, pipeline)
	wantCode(t, err, 291, "NoQueryExecutionPlans")
	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "at", Value: "2dsphere"}, {Key: "kind", Value: 1}}}); err != nil {
		t.Fatal(err)
	}
	cur, err := coll.Aggregate(ctx, pipeline)
	if err != nil {
		t.Fatal(err)
	}
	var got []bson.M
	if err := cur.All(ctx, &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0]["_id"] != int32(20) || got[1]["_id"] != int32(22) || got[2]["_id"] != int32(18) {
		t.Fatalf("$geoNear: %v, want _ids 20, 22, 18", got)
	}
	km := get(got[0], "dist", "m").(float64)
	if math.Abs(km-2.2264) > 0.01 || got[0]["where"] == nil || math.Abs(got[0]["meta"].(float64)-km) > 1e-9 {
		t.Fatalf("distance in km, location, $meta: %v", got[0])
	}
	ex := mustRun(t, db, bson.D{{Key: "explain", Value: bson.D{{Key: "aggregate", Value: "shops"}, {Key: "pipeline", Value: pipeline}, {Key: "cursor", Value: bson.D{}}}}})
	if s := fmt.Sprint(ex); !containsString(s, "GEO_NEAR_2DSPHERE") {
		t.Fatalf("explain of $geoNear: %v", s)
	}
	_, err = coll.Aggregate(ctx, bson.A{bson.D{{Key: "$match", Value: bson.D{}}}, pipeline[0]})
	wantCode(t, err, 40603, "")
	_, err = coll.Aggregate(ctx, bson.A{bson.D{{Key: "$geoNear", Value: bson.D{{Key: "near", Value: geoPoint(0, 0)}}}}})
	wantCode(t, err, 16606, "")
	// find with $near and $meta geoNearDistance in its projection
	cur2, err := coll.Find(ctx, bson.D{{Key: "at", Value: bson.D{{Key: "$near", Value: bson.D{{Key: "$geometry", Value: geoPoint(0, 0)}}}}}},
		options.Find().SetLimit(2).SetProjection(bson.D{{Key: "d", Value: bson.D{{Key: "$meta", Value: "geoNearDistance"}}}}))
	if err != nil {
		t.Fatal(err)
	}
	var near []bson.M
	if err := cur2.All(ctx, &near); err != nil {
		t.Fatal(err)
	}
	if len(near) != 2 || near[0]["_id"] != int32(0) || near[1]["d"] == nil {
		t.Fatalf("find $near with $meta: %v", near)
	}
}

// TestGeoIndexVersionControl: a collection with a 2dsphere index is
// committed, branched, written on both branches and merged; geo queries
// answer on each branch by the index, and after the merge from both
// sides' points, also after a restart.
func TestGeoIndexVersionControl(t *testing.T) {
	ts := startServer(t)
	c := ts.client()
	places := c.Database("maps").Collection("places")
	if _, err := places.InsertMany(ctx, []any{
		bson.D{{Key: "_id", Value: int32(1)}, {Key: "loc", Value: geoPoint(2.35, 48.85)}},
		bson.D{{Key: "_id", Value: int32(2)}, {Key: "loc", Value: geoPoint(-0.12, 51.5)}},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := places.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "loc", Value: "2dsphere"}}}); err != nil {
		t.Fatal(err)
	}
	vc(t, c, "maps", bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "two cities"}})
	vc(t, c, "maps", bson.D{{Key: "dumboBranch", Value: 1}, {Key: "branch", Value: "south"}})
	south := c.Database("maps@south").Collection("places")
	if _, err := south.InsertOne(ctx, bson.D{{Key: "_id", Value: int32(3)}, {Key: "loc", Value: geoPoint(5.37, 43.3)}}); err != nil {
		t.Fatal(err)
	}
	vc(t, c, "maps@south", bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "Marseille"}})
	if _, err := places.InsertOne(ctx, bson.D{{Key: "_id", Value: int32(4)}, {Key: "loc", Value: geoPoint(4.35, 50.85)}}); err != nil {
		t.Fatal(err)
	}
	vc(t, c, "maps", bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "Brussels"}})
	france := bson.D{{Key: "loc", Value: bson.D{{Key: "$geoWithin", Value: bson.D{{Key: "$geometry", Value: geoBox(-5, 42, 8, 51)}}}}}}
	sorted := options.Find().SetSort(bson.D{{Key: "_id", Value: 1}})
	nearParis := bson.D{{Key: "loc", Value: bson.D{{Key: "$near", Value: bson.D{{Key: "$geometry", Value: geoPoint(2.35, 48.85)}}}}}}
	check := func(coll *mongo.Collection, within, near string) {
		t.Helper()
		if got := geoIDs(t, coll, france, sorted); fmt.Sprint(got) != within {
			t.Errorf("%s: $geoWithin %v, want %s", coll.Database().Name(), got, within)
		}
		if got := geoIDs(t, coll, nearParis); fmt.Sprint(got) != near {
			t.Errorf("%s: $near %v, want %s", coll.Database().Name(), got, near)
		}
	}
	check(places, "[1 4]", "[1 4 2]")
	check(south, "[1 3]", "[1 2 3]")
	vc(t, c, "maps", bson.D{{Key: "dumboMerge", Value: 1}, {Key: "mergeIn", Value: "south"}})
	check(places, "[1 3 4]", "[1 4 2 3]")
	ts.restart()
	c = ts.client()
	check(c.Database("maps").Collection("places"), "[1 3 4]", "[1 4 2 3]")
	check(c.Database("maps@south").Collection("places"), "[1 3]", "[1 2 3]")
}

// TestGeoShapesIndexAgreesWithScan: lines and polygons of many sizes in
// a 2dsphere index (keys are coverings, found by ancestors too) answer
// $geoIntersects, $geoWithin and $near as a collection scan does.
func TestGeoShapesIndexAgreesWithScan(t *testing.T) {
	_, coll := startCollection(t, "geo", "shapes")
	rng := rand.New(rand.NewSource(29))
	var docs []any
	for i := 0; i < 600; i++ {
		lng, lat := rng.Float64()*340-170, rng.Float64()*160-80
		size := math.Pow(10, rng.Float64()*3-2) // 0.01 to 10 degrees
		var shape bson.D
		switch i % 3 {
		case 0:
			shape = geoBox(lng, lat, lng+size, math.Min(lat+size, 89))
		case 1:
			shape = bson.D{{Key: "type", Value: "LineString"}, {Key: "coordinates", Value: bson.A{bson.A{lng, lat}, bson.A{lng + size, math.Min(lat+size/2, 89)}}}}
		default:
			shape = geoPoint(lng, lat)
		}
		docs = append(docs, bson.D{{Key: "_id", Value: int32(i)}, {Key: "g", Value: shape}})
	}
	if _, err := coll.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "g", Value: "2dsphere"}}}); err != nil {
		t.Fatal(err)
	}
	scan := options.Find().SetHint(bson.D{{Key: "$natural", Value: 1}}).SetSort(bson.D{{Key: "_id", Value: 1}})
	sorted := options.Find().SetSort(bson.D{{Key: "_id", Value: 1}})
	for q := 0; q < 40; q++ {
		size := math.Pow(10, rng.Float64()*3-1.5)
		lng, lat := rng.Float64()*(340-size)-170, rng.Float64()*160-80
		region := geoBox(lng, lat, lng+size, math.Min(lat+size, 89))
		for _, f := range []bson.D{
			{{Key: "g", Value: bson.D{{Key: "$geoIntersects", Value: bson.D{{Key: "$geometry", Value: region}}}}}},
			{{Key: "g", Value: bson.D{{Key: "$geoWithin", Value: bson.D{{Key: "$geometry", Value: region}}}}}},
			{{Key: "g", Value: bson.D{{Key: "$geoIntersects", Value: bson.D{{Key: "$geometry", Value: geoPoint(lng, lat)}}}}}},
		} {
			a, b := geoIDs(t, coll, f, sorted), geoIDs(t, coll, f, scan)
			if fmt.Sprint(a) != fmt.Sprint(b) {
				t.Fatalf("%v: index %v, scan %v", f, a, b)
			}
		}
		maxD := rng.Float64() * 2e6
		near := bson.D{{Key: "g", Value: bson.D{{Key: "$near", Value: bson.D{{Key: "$geometry", Value: geoPoint(lng, lat)}, {Key: "$maxDistance", Value: maxD}}}}}}
		got := geoIDs(t, coll, near)
		limited := geoIDs(t, coll, near, options.Find().SetLimit(3))
		if len(got) >= 3 && fmt.Sprint(limited) != fmt.Sprint(got[:3]) {
			t.Fatalf("$near limit 3 over shapes: %v, the first three of all: %v", limited, got[:3])
		}
	}
}
