package main

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/dumbodb/dumbodb/internal/dumboproc"
	"github.com/dumbodb/dumbodb/internal/testload"
)

// TestCommittedTransactionSurvivesKill9: a transaction acknowledged by
// commitTransaction is all there after SIGKILL and a restart.
func TestCommittedTransactionSurvivesKill9(t *testing.T) {
	dir := t.TempDir()
	p := dumboproc.StartT(t, dir)
	ctx := context.Background()
	client, err := mongo.Connect(options.Client().ApplyURI(p.URL()).SetTimeout(testload.Timeout(10 * time.Second)))
	if err != nil {
		t.Fatal(err)
	}
	db := client.Database("bank")
	db.Collection("accounts").InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "bal", Value: 10}})
	sess, _ := client.StartSession()
	sess.StartTransaction()
	sc := mongo.NewSessionContext(ctx, sess)
	if _, err := db.Collection("accounts").UpdateOne(sc, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "bal", Value: -5}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Collection("transfers").InsertOne(sc, bson.D{{Key: "_id", Value: "x"}}); err != nil {
		t.Fatal(err)
	}
	if err := sess.CommitTransaction(ctx); err != nil {
		t.Fatal(err)
	}
	p, client = killAndRestart(t, p, client, dir)
	db = client.Database("bank")
	var acct bson.M
	db.Collection("accounts").FindOne(ctx, bson.D{{Key: "_id", Value: 1}}).Decode(&acct)
	n, _ := db.Collection("transfers").CountDocuments(ctx, bson.D{})
	if acct["bal"] != int32(5) || n != 1 {
		t.Fatalf("after kill -9: account %v, %d transfers\n%s", acct, n, p.Output())
	}
}

// TestCrossDatabaseTransfersWholeAfterKill9: transfers between two
// databases in transactions, killed with SIGKILL mid-stream: after a
// restart a reader sees each transfer in both databases or in neither, so
// the balances still add up.
func TestCrossDatabaseTransfersWholeAfterKill9(t *testing.T) {
	const writers, start = 4, 100
	dir := t.TempDir()
	p := dumboproc.StartT(t, dir)
	ctx := context.Background()
	c, err := mongo.Connect(options.Client().ApplyURI(p.URL()).SetTimeout(testload.Timeout(10 * time.Second)))
	if err != nil {
		t.Fatal(err)
	}
	for _, db := range []string{"a", "b"} {
		for w := range writers {
			if _, err := c.Database(db).Collection("acct").InsertOne(ctx, bson.D{{Key: "_id", Value: w}, {Key: "bal", Value: start}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	var done atomic.Int64
	writer := c // c is replaced after the kill while the writers may still run
	for w := range writers {
		go func() {
			for {
				sess, err := writer.StartSession()
				if err != nil {
					return
				}
				_, err = sess.WithTransaction(ctx, func(sc context.Context) (any, error) {
					for db, d := range map[string]int{"a": -1, "b": 1} {
						if _, err := writer.Database(db).Collection("acct").UpdateOne(sc, bson.D{{Key: "_id", Value: w}},
							bson.D{{Key: "$inc", Value: bson.D{{Key: "bal", Value: d}}}}); err != nil {
							return nil, err
						}
					}
					return nil, nil
				})
				sess.EndSession(ctx)
				if err != nil {
					return // the server is gone
				}
				done.Add(1)
			}
		}()
	}
	for done.Load() < 50 {
		time.Sleep(10 * time.Millisecond)
	}
	p, c = killAndRestart(t, p, c, dir)
	total := 0
	for _, db := range []string{"a", "b"} {
		cur, err := c.Database(db).Collection("acct").Find(ctx, bson.D{})
		if err != nil {
			t.Fatal(err)
		}
		var docs []bson.M
		if err := cur.All(ctx, &docs); err != nil {
			t.Fatal(err)
		}
		for _, d := range docs {
			total += int(d["bal"].(int32))
		}
	}
	if total != 2*writers*start {
		t.Fatalf("after kill -9 (%d transfers acknowledged): the balances add up to %d, want %d\n%s", done.Load(), total, 2*writers*start, p.Output())
	}
}

// killAndRestart kills the server with SIGKILL, drops the client, starts
// a server on the same data directory and connects a new client to it.
func killAndRestart(t *testing.T, p *dumboproc.Proc, c *mongo.Client, dir string) (*dumboproc.Proc, *mongo.Client) {
	t.Helper()
	p.Kill()
	dctx, cancel := context.WithTimeout(context.Background(), time.Second)
	c.Disconnect(dctx)
	cancel()
	p = dumboproc.StartT(t, dir)
	c, err := mongo.Connect(options.Client().ApplyURI(p.URL()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Disconnect(context.Background()) })
	return p, c
}
