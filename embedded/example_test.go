package embedded_test

import (
	"context"
	"fmt"
	"os"

	"github.com/dumbodb/dumbodb/embedded"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// A program that keeps its data in DumboDB without running a server: the
// driver's usual API, a commit of what it wrote, and a read of the state
// before it.
func Example() {
	dir, err := os.MkdirTemp("", "embedded-example-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	db, err := embedded.Open(dir)
	if err != nil {
		panic(err)
	}
	defer db.Close(ctx)

	shop := db.Client().Database("shop")
	if _, err := shop.Collection("items").InsertOne(ctx, bson.M{"_id": 1, "qty": 5}); err != nil {
		panic(err)
	}
	shop.RunCommand(ctx, bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "stock"}})
	if _, err := shop.Collection("items").UpdateOne(ctx, bson.M{"_id": 1}, bson.M{"$set": bson.M{"qty": 4}}); err != nil {
		panic(err)
	}
	var now, committed bson.M
	shop.Collection("items").FindOne(ctx, bson.M{"_id": 1}).Decode(&now)
	db.Client().Database("shop@main~0").Collection("items").FindOne(ctx, bson.M{"_id": 1}).Decode(&committed)
	fmt.Println("working set:", now["qty"], "head commit:", committed["qty"])
	// Output: working set: 4 head commit: 5
}
