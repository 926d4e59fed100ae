// Package embedded runs DumboDB inside a Go program: Open opens a data
// directory in this process and returns a client of the official MongoDB
// Go driver whose connections are in memory (the driver's dialer hands
// it one end of a pipe, the server serves the other), so there is no
// listener, no port and no TCP: the same server code and commands, minus
// the network. The package is named embedded, not embed, so that it does
// not shadow the standard library's embed in the programs that use both.
package embedded

import (
	"context"
	"errors"
	"net"

	"github.com/dumbodb/dumbodb/server"
	"github.com/dumbodb/dumbodb/storage"

	"github.com/rs/zerolog"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// DB is DumboDB running in this process over one data directory.
type DB struct {
	engine *storage.Engine
	srv    *server.Server
	client *mongo.Client
}

// Open opens the data directory dir (made if missing; one process at a
// time, as for the server) and connects a driver client to it.
func Open(dir string) (*DB, error) {
	eng, err := storage.Open(dir, storage.Options{Language: server.StorageLanguage()}, zerolog.Nop())
	if err != nil {
		return nil, err
	}
	srv := server.New(server.Config{}, eng, zerolog.Nop(), server.NewLogRing(16))
	if err := srv.Listen(); err != nil { // no address: it opens no listener
		eng.Close()
		return nil, err
	}
	srv.Serve()
	db := &DB{engine: eng, srv: srv}
	db.client, err = mongo.Connect(options.Client().ApplyURI("mongodb://embedded/?directConnection=true").
		SetDialer(pipeDialer{srv}))
	if err != nil {
		db.shutdown(context.Background())
		return nil, err
	}
	return db, nil
}

// Client is the driver client connected to the database.
func (db *DB) Client() *mongo.Client { return db.client }

// Close disconnects the client, stops the server and closes the data
// directory, which another process may then open.
func (db *DB) Close(ctx context.Context) error {
	err := db.client.Disconnect(ctx)
	return errors.Join(err, db.shutdown(ctx))
}

func (db *DB) shutdown(ctx context.Context) error {
	db.srv.Shutdown(ctx)
	return db.engine.Close()
}

// pipeDialer makes each of the driver's connections an in-memory pipe
// whose other end the server serves.
type pipeDialer struct{ srv *server.Server }

func (d pipeDialer) DialContext(ctx context.Context, _, _ string) (net.Conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return d.srv.Pipe(), nil
}
