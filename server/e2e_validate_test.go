package server_test

import (
	"fmt"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestValidateCommand: validate reads every document and every index
// entry and finds them consistent across index kinds (multikey, sparse,
// partial, compound, hashed, text, wildcard, collated), after updates and
// deletes; its errors are mongod's.
func TestValidateCommand(t *testing.T) {
	db, coll := startCollection(t, "shop", "items")
	models := []mongo.IndexModel{
		{Keys: bson.D{{Key: "tags", Value: 1}}},
		{Keys: bson.D{{Key: "opt", Value: 1}}, Options: options.Index().SetSparse(true)},
		{Keys: bson.D{{Key: "n", Value: 1}}, Options: options.Index().SetPartialFilterExpression(bson.D{{Key: "n", Value: bson.D{{Key: "$gt", Value: 5}}}})},
		{Keys: bson.D{{Key: "n", Value: -1}, {Key: "name", Value: 1}}},
		{Keys: bson.D{{Key: "name", Value: "hashed"}}},
		{Keys: bson.D{{Key: "name", Value: "text"}}},
		{Keys: bson.D{{Key: "sub.$**", Value: 1}}},
		{Keys: bson.D{{Key: "name", Value: 1}}, Options: options.Index().SetName("name_fr").SetCollation(&options.Collation{Locale: "fr", Strength: 1})},
	}
	if _, err := coll.Indexes().CreateMany(ctx, models); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 40; i++ {
		doc := bson.D{{Key: "_id", Value: i}, {Key: "n", Value: i % 10}, {Key: "name", Value: fmt.Sprintf("Item number %d", i)},
			{Key: "tags", Value: bson.A{"a", fmt.Sprint("t", i%3)}}, {Key: "sub", Value: bson.D{{Key: "x", Value: i}}}}
		if i%2 == 0 {
			doc = append(doc, bson.E{Key: "opt", Value: i})
		}
		if _, err := coll.InsertOne(ctx, doc); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := coll.UpdateMany(ctx, bson.D{{Key: "n", Value: bson.D{{Key: "$lt", Value: 3}}}}, bson.D{{Key: "$push", Value: bson.D{{Key: "tags", Value: "new"}}}, {Key: "$unset", Value: bson.D{{Key: "opt", Value: ""}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.DeleteMany(ctx, bson.D{{Key: "n", Value: 9}}); err != nil {
		t.Fatal(err)
	}
	res := mustRun(t, db, bson.D{{Key: "validate", Value: "items"}, {Key: "full", Value: true}})
	if res["valid"] != true || res["nrecords"] != int32(36) || res["nIndexes"] != int32(9) {
		t.Fatalf("validate: %v", res)
	}
	if n := get(res, "keysPerIndex", "tags_1"); n != int32(36*2+12) {
		t.Fatalf("tags_1 holds %v entries, want %d", n, 36*2+12)
	}
	if errs, _ := res["errors"].(bson.A); len(errs) != 0 {
		t.Fatalf("validate errors on a consistent collection: %v", errs)
	}
	_, err := run(t, db, bson.D{{Key: "validate", Value: "items"}, {Key: "repair", Value: true}})
	wantCode(t, err, 238, "NotImplemented")
	_, err = run(t, db, bson.D{{Key: "validate", Value: "nothing"}})
	wantCode(t, err, 26, "NamespaceNotFound")
	mustRun(t, db, bson.D{{Key: "create", Value: "v"}, {Key: "viewOn", Value: "items"}})
	_, err = run(t, db, bson.D{{Key: "validate", Value: "v"}})
	wantCode(t, err, 166, "CommandNotSupportedOnView")
}

// TestDataSizeDBHashCompact: dataSize counts a collection's bytes,
// dbHash changes exactly when a collection's documents do, compact frees
// what a dropped collection left.
func TestDataSizeDBHashCompact(t *testing.T) {
	db, coll := startCollection(t, "shop", "items")
	for i := 0; i < 10; i++ {
		if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: i}, {Key: "pad", Value: "xxxxxxxxxx"}}); err != nil {
			t.Fatal(err)
		}
	}
	ds := mustRun(t, db, bson.D{{Key: "dataSize", Value: "shop.items"}})
	if num(ds["numObjects"]) != 10 || num(ds["size"]) != 10*34 {
		t.Fatalf("dataSize: %v", ds)
	}
	_, err := run(t, db, bson.D{{Key: "dataSize", Value: "shop.items"}, {Key: "min", Value: bson.D{{Key: "_id", Value: 1}}}})
	wantCode(t, err, 238, "NotImplemented")
	h1 := mustRun(t, db, bson.D{{Key: "dbHash", Value: 1}})
	h2 := mustRun(t, db, bson.D{{Key: "dbHash", Value: 1}, {Key: "collections", Value: bson.A{"items"}}})
	if get(h1, "collections", "items") == nil || get(h1, "collections", "items") != get(h2, "collections", "items") {
		t.Fatalf("dbHash: %v / %v", h1, h2)
	}
	if _, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: 3}}, bson.D{{Key: "$set", Value: bson.D{{Key: "pad", Value: "y"}}}}); err != nil {
		t.Fatal(err)
	}
	if h3 := mustRun(t, db, bson.D{{Key: "dbHash", Value: 1}}); get(h3, "collections", "items") == get(h1, "collections", "items") || h3["md5"] == h1["md5"] {
		t.Fatalf("dbHash did not change with a document: %v", h3)
	}
	c := mustRun(t, db, bson.D{{Key: "compact", Value: "items"}})
	if _, ok := c["bytesFreed"].(int64); !ok {
		t.Fatalf("compact: %v", c)
	}
}
