package server_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readconcern"
)

// The bank over two databases: each writer moves units between its
// account in a.acct and its account in b.acct in transactions; the sum of
// both collections never changes, and a reader of one point in time must
// always see it.
const (
	bankWriters = 16
	bankReaders = 4
	bankStart   = 1000
)

// TestCrossDatabaseTransferSeenWhole: snapshot readers, in transactions and
// with atClusterTime, never see one database's half of a transfer without
// the other's, while writers commit transfers between two databases.
func TestCrossDatabaseTransferSeenWhole(t *testing.T) {
	ts := startServer(t)
	client := ts.client()
	for _, db := range []string{"a", "b"} {
		docs := make([]any, bankWriters)
		for w := range docs {
			docs[w] = bson.D{{Key: "_id", Value: w}, {Key: "bal", Value: bankStart}}
		}
		if _, err := client.Database(db).Collection("acct").InsertMany(ctx, docs); err != nil {
			t.Fatal(err)
		}
	}
	run := 30 * time.Second
	if testing.Short() {
		run = 3 * time.Second
	}
	deadline := time.Now().Add(run)
	var transfers, reads atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, bankWriters+bankReaders)
	for w := range bankWriters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				if err := transfer(client, w, 1-2*(w%2)); err != nil {
					errs <- fmt.Errorf("writer %d: %w", w, err)
					return
				}
				transfers.Add(1)
			}
		}()
	}
	for r := range bankReaders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; time.Now().Before(deadline); i++ {
				read := snapshotTxnSum
				if (r+i)%2 == 1 {
					read = atClusterTimeSum
				}
				sum, err := read(client)
				if err != nil {
					errs <- fmt.Errorf("reader %d: %w", r, err)
					return
				}
				if sum != 2*bankWriters*bankStart {
					errs <- fmt.Errorf("reader %d saw a sum of %d, want %d", r, sum, 2*bankWriters*bankStart)
					return
				}
				reads.Add(1)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if transfers.Load() == 0 || reads.Load() == 0 {
		t.Fatalf("%d transfers, %d reads: nothing was tested", transfers.Load(), reads.Load())
	}
	t.Logf("%d transfers, %d snapshot reads", transfers.Load(), reads.Load())
}

// transfer moves delta units from writer w's account in a to its account
// in b, in one transaction.
func transfer(client *mongo.Client, w, delta int) error {
	sess, err := client.StartSession()
	if err != nil {
		return err
	}
	defer sess.EndSession(ctx)
	_, err = sess.WithTransaction(ctx, func(sc context.Context) (any, error) {
		for db, d := range map[string]int{"a": -delta, "b": delta} {
			_, err := client.Database(db).Collection("acct").UpdateOne(sc, bson.D{{Key: "_id", Value: w}},
				bson.D{{Key: "$inc", Value: bson.D{{Key: "bal", Value: d}}}})
			if err != nil {
				return nil, err
			}
		}
		return nil, nil
	})
	return err
}

// snapshotTxnSum sums both databases' balances in one snapshot transaction.
func snapshotTxnSum(client *mongo.Client) (int, error) {
	sess, err := client.StartSession()
	if err != nil {
		return 0, err
	}
	defer sess.EndSession(ctx)
	if err := sess.StartTransaction(options.Transaction().SetReadConcern(readconcern.Snapshot())); err != nil {
		return 0, err
	}
	defer sess.AbortTransaction(ctx)
	sc := mongo.NewSessionContext(ctx, sess)
	total := 0
	for _, db := range []string{"a", "b"} {
		n, err := sumBalances(sc, client.Database(db), nil)
		if err != nil {
			return 0, err
		}
		total += n
	}
	return total, nil
}

// atClusterTimeSum reads a with readConcern snapshot, then b at the time
// that read reported.
func atClusterTimeSum(client *mongo.Client) (int, error) {
	var first bson.Raw
	err := client.Database("a").RunCommand(ctx, bson.D{{Key: "find", Value: "acct"}, {Key: "batchSize", Value: bankWriters + 1},
		{Key: "readConcern", Value: bson.D{{Key: "level", Value: "snapshot"}}}}).Decode(&first)
	if err != nil {
		return 0, err
	}
	at, inc, ok := first.Lookup("cursor", "atClusterTime").TimestampOK()
	if !ok {
		return 0, fmt.Errorf("no atClusterTime in %v", first)
	}
	total := batchSum(first.Lookup("cursor", "firstBatch").Array())
	n, err := sumBalances(ctx, client.Database("b"), bson.D{{Key: "level", Value: "snapshot"},
		{Key: "atClusterTime", Value: bson.Timestamp{T: at, I: inc}}})
	return total + n, err
}

// sumBalances sums acct's balances in one batch, with a read concern when
// given.
func sumBalances(c context.Context, db *mongo.Database, rc bson.D) (int, error) {
	cmd := bson.D{{Key: "find", Value: "acct"}, {Key: "batchSize", Value: bankWriters + 1}}
	if rc != nil {
		cmd = append(cmd, bson.E{Key: "readConcern", Value: rc})
	}
	var reply bson.Raw
	if err := db.RunCommand(c, cmd).Decode(&reply); err != nil {
		return 0, err
	}
	return batchSum(reply.Lookup("cursor", "firstBatch").Array()), nil
}

func batchSum(batch bson.RawArray) int {
	vals, _ := batch.Values()
	total := 0
	for _, v := range vals {
		total += int(v.Document().Lookup("bal").AsInt64())
	}
	return total
}

// TestSnapshotTransactionBeginsWithAWrite: a transaction started with
// readConcern snapshot may begin with any statement, a write among them,
// as drivers send for withTransaction({readConcern: "snapshot"}).
func TestSnapshotTransactionBeginsWithAWrite(t *testing.T) {
	ts := startServer(t)
	client := ts.client()
	coll := client.Database("shop").Collection("c")
	coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 0}, {Key: "n", Value: 0}})
	first := []func(sc context.Context) error{
		func(sc context.Context) error {
			_, err := coll.InsertOne(sc, bson.D{{Key: "_id", Value: 1}})
			return err
		},
		func(sc context.Context) error {
			_, err := coll.UpdateOne(sc, bson.D{{Key: "_id", Value: 0}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}})
			return err
		},
		func(sc context.Context) error {
			return coll.FindOneAndUpdate(sc, bson.D{{Key: "_id", Value: 0}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}}).Err()
		},
		func(sc context.Context) error {
			_, err := coll.DeleteOne(sc, bson.D{{Key: "_id", Value: 1}})
			return err
		},
	}
	for i, op := range first {
		sess, err := client.StartSession()
		if err != nil {
			t.Fatal(err)
		}
		_, err = sess.WithTransaction(ctx, func(sc context.Context) (any, error) { return nil, op(sc) },
			options.Transaction().SetReadConcern(readconcern.Snapshot()))
		sess.EndSession(ctx)
		if err != nil {
			t.Fatalf("statement %d first in a snapshot transaction: %v", i, err)
		}
	}
	var doc bson.M
	if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: 0}}).Decode(&doc); err != nil || doc["n"] != int32(2) {
		t.Fatalf("after the transactions: %v %v", doc, err)
	}
	_, err := run(t, client.Database("shop"), bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{}}},
		{Key: "readConcern", Value: bson.D{{Key: "level", Value: "snapshot"}}}})
	wantCode(t, err, 72, "InvalidOptions") // outside a transaction, as on mongod
}

// TestFindAndModifyRetryOfAnotherWrite: a findAndModify that reuses the
// lsid and txnNumber of a retryable insert answers mongod's error, and
// the connection goes on.
func TestFindAndModifyRetryOfAnotherWrite(t *testing.T) {
	ts := startServer(t)
	nc := ts.dial()
	lsid := bson.D{{Key: "id", Value: newUUID()}}
	insert := bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: 1}, {Key: "n", Value: 0}}}},
		{Key: "lsid", Value: lsid}, {Key: "txnNumber", Value: int64(1)}, {Key: "$db", Value: "db"}}
	if r := raw(t, nc, insert); r["n"] != int32(1) {
		t.Fatalf("insert: %v", r)
	}
	fam := bson.D{{Key: "findAndModify", Value: "c"}, {Key: "query", Value: bson.D{{Key: "_id", Value: 1}}},
		{Key: "update", Value: bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}}},
		{Key: "lsid", Value: lsid}, {Key: "txnNumber", Value: int64(1)}, {Key: "$db", Value: "db"}}
	wantRawCode(t, raw(t, nc, fam), 40606)
	if r := raw(t, nc, bson.D{{Key: "ping", Value: 1}, {Key: "$db", Value: "admin"}}); r["ok"] != 1.0 {
		t.Fatalf("ping after the refused retry: %v", r)
	}
}
