package server_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/dumbodb/dumbodb/storage"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// TestUndropThroughTheDriver: a dropped database is listed by
// dumboUndrop with who dropped it, restored with its documents and
// commits, and purged; a collection of a database that is gone is not
// found.
func TestUndropThroughTheDriver(t *testing.T) {
	c := startServerWith(t, storage.Options{UndropRetention: time.Hour}).client()
	shop, admin := c.Database("shop"), c.Database("admin")
	if _, err := shop.Collection("items").InsertOne(ctx, bson.M{"_id": 1}); err != nil {
		t.Fatal(err)
	}
	vc(t, c, "shop", bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "one"}})
	if err := shop.Drop(ctx); err != nil {
		t.Fatal(err)
	}
	list := mustRun(t, admin, bson.D{{Key: "dumboUndrop", Value: 1}})
	if d := list["dropped"].(bson.A); len(d) != 1 || get(d[0], "name") != "shop" || get(d[0], "sizeOnDisk").(int64) == 0 {
		t.Fatalf("dropped list %v", list)
	}
	_, err := run(t, admin, bson.D{{Key: "dumboUndrop", Value: 1}, {Key: "name", Value: "shop"}, {Key: "collection", Value: "items"}})
	wantCode(t, err, 26, "NamespaceNotFound")
	mustRun(t, admin, bson.D{{Key: "dumboUndrop", Value: 1}, {Key: "name", Value: "shop"}})
	if n, err := shop.Collection("items").CountDocuments(ctx, bson.M{}); err != nil || n != 1 {
		t.Fatalf("after undrop: %d documents (%v)", n, err)
	}
	if log := vc(t, c, "shop", bson.D{{Key: "dumboLog", Value: 1}}); len(log["commits"].(bson.A)) != 2 {
		t.Errorf("after undrop: log %v", log)
	}
	_, err = run(t, admin, bson.D{{Key: "dumboUndrop", Value: 1}, {Key: "name", Value: "shop"}})
	wantCode(t, err, 26, "NamespaceNotFound")
	if err := shop.Drop(ctx); err != nil {
		t.Fatal(err)
	}
	mustRun(t, admin, bson.D{{Key: "dumboUndrop", Value: 1}, {Key: "name", Value: "shop"}, {Key: "purge", Value: true}})
	if list := mustRun(t, admin, bson.D{{Key: "dumboUndrop", Value: 1}}); len(list["dropped"].(bson.A)) != 0 {
		t.Errorf("after purge: %v", list)
	}
}

// TestUndropCollection: a dropped collection, with writes not yet
// committed, is listed and restored beside one made under its name since
// (the database moved on), with its documents, indexes and UUID; a
// time-series collection comes back with its buckets; purge forgets.
func TestUndropCollection(t *testing.T) {
	c := startServerWith(t, storage.Options{UndropRetention: time.Hour}).client()
	shop, admin := c.Database("shop"), c.Database("admin")
	items := shop.Collection("items")
	if _, err := items.InsertMany(ctx, []any{bson.M{"_id": 1, "sku": "a"}, bson.M{"_id": 2, "sku": "b"}}); err != nil {
		t.Fatal(err)
	}
	mustRun(t, shop, bson.D{{Key: "createIndexes", Value: "items"}, {Key: "indexes", Value: bson.A{
		bson.M{"key": bson.M{"sku": 1}, "name": "sku_1", "unique": true}}}})
	vc(t, c, "shop", bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "two"}})
	if _, err := items.InsertOne(ctx, bson.M{"_id": 3, "sku": "c"}); err != nil {
		t.Fatal(err)
	}
	uuidOf := func(name string) any {
		res := mustRun(t, shop, bson.D{{Key: "listCollections", Value: 1}, {Key: "filter", Value: bson.M{"name": name}}})
		batch := get(res["cursor"], "firstBatch").(bson.A)
		if len(batch) != 1 {
			t.Fatalf("listCollections %s: %v", name, res)
		}
		return get(get(batch[0], "info"), "uuid")
	}
	was := uuidOf("items")
	if err := items.Drop(ctx); err != nil {
		t.Fatal(err)
	}
	list := mustRun(t, admin, bson.D{{Key: "dumboUndrop", Value: 1}})
	if d := list["dropped"].(bson.A); len(d) != 1 || get(d[0], "collection") != "items" || get(d[0], "documents") != int64(3) || get(d[0], "branch") != "main" {
		t.Fatalf("dropped list %v", list)
	}
	if st := mustRun(t, shop, bson.D{{Key: "dbStats", Value: 1}}); st["droppedCollections"] != int32(1) || st["droppedCollectionsSize"].(int32) <= 0 {
		t.Errorf("dbStats does not count the kept drop: %v", st)
	}
	if _, err := items.InsertOne(ctx, bson.M{"_id": 9, "sku": "new"}); err != nil {
		t.Fatal(err)
	}
	undrop := bson.D{{Key: "dumboUndrop", Value: 1}, {Key: "name", Value: "shop"}, {Key: "collection", Value: "items"}}
	_, err := run(t, admin, undrop)
	wantCode(t, err, 48, "NamespaceExists")
	mustRun(t, admin, append(undrop, bson.E{Key: "toCollection", Value: "items_old"}))
	if n, err := shop.Collection("items_old").CountDocuments(ctx, bson.M{}); err != nil || n != 3 {
		t.Fatalf("restored documents: %d (%v)", n, err)
	}
	if !reflect.DeepEqual(uuidOf("items_old"), was) {
		t.Errorf("the restored collection has another UUID")
	}
	if _, err = shop.Collection("items_old").InsertOne(ctx, bson.M{"_id": 4, "sku": "a"}); !mongo.IsDuplicateKeyError(err) {
		t.Errorf("the restored unique index lets a duplicate in: %v", err)
	}
	_, err = run(t, admin, undrop)
	wantCode(t, err, 26, "NamespaceNotFound")

	mustRun(t, shop, bson.D{{Key: "create", Value: "weather"}, {Key: "timeseries", Value: bson.M{"timeField": "t", "metaField": "m"}}})
	if _, err := shop.Collection("weather").InsertOne(ctx, bson.M{"t": time.Now(), "m": "x", "v": 1}); err != nil {
		t.Fatal(err)
	}
	if err := shop.Collection("weather").Drop(ctx); err != nil {
		t.Fatal(err)
	}
	mustRun(t, admin, bson.D{{Key: "dumboUndrop", Value: 1}, {Key: "name", Value: "shop"}, {Key: "collection", Value: "weather"}})
	var m bson.M
	if err := shop.Collection("weather").FindOne(ctx, bson.M{"m": "x"}).Decode(&m); err != nil || m["v"] != int32(1) {
		t.Fatalf("restored time-series measurement: %v (%v)", m, err)
	}

	if err := shop.Collection("items_old").Drop(ctx); err != nil {
		t.Fatal(err)
	}
	purged := mustRun(t, admin, bson.D{{Key: "dumboUndrop", Value: 1}, {Key: "name", Value: "shop"}, {Key: "collection", Value: "items_old"}, {Key: "purge", Value: true}})
	if purged["drops"] != int32(1) {
		t.Errorf("purge %v", purged)
	}
	if list := mustRun(t, admin, bson.D{{Key: "dumboUndrop", Value: 1}}); len(list["dropped"].(bson.A)) != 0 {
		t.Errorf("after purge: %v", list)
	}
}
