package embedded_test

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"testing"

	"github.com/dumbodb/dumbodb/embedded"
	"github.com/dumbodb/dumbodb/server"
	"github.com/dumbodb/dumbodb/storage"

	"github.com/rs/zerolog"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// The same operations through embedded.Open's in-memory connections, a
// Unix socket and TCP on loopback, each against a server in this
// process: what the network costs, and what embedding saves.
//
//	go test -run '^$' -bench . -benchtime 2s ./embedded

// embeddedColl is a collection of an embedded database.
func embeddedColl(b *testing.B) *mongo.Collection {
	db, err := embedded.Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close(context.Background()) })
	return db.Client().Database("bench").Collection("c")
}

// listenedColl is a collection of a server listening on a Unix socket
// (unix) or TCP on loopback.
func listenedColl(b *testing.B, unix bool) *mongo.Collection {
	eng, err := storage.Open(b.TempDir(), storage.Options{Language: server.StorageLanguage()}, zerolog.Nop())
	if err != nil {
		b.Fatal(err)
	}
	cfg := server.Config{BindIPs: []string{"127.0.0.1"}}
	if unix {
		cfg = server.Config{UnixSocket: filepath.Join(b.TempDir(), "dumbodb.sock")}
	}
	srv := server.New(cfg, eng, zerolog.Nop(), server.NewLogRing(16))
	if err := srv.Listen(); err != nil {
		b.Fatal(err)
	}
	srv.Serve()
	uri := "mongodb://" + srv.Addrs()[0].String() + "/?directConnection=true"
	if unix {
		uri = "mongodb://" + url.PathEscape(cfg.UnixSocket) + "/?directConnection=true"
	}
	client, err := mongo.Connect(options.Client().ApplyURI(uri))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		client.Disconnect(context.Background())
		srv.Shutdown(context.Background())
		eng.Close()
	})
	return client.Database("bench").Collection("c")
}

// transports are the ways to the server each benchmark runs through.
var transports = []struct {
	name string
	coll func(*testing.B) *mongo.Collection
}{
	{"Embedded", embeddedColl},
	{"Unix", func(b *testing.B) *mongo.Collection { return listenedColl(b, true) }},
	{"TCP", func(b *testing.B) *mongo.Collection { return listenedColl(b, false) }},
}

// eachTransport runs, through each transport, seed once and then op b.N
// times (i numbers the call), timing the calls.
func eachTransport(b *testing.B, seed func(*mongo.Collection) error, op func(coll *mongo.Collection, i int) error) {
	for _, tr := range transports {
		b.Run(tr.name, func(b *testing.B) {
			coll := tr.coll(b)
			if err := seed(coll); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := range b.N {
				if err := op(coll, i); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkFindOne is findOne by _id.
func BenchmarkFindOne(b *testing.B) {
	ctx := context.Background()
	eachTransport(b, func(coll *mongo.Collection) error {
		_, err := coll.InsertOne(ctx, bson.M{"_id": 1, "v": "x"})
		return err
	}, func(coll *mongo.Collection, _ int) error {
		return coll.FindOne(ctx, bson.M{"_id": 1}).Err()
	})
}

// BenchmarkInsertOne is insertOne of a small document.
func BenchmarkInsertOne(b *testing.B) {
	ctx := context.Background()
	eachTransport(b, func(*mongo.Collection) error { return nil }, func(coll *mongo.Collection, i int) error {
		_, err := coll.InsertOne(ctx, bson.M{"_id": i, "v": "x"})
		return err
	})
}

// BenchmarkFind100 is a find returning 100 documents.
func BenchmarkFind100(b *testing.B) {
	ctx := context.Background()
	eachTransport(b, func(coll *mongo.Collection) error {
		docs := make([]any, 100)
		for i := range docs {
			docs[i] = bson.M{"_id": i, "v": "x"}
		}
		_, err := coll.InsertMany(ctx, docs)
		return err
	}, func(coll *mongo.Collection, _ int) error {
		cur, err := coll.Find(ctx, bson.M{})
		if err != nil {
			return err
		}
		var got []bson.Raw
		if err := cur.All(ctx, &got); err != nil || len(got) != 100 {
			return fmt.Errorf("find: %d documents, %v", len(got), err)
		}
		return nil
	})
}
