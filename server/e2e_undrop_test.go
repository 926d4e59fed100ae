package server_test

import (
	"testing"
	"time"

	"github.com/dumbodb/dumbodb/storage"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestUndropThroughTheDriver: a dropped database is listed by
// dumboUndrop with who dropped it, restored with its documents and
// commits, and purged; undrop of a collection is refused by name.
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
	wantCode(t, err, 238, "NotImplemented")
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
