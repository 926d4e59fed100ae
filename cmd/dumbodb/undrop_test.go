package main

import (
	"context"
	"testing"

	"github.com/dumbodb/dumbodb/internal/dumboproc"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestUndropCollectionAfterKill9: a collection dropped with writes not
// yet checkpointed comes back by dumboUndrop after the server is killed
// with SIGKILL right after the drop.
func TestUndropCollectionAfterKill9(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	p := dumboproc.StartT(t, dir)
	c := client(t, p)
	var docs []any
	for i := range 500 {
		docs = append(docs, bson.M{"_id": i, "v": i})
	}
	if _, err := c.Database("shop").Collection("items").InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	if err := c.Database("shop").Collection("items").Drop(ctx); err != nil {
		t.Fatal(err)
	}
	c.Disconnect(ctx)
	p.Kill()

	p = dumboproc.StartT(t, dir)
	c = client(t, p)
	admin := c.Database("admin")
	runVC(t, admin, bson.D{{Key: "dumboUndrop", Value: 1}, {Key: "name", Value: "shop"}, {Key: "collection", Value: "items"}})
	if n, err := c.Database("shop").Collection("items").CountDocuments(ctx, bson.M{}); err != nil || n != 500 {
		t.Fatalf("after kill -9 and undrop: %d documents (%v)", n, err)
	}
}
