package server_test

import (
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// The figures of dbStats, collStats and $collStats' storageStats: real
// (not zero for a collection that holds documents), consistent with one
// another, growing with the data, and in mongod 8's types and order. The
// shapes that do not vary are in testdata/commands/mongod_replies.

// runD runs a command and keeps its reply's order, without the fields
// that change from run to run.
func runD(t *testing.T, db *mongo.Database, cmd bson.D) bson.D {
	t.Helper()
	var out bson.D
	if err := db.RunCommand(ctx, cmd).Decode(&out); err != nil {
		t.Fatalf("%v: %v", cmd, err)
	}
	return stableFields(out)
}

func stableFields(d bson.D) bson.D {
	var out bson.D
	for _, e := range d {
		if e.Key != "$clusterTime" && e.Key != "operationTime" {
			out = append(out, e)
		}
	}
	return out
}

func dmap(d bson.D) bson.M {
	m := bson.M{}
	for _, e := range d {
		m[e.Key] = e.Value
	}
	return m
}

func keys(d bson.D) string {
	var ks []string
	for _, e := range d {
		ks = append(ks, e.Key)
	}
	return strings.Join(ks, " ")
}

// seedSized inserts n documents of about 200 bytes from _id first, and
// returns their BSON bytes.
func seedSized(t *testing.T, coll *mongo.Collection, first, n int) int64 {
	t.Helper()
	var total int64
	docs := make([]any, n)
	for i := range docs {
		d := bson.D{{Key: "_id", Value: int32(first + i)}, {Key: "a", Value: int32(first + i)}, {Key: "s", Value: strings.Repeat("x", 150)}}
		raw, _ := bson.Marshal(d)
		total += int64(len(raw))
		docs[i] = d
	}
	if _, err := coll.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	return total
}

// settle checkpoints every database, so that two measures of the same
// data read the same trees.
func settle(t *testing.T, c *mongo.Client) {
	t.Helper()
	mustRun(t, c.Database("admin"), bson.D{{Key: "fsync", Value: 1}})
}

func TestFidelityCollStatsFigures(t *testing.T) {
	ts := startServer(t)
	c := ts.client()
	db := c.Database("st")
	coll := db.Collection("c")
	size := seedSized(t, coll, 0, 200)
	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "a", Value: 1}}}); err != nil {
		t.Fatal(err)
	}
	settle(t, c)
	st := mustRun(t, db, bson.D{{Key: "collStats", Value: "c"}})
	idx, _ := st["indexSizes"].(bson.D)
	if num(st["size"]) != size || num(st["count"]) != 200 || num(st["avgObjSize"]) != size/200 || num(st["nindexes"]) != 2 {
		t.Fatalf("collStats: %v", st)
	}
	if num(st["storageSize"]) <= 0 || num(get(idx, "_id_")) <= 0 || num(get(idx, "a_1")) <= 0 || len(idx) != 2 {
		t.Fatalf("collStats sizes are not real: %v", st)
	}
	var indexTotal int64
	for _, e := range idx {
		indexTotal += num(e.Value)
	}
	if num(st["totalIndexSize"]) != indexTotal || num(st["totalSize"]) != num(st["storageSize"])+indexTotal {
		t.Fatalf("collStats sizes do not add up: %v", st)
	}

	// $collStats' storageStats are the same figures, in the same order.
	cur, err := coll.Aggregate(ctx, bson.A{bson.D{{Key: "$collStats", Value: bson.D{{Key: "storageStats", Value: bson.D{}}}}}})
	if err != nil {
		t.Fatal(err)
	}
	var out []bson.D
	if err := cur.All(ctx, &out); err != nil || len(out) != 1 {
		t.Fatal(out, err)
	}
	ss, _ := get(out[0], "storageStats").(bson.D)
	cmd := runD(t, db, bson.D{{Key: "collStats", Value: "c"}})
	want := cmd[1 : len(cmd)-1] // without ns and ok
	if js(ss) != js(want) {
		t.Fatalf("$collStats storageStats\n %s\nis not collStats'\n %s", js(ss), js(want))
	}

	// More documents: every figure grows.
	size += seedSized(t, coll, 1000, 300)
	settle(t, c)
	more := mustRun(t, db, bson.D{{Key: "collStats", Value: "c"}})
	midx, _ := more["indexSizes"].(bson.D)
	if num(more["size"]) != size || num(more["count"]) != 500 || num(more["storageSize"]) <= num(st["storageSize"]) ||
		num(get(midx, "_id_")) <= num(get(idx, "_id_")) || num(get(midx, "a_1")) <= num(get(idx, "a_1")) ||
		num(more["totalSize"]) <= num(st["totalSize"]) {
		t.Fatalf("collStats did not grow:\n %v\n %v", st, more)
	}
	// scale divides the sizes, not the count or the average.
	scaled := mustRun(t, db, bson.D{{Key: "collStats", Value: "c"}, {Key: "scale", Value: 1024}})
	if num(scaled["size"]) != size/1024 || num(scaled["count"]) != 500 || num(scaled["avgObjSize"]) != size/500 ||
		num(get(scaled, "indexSizes", "_id_")) != num(get(midx, "_id_"))/1024 {
		t.Fatalf("collStats scale 1024: %v", scaled)
	}
}

func TestFidelityDBStatsFigures(t *testing.T) {
	ts := startServer(t)
	c := ts.client()
	db := c.Database("st")
	size := seedSized(t, db.Collection("a"), 0, 150)
	size += seedSized(t, db.Collection("b"), 0, 50)
	if _, err := db.Collection("a").Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "a", Value: 1}}}); err != nil {
		t.Fatal(err)
	}
	mustRun(t, db, bson.D{{Key: "create", Value: "v"}, {Key: "viewOn", Value: "a"}, {Key: "pipeline", Value: bson.A{}}})
	settle(t, c)
	ds := runD(t, db, bson.D{{Key: "dbStats", Value: 1}})
	if got := keys(ds); got != "db collections views objects avgObjSize dataSize storageSize indexes indexSize totalSize scaleFactor fsUsedSize fsTotalSize ok" {
		t.Fatalf("dbStats fields: %s", got)
	}
	m := dmap(ds)
	if m["views"] != int64(1) || m["scaleFactor"] != int64(1) || num(m["collections"]) != 2 || num(m["objects"]) != 200 ||
		num(m["dataSize"]) != size || m["avgObjSize"] != float64(size)/200 || num(m["indexes"]) != 3 {
		t.Fatalf("dbStats: %v", ds)
	}
	if num(m["storageSize"]) <= 0 || num(m["indexSize"]) <= 0 || num(m["totalSize"]) != num(m["storageSize"])+num(m["indexSize"]) ||
		num(m["fsTotalSize"]) <= 0 || num(m["fsUsedSize"]) <= 0 || num(m["fsUsedSize"]) > num(m["fsTotalSize"]) {
		t.Fatalf("dbStats sizes are not real: %v", ds)
	}
	// They are the collections' own, summed.
	var storage, indexes int64
	for _, coll := range []string{"a", "b"} {
		st := mustRun(t, db, bson.D{{Key: "collStats", Value: coll}})
		storage += num(st["storageSize"])
		indexes += num(st["totalIndexSize"])
	}
	if num(m["storageSize"]) != storage || num(m["indexSize"]) != indexes {
		t.Fatalf("dbStats storageSize %v indexSize %v, the collections' %d and %d", m["storageSize"], m["indexSize"], storage, indexes)
	}

	// freeStorage: what the files hold beyond the collections and indexes.
	fs := runD(t, db, bson.D{{Key: "dbStats", Value: 1}, {Key: "freeStorage", Value: 1}})
	if got := keys(fs); got != "db collections views objects avgObjSize dataSize storageSize freeStorageSize indexes indexSize "+
		"indexFreeStorageSize totalSize totalFreeStorageSize scaleFactor fsUsedSize fsTotalSize ok" {
		t.Fatalf("dbStats freeStorage fields: %s", got)
	}
	fm := dmap(fs)
	list := mustRun(t, c.Database("admin"), bson.D{{Key: "listDatabases", Value: 1}, {Key: "filter", Value: bson.D{{Key: "name", Value: "st"}}}})
	onDisk := num(get(list["databases"].(bson.A)[0], "sizeOnDisk"))
	free := num(fm["freeStorageSize"])
	if free < 0 || num(fm["totalFreeStorageSize"]) != free || (free > 0 && free+num(fm["totalSize"]) != onDisk) {
		t.Fatalf("dbStats free storage %v, on disk %d", fs, onDisk)
	}

	// More documents: the figures grow.
	size += seedSized(t, db.Collection("a"), 1000, 300)
	settle(t, c)
	more := dmap(runD(t, db, bson.D{{Key: "dbStats", Value: 1}}))
	if num(more["dataSize"]) != size || num(more["objects"]) != 500 || num(more["storageSize"]) <= num(m["storageSize"]) ||
		num(more["indexSize"]) <= num(m["indexSize"]) || num(more["totalSize"]) <= num(m["totalSize"]) {
		t.Fatalf("dbStats did not grow:\n %v\n %v", m, more)
	}
	scaled := dmap(runD(t, db, bson.D{{Key: "dbStats", Value: 1}, {Key: "scale", Value: 1024.9}}))
	if scaled["scaleFactor"] != int64(1024) || num(scaled["dataSize"]) != size/1024 {
		t.Fatalf("dbStats scale: %v", scaled)
	}

	// A database that does not exist: zeros, in the same types.
	none := dmap(runD(t, c.Database("nothere"), bson.D{{Key: "dbStats", Value: 1}}))
	if none["views"] != int64(0) || none["scaleFactor"] != int64(1) || none["avgObjSize"] != 0.0 ||
		num(none["objects"]) != 0 || num(none["totalSize"]) != 0 || num(none["indexSize"]) != 0 || num(none["fsTotalSize"]) != 0 {
		t.Fatalf("dbStats of a missing database: %v", none)
	}
}

// TestFidelityListDatabasesInternal: admin, config and local are listed
// from the start, admin never empty, and the users make up admin's size.
func TestFidelityListDatabasesInternal(t *testing.T) {
	ts := startServer(t)
	c := ts.client()
	names, err := c.ListDatabaseNames(ctx, bson.M{})
	if err != nil || strings.Join(names, " ") != "admin config local" {
		t.Fatalf("a fresh server lists %v %v", names, err)
	}
	mustRun(t, c.Database("admin"), bson.D{{Key: "createUser", Value: "u"}, {Key: "pwd", Value: "pw"}, {Key: "roles", Value: bson.A{}}})
	res, err := c.ListDatabases(ctx, bson.M{"name": "admin"})
	if err != nil || len(res.Databases) != 1 || res.Databases[0].Empty || res.Databases[0].SizeOnDisk <= 0 {
		t.Fatalf("admin with a user: %+v %v", res, err)
	}
}
