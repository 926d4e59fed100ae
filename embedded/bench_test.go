package embedded_test

import (
	"context"
	"testing"

	"github.com/dumbodb/dumbodb/embedded"
	"github.com/dumbodb/dumbodb/server"
	"github.com/dumbodb/dumbodb/storage"

	"github.com/rs/zerolog"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// benchFindOne times findOne by _id through coll.
func benchFindOne(b *testing.B, coll *mongo.Collection) {
	ctx := context.Background()
	if _, err := coll.InsertOne(ctx, bson.M{"_id": 1, "v": "x"}); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		if err := coll.FindOne(ctx, bson.M{"_id": 1}).Err(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFindOneEmbedded is findOne by _id through embedded.Open's
// in-memory connections.
func BenchmarkFindOneEmbedded(b *testing.B) {
	db, err := embedded.Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close(context.Background())
	benchFindOne(b, db.Client().Database("bench").Collection("c"))
}

// BenchmarkFindOneTCP is the same through a TCP listener on loopback.
func BenchmarkFindOneTCP(b *testing.B) {
	eng, err := storage.Open(b.TempDir(), storage.Options{Language: server.StorageLanguage()}, zerolog.Nop())
	if err != nil {
		b.Fatal(err)
	}
	defer eng.Close()
	srv := server.New(server.Config{BindIPs: []string{"127.0.0.1"}}, eng, zerolog.Nop(), server.NewLogRing(16))
	if err := srv.Listen(); err != nil {
		b.Fatal(err)
	}
	srv.Serve()
	defer srv.Shutdown(context.Background())
	client, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + srv.Addrs()[0].String() + "/?directConnection=true"))
	if err != nil {
		b.Fatal(err)
	}
	defer client.Disconnect(context.Background())
	benchFindOne(b, client.Database("bench").Collection("c"))
}
