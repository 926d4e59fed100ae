package server_test

import (
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

func TestListDatabasesAndDrop(t *testing.T) {
	ts := startServer(t)
	c := ts.client()
	for _, db := range []string{"alpha", "beta"} {
		if _, err := c.Database(db).Collection("c").InsertOne(ctx, bson.M{"x": 1}); err != nil {
			t.Fatal(err)
		}
	}
	res := mustRun(t, c.Database("admin"), bson.D{{Key: "listDatabases", Value: 1}})
	// admin, config and local are listed too, as on mongod.
	dbs := res["databases"].(bson.A)
	if len(dbs) != 5 || get(dbs[0], "name") != "admin" || get(dbs[1], "name") != "alpha" || get(dbs[2], "name") != "beta" ||
		get(dbs[3], "name") != "config" || get(dbs[4], "name") != "local" {
		t.Fatalf("listDatabases %v", dbs)
	}
	if num(get(dbs[1], "sizeOnDisk")) <= 0 || get(dbs[1], "empty") != false {
		t.Errorf("entry %v", dbs[1])
	}
	names, err := c.ListDatabaseNames(ctx, bson.M{"name": "beta"})
	if err != nil || len(names) != 1 || names[0] != "beta" {
		t.Fatalf("filtered names %v %v", names, err)
	}
	_, err = run(t, c.Database("test"), bson.D{{Key: "listDatabases", Value: 1}})
	wantCode(t, err, 13, "Unauthorized")

	if err := c.Database("alpha").Drop(ctx); err != nil {
		t.Fatal(err)
	}
	names, _ = c.ListDatabaseNames(ctx, bson.M{})
	if strings.Join(names, " ") != "admin beta config local" {
		t.Fatalf("after drop %v", names)
	}
	// Dropping again, or a database that never existed, is fine.
	if err := c.Database("alpha").Drop(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestListCollectionsShape(t *testing.T) {
	ts := startServer(t)
	db := ts.client().Database("test")
	if err := db.CreateCollection(ctx, "explicit"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Collection("implicit").InsertOne(ctx, bson.M{"a": 1}); err != nil {
		t.Fatal(err)
	}
	res := mustRun(t, db, bson.D{{Key: "listCollections", Value: 1}})
	batch := get(res, "cursor", "firstBatch").(bson.A)
	if len(batch) != 2 || get(res, "cursor", "ns") != "test.$cmd.listCollections" {
		t.Fatalf("listCollections %v", res)
	}
	for _, e := range batch {
		if get(e, "type") != "collection" || get(e, "options") == nil || get(e, "idIndex", "name") != "_id_" {
			t.Errorf("entry %v", e)
		}
		uuid, ok := get(e, "info", "uuid").(bson.Binary)
		if !ok || uuid.Subtype != 4 || len(uuid.Data) != 16 {
			t.Errorf("uuid %v", get(e, "info", "uuid"))
		}
	}
	names, err := db.ListCollectionNames(ctx, bson.M{"name": "implicit"})
	if err != nil || len(names) != 1 {
		t.Fatalf("filtered %v %v", names, err)
	}
	nameOnly := mustRun(t, db, bson.D{{Key: "listCollections", Value: 1}, {Key: "nameOnly", Value: true}})
	if get(get(nameOnly, "cursor", "firstBatch").(bson.A)[0], "options") != nil {
		t.Errorf("nameOnly returned options")
	}
}

func TestCreateDropRename(t *testing.T) {
	ts := startServer(t)
	c := ts.client()
	db := c.Database("test")
	if err := db.CreateCollection(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if err := db.CreateCollection(ctx, "a"); err != nil { // the same options: done, as since mongod 7.0
		t.Fatalf("create again: %v", err)
	}
	_, err := run(t, db, bson.D{{Key: "create", Value: "a"}, {Key: "capped", Value: true}, {Key: "size", Value: 100}})
	wantCode(t, err, 48, "NamespaceExists")
	_, err = run(t, db, bson.D{{Key: "create", Value: "b"}, {Key: "bogus", Value: 1}})
	wantCode(t, err, 40415, "")
	mustRun(t, c.Database("test2"), bson.D{{Key: "create", Value: "capped"}, {Key: "capped", Value: true}, {Key: "size", Value: 100}})

	if _, err := db.Collection("a").InsertOne(ctx, bson.M{"_id": 1}); err != nil {
		t.Fatal(err)
	}
	mustRun(t, c.Database("admin"), bson.D{{Key: "renameCollection", Value: "test.a"}, {Key: "to", Value: "test.b"}})
	n, _ := db.Collection("b").CountDocuments(ctx, bson.M{})
	if n != 1 {
		t.Fatalf("renamed collection has %d docs", n)
	}
	_, err = run(t, c.Database("admin"), bson.D{{Key: "renameCollection", Value: "test.a"}, {Key: "to", Value: "test.c"}})
	wantCode(t, err, 26, "NamespaceNotFound")
	if err := db.CreateCollection(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	_, err = run(t, c.Database("admin"), bson.D{{Key: "renameCollection", Value: "test.b"}, {Key: "to", Value: "test.c"}})
	wantCode(t, err, 48, "NamespaceExists")
	mustRun(t, c.Database("admin"), bson.D{{Key: "renameCollection", Value: "test.b"}, {Key: "to", Value: "test.c"}, {Key: "dropTarget", Value: true}})
	_, err = run(t, db, bson.D{{Key: "renameCollection", Value: "test.c"}, {Key: "to", Value: "test.d"}})
	wantCode(t, err, 13, "Unauthorized")

	// Across databases: a copy, then the source is dropped.
	if _, err := db.Collection("c").InsertOne(ctx, bson.M{"_id": "moved"}); err != nil {
		t.Fatal(err)
	}
	mustRun(t, c.Database("admin"), bson.D{{Key: "renameCollection", Value: "test.c"}, {Key: "to", Value: "other.c2"}})
	if n, _ := c.Database("other").Collection("c2").CountDocuments(ctx, bson.M{}); n != 2 {
		t.Fatalf("cross-database rename moved %d documents", n)
	}
	mustRun(t, c.Database("admin"), bson.D{{Key: "renameCollection", Value: "other.c2"}, {Key: "to", Value: "test.c"}})
	res := mustRun(t, db, bson.D{{Key: "drop", Value: "c"}})
	if res["ns"] != "test.c" {
		t.Errorf("drop reply %v", res)
	}
	mustRun(t, db, bson.D{{Key: "drop", Value: "never"}}) // MongoDB 7.0+: not an error
	names, _ := db.ListCollectionNames(ctx, bson.M{})
	if len(names) != 0 {
		t.Fatalf("left %v", names)
	}
}

func TestNameValidation(t *testing.T) {
	ts := startServer(t)
	c := ts.client()
	for _, bad := range []string{"a$b", "a b", "x/y", strings.Repeat("d", 64)} {
		_, err := c.Database(bad).Collection("c").InsertOne(ctx, bson.M{"x": 1})
		wantCode(t, err, 73, "InvalidNamespace")
	}
	for _, bad := range []string{"a$b", ".start", "x\x00y"} {
		_, err := c.Database("test").Collection(bad).InsertOne(ctx, bson.M{"x": 1})
		wantCode(t, err, 73, "InvalidNamespace")
	}
	_, err := c.Database("test").Collection("system.foo").InsertOne(ctx, bson.M{"x": 1})
	wantCode(t, err, 73, "InvalidNamespace")
	if _, err := c.Database("Test").Collection("c").InsertOne(ctx, bson.M{"x": 1}); err != nil {
		t.Fatal(err)
	}
	_, err = c.Database("test").Collection("c").InsertOne(ctx, bson.M{"x": 1})
	wantCode(t, err, 13297, "")
}
