package main

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"

	"github.com/dumbodb/dumbodb/embedded"
	"github.com/dumbodb/dumbodb/server"
	"github.com/dumbodb/dumbodb/storage"

	"github.com/rs/zerolog"
	"go.mongodb.org/mongo-driver/v2/mongo"
	mongooptions "go.mongodb.org/mongo-driver/v2/mongo/options"
)

// startEmbedded is the Embedded family's server: in this process, on a
// fresh data directory, reached through transport.
func startEmbedded(ctx context.Context, transport string) (*mongo.Client, func(), error) {
	dir, err := os.MkdirTemp("", "dumbobench-embedded-")
	if err != nil {
		return nil, nil, err
	}
	if transport == "Embedded" {
		db, err := embedded.Open(dir)
		if err != nil {
			os.RemoveAll(dir)
			return nil, nil, err
		}
		return db.Client(), func() { db.Close(context.Background()); os.RemoveAll(dir) }, nil
	}
	eng, err := storage.Open(filepath.Join(dir, "data"), storage.Options{Language: server.StorageLanguage()}, zerolog.Nop())
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	cfg := server.Config{BindIPs: []string{"127.0.0.1"}}
	if transport == "Unix" {
		cfg = server.Config{UnixSocket: filepath.Join(dir, "dumbodb.sock")}
	}
	srv := server.New(cfg, eng, zerolog.Nop(), server.NewLogRing(16))
	stop := func() { srv.Shutdown(context.Background()); eng.Close(); os.RemoveAll(dir) }
	if err := srv.Listen(); err != nil {
		stop()
		return nil, nil, err
	}
	srv.Serve()
	host := srv.Addrs()[0].String()
	if transport == "Unix" {
		host = url.PathEscape(cfg.UnixSocket)
	}
	client, err := mongo.Connect(mongooptions.Client().ApplyURI(fmt.Sprintf("mongodb://%s/?directConnection=true", host)))
	if err != nil {
		stop()
		return nil, nil, err
	}
	return client, func() { client.Disconnect(context.Background()); stop() }, nil
}
