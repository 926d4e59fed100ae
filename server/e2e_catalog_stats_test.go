package server_test

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// serverStatus.catalogStats counts the default branch's collections of
// every database by kind, in mongod's fields and types, and follows
// creates and drops; {catalogStats: 0} leaves the section out.
func TestServerStatusCatalogStats(t *testing.T) {
	ts := startServer(t)
	c := ts.client()
	admin := c.Database("admin")
	stats := func() bson.D {
		t.Helper()
		st := runD(t, admin, bson.D{{Key: "serverStatus", Value: 1}})
		cs, ok := dmap(st)["catalogStats"].(bson.D)
		if !ok {
			t.Fatalf("no catalogStats in %v", keys(st))
		}
		return cs
	}
	want := "collections capped clustered timeseries views internalCollections internalViews csfle queryableEncryption"
	before := stats()
	if keys(before) != want {
		t.Fatalf("catalogStats fields %q, want %q", keys(before), want)
	}
	for _, e := range before {
		if _, ok := e.Value.(int32); !ok {
			t.Fatalf("catalogStats.%s is %T, want int32", e.Key, e.Value)
		}
	}
	a, b := c.Database("cs_a"), c.Database("cs_b")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(a.CreateCollection(ctx, "plain"))
	must(a.CreateCollection(ctx, "capped", options.CreateCollection().SetCapped(true).SetSizeInBytes(4096)))
	must(b.CreateCollection(ctx, "clustered", options.CreateCollection().SetClusteredIndex(bson.D{{Key: "key", Value: bson.D{{Key: "_id", Value: 1}}}, {Key: "unique", Value: true}})))
	must(b.CreateCollection(ctx, "ts", options.CreateCollection().SetTimeSeriesOptions(options.TimeSeries().SetTimeField("t"))))
	must(b.CreateView(ctx, "v", "plain", bson.A{}))
	must(b.CreateCollection(ctx, "system.js"))
	after := dmap(stats())
	diff := func(k string) int32 { return after[k].(int32) - dmap(before)[k].(int32) }
	for k, n := range map[string]int32{"collections": 3, "capped": 1, "clustered": 1, "timeseries": 1, "views": 1, "internalCollections": 1, "internalViews": 0} {
		if diff(k) != n {
			t.Errorf("catalogStats.%s grew by %d, want %d (before %v, after %v)", k, diff(k), n, before, after)
		}
	}
	must(a.Drop(ctx))
	after = dmap(stats())
	if diff("collections") != 1 || diff("capped") != 0 {
		t.Errorf("after dropping cs_a: collections +%d capped +%d, want +1 and +0", diff("collections"), diff("capped"))
	}
	off := runD(t, admin, bson.D{{Key: "serverStatus", Value: 1}, {Key: "catalogStats", Value: 0}})
	if _, ok := dmap(off)["catalogStats"]; ok {
		t.Error("catalogStats: 0 still reports the section")
	}
}
