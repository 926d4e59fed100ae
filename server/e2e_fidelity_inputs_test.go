package server_test

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/dumbodb/dumbodb/server"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// TestConcurrentIdenticalCreates: clients that each create the
// collection they use at start-up, at once and with the same options,
// all succeed (mongod 7.0+); other options are refused with the
// collection's own.
func TestConcurrentIdenticalCreates(t *testing.T) {
	db := startServer(t).client().Database("fid")
	create := bson.D{{Key: "create", Value: "c"}, {Key: "capped", Value: true}, {Key: "size", Value: 4096}}
	const clients = 20
	errs := make(chan error, clients)
	var wg sync.WaitGroup
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := run(t, db, create)
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("a concurrent identical create: %v", err)
		}
	}
	names, err := db.ListCollectionNames(ctx, bson.D{})
	if err != nil || len(names) != 1 || names[0] != "c" {
		t.Fatalf("collections after the creates: %v (%v)", names, err)
	}
	_, err = run(t, db, bson.D{{Key: "create", Value: "c"}})
	wantCode(t, err, 48, "NamespaceExists")
	var ce mongo.CommandError
	if !errors.As(err, &ce) || !strings.HasPrefix(ce.Message, "namespace fid.c already exists, but with different options: { uuid: UUID(\"") ||
		!strings.HasSuffix(ce.Message, "\"), capped: true, size: 4096 }") {
		t.Errorf("create with other options: %v", err)
	}
}

// TestWriteConcernOnStandalone: a standalone refuses a w it cannot
// satisfy before writing, as mongod does; the replica set writes and
// reports it in writeConcernError (testdata/commands/mongod_inputs).
func TestWriteConcernOnStandalone(t *testing.T) {
	db := startServer(t, func(c *server.Config) { c.Standalone = true }).client().Database("fid")
	insert := func(id int, wc bson.D) error {
		_, err := run(t, db, bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: id}}}},
			{Key: "writeConcern", Value: wc}})
		return err
	}
	err := insert(1, bson.D{{Key: "w", Value: 2}})
	wantCode(t, err, 2, "BadValue")
	if !strings.Contains(err.Error(), "cannot use 'w' > 1 when a host is not replicated") {
		t.Errorf("w: 2 on a standalone: %v", err)
	}
	wantCode(t, insert(2, bson.D{{Key: "w", Value: "dc"}}), 2, "BadValue")
	if err := insert(3, bson.D{{Key: "w", Value: "majority"}, {Key: "j", Value: true}, {Key: "wtimeout", Value: 100}}); err != nil {
		t.Fatalf("w: majority on a standalone: %v", err)
	}
	if n, err := db.Collection("c").CountDocuments(ctx, bson.D{}); err != nil || n != 1 {
		t.Fatalf("documents written: %d (%v), want only the acknowledged one", n, err)
	}
}

// TestFailedCommandReportsWriteConcernError: a command that fails on the
// replica set still reports the write concern it could not satisfy, in
// writeConcernError beside the command's own error, as mongod does.
func TestFailedCommandReportsWriteConcernError(t *testing.T) {
	db, coll := startCollection(t, "fid", "c")
	if _, err := coll.InsertOne(ctx, bson.M{"_id": 1}); err != nil {
		t.Fatal(err)
	}
	_, err := run(t, db, bson.D{{Key: "dropIndexes", Value: "c"}, {Key: "index", Value: "nosuch"},
		{Key: "writeConcern", Value: bson.D{{Key: "w", Value: 50}}}})
	wantCode(t, err, 27, "IndexNotFound")
	var ce mongo.CommandError
	if !errors.As(err, &ce) {
		t.Fatalf("not a command error: %v", err)
	}
	wce, ok := ce.Raw.Lookup("writeConcernError").DocumentOK()
	if !ok || wce.Lookup("codeName").StringValue() != "UnsatisfiableWriteConcern" {
		t.Errorf("reply %v: want a writeConcernError", ce.Raw)
	}
}

// TestGetMoreFractionalBatchSize: getMore drops a batch size's fraction
// as mongod does (1.9 is 1).
func TestGetMoreFractionalBatchSize(t *testing.T) {
	db, coll := startCollection(t, "fid", "c")
	if _, err := coll.InsertMany(ctx, []any{bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "_id", Value: 2}}, bson.D{{Key: "_id", Value: 3}}}); err != nil {
		t.Fatal(err)
	}
	sc := oneSession(t, db)
	var first struct {
		Cursor struct {
			ID int64 `bson:"id"`
		} `bson:"cursor"`
	}
	if err := db.RunCommand(sc, bson.D{{Key: "find", Value: "c"}, {Key: "batchSize", Value: 1}}).Decode(&first); err != nil {
		t.Fatal(err)
	}
	var more struct {
		Cursor struct {
			NextBatch []bson.Raw `bson:"nextBatch"`
		} `bson:"cursor"`
	}
	err := db.RunCommand(sc, bson.D{{Key: "getMore", Value: first.Cursor.ID}, {Key: "collection", Value: "c"}, {Key: "batchSize", Value: 1.9}}).Decode(&more)
	if err != nil || len(more.Cursor.NextBatch) != 1 {
		t.Fatalf("getMore with batchSize 1.9: %d documents (%v), want 1", len(more.Cursor.NextBatch), err)
	}
}
