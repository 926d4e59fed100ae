package server_test

import (
	"math"
	"math/rand"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// BenchmarkGeo measures geo queries over 100,000 points spread
// evenly on the sphere, with a 2dsphere index:
//
//	FindOneByID      the yardstick
//	Near100          $near returning 100 (target: at most 20 x FindOneByID)
//	IDRange100       100 documents by an _id range: the floor of returning 100
//	WithinIndexed    $geoWithin of about 1% of the points ($centerSphere)
//	IDRange1020      1,020 documents by an _id range: the floor of
//	                 returning as many as WithinIndexed
//	WithinScan       the same, hinted to a collection scan (target: at
//	                 least 20 x WithinIndexed)
//
// go test -run XXX -bench BenchmarkGeo -benchtime 200x ./server/
func BenchmarkGeo(b *testing.B) {
	ts := startServer(b)
	coll := ts.client().Database("bench").Collection("geo")
	const n = 100_000
	rng := rand.New(rand.NewSource(1))
	batch := make([]any, 0, 5000)
	for i := 0; i < n; i++ {
		lng, lat := rng.Float64()*360-180, math.Asin(rng.Float64()*2-1)*180/math.Pi
		batch = append(batch, bson.D{{Key: "_id", Value: int32(i)}, {Key: "loc", Value: geoPoint(lng, lat)}, {Key: "v", Value: int32(i)}})
		if len(batch) == cap(batch) {
			if _, err := coll.InsertMany(ctx, batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "loc", Value: "2dsphere"}}}); err != nil {
		b.Fatal(err)
	}
	// A cap holds (1 - cos r) / 2 of the sphere: 1% at cos r = 0.98.
	within := func(i int) bson.D {
		c := bson.A{float64(i%340) - 170, float64(i%140) - 70}
		return bson.D{{Key: "loc", Value: bson.D{{Key: "$geoWithin", Value: bson.D{{Key: "$centerSphere", Value: bson.A{c, math.Acos(0.98)}}}}}}}
	}
	count := func(b *testing.B, filter bson.D, opts ...options.Lister[options.FindOptions]) int {
		cur, err := coll.Find(ctx, filter, opts...)
		if err != nil {
			b.Fatal(err)
		}
		k := 0
		for cur.Next(ctx) {
			k++
		}
		if err := cur.Err(); err != nil {
			b.Fatal(err)
		}
		cur.Close(ctx)
		return k
	}
	b.Run("FindOneByID", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: int32(i % n)}}).Err(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Near100", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			f := bson.D{{Key: "loc", Value: bson.D{{Key: "$near", Value: bson.D{{Key: "$geometry", Value: geoPoint(float64(i%340)-170, float64(i%140)-70)}}}}}}
			if k := count(b, f, options.Find().SetLimit(100)); k != 100 {
				b.Fatalf("$near: %d documents", k)
			}
		}
	})
	b.Run("WithinIndexed", func(b *testing.B) {
		got := 0
		for i := 0; i < b.N; i++ {
			got += count(b, within(i))
		}
		b.ReportMetric(float64(got)/float64(b.N), "docs/op")
	})
	b.Run("IDRange100", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			count(b, bson.D{{Key: "_id", Value: bson.D{{Key: "$lt", Value: 100}}}})
		}
	})
	b.Run("IDRange1020", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			count(b, bson.D{{Key: "_id", Value: bson.D{{Key: "$lt", Value: 1020}}}})
		}
	})
	b.Run("WithinScan", func(b *testing.B) {
		got := 0
		for i := 0; i < b.N; i++ {
			got += count(b, within(i), options.Find().SetHint(bson.D{{Key: "$natural", Value: 1}}))
		}
		b.ReportMetric(float64(got)/float64(b.N), "docs/op")
	})
}
