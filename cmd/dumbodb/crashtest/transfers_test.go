package crashtest

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// The transactional writer: transfers between accounts, each a
// transaction that moves an amount and records the transfer. After every
// kill the total must be what it was and every acknowledged transfer must
// be there: a transaction is all there or not at all.
const (
	accounts     = 10
	openingFunds = 1000
)

// transfers records the transfers the server acknowledged.
type transfers struct {
	mu    sync.Mutex
	acked []string
}

// openAccounts creates the accounts once.
func openAccounts(t *testing.T, db *mongo.Database) {
	t.Helper()
	ctx := context.Background()
	if n, _ := db.Collection("accounts").CountDocuments(ctx, bson.D{}); n > 0 {
		return
	}
	docs := make([]any, accounts)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: i}, {Key: "bal", Value: openingFunds}}
	}
	if _, err := db.Collection("accounts").InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
}

// transferWriter moves money until the server dies.
func transferWriter(client *mongo.Client, tr *transfers, name string, rng *rand.Rand) {
	ctx := context.Background()
	db := client.Database("crash")
	for i := 0; ; i++ {
		id := fmt.Sprintf("%s-%d", name, i)
		from, to, amount := rng.Intn(accounts), rng.Intn(accounts), 1+rng.Intn(50)
		sess, err := client.StartSession()
		if err != nil {
			return
		}
		// A transfer caught by the kill would wait out the client's timeout
		// (twice: commit, then abort); three seconds are ample for the rest, and a
		// transfer that times out is only not acknowledged.
		tctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		err = transfer(mongo.NewSessionContext(tctx, sess), db, sess, id, from, to, amount)
		cancel()
		ectx, cancel := context.WithTimeout(ctx, time.Second)
		sess.EndSession(ectx)
		cancel()
		// A write conflict is a transfer not made; any other error (the
		// driver labels even a dead server's TransientTransactionError
		// inside a transaction) means the server died.
		var se mongo.ServerError
		if err != nil && !(errors.As(err, &se) && se.HasErrorCode(112)) {
			return
		}
		if err == nil {
			tr.mu.Lock()
			tr.acked = append(tr.acked, id)
			tr.mu.Unlock()
		}
	}
}

// transfer runs one transfer as a transaction. It does not retry (the
// driver's WithTransaction would go on for two minutes once the server is
// killed): a conflict is simply a transfer not made.
func transfer(sc context.Context, db *mongo.Database, sess *mongo.Session, id string, from, to, amount int) error {
	if err := sess.StartTransaction(); err != nil {
		return err
	}
	accts := db.Collection("accounts")
	_, err := accts.UpdateOne(sc, bson.D{{Key: "_id", Value: from}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "bal", Value: -amount}}}})
	if err == nil {
		_, err = accts.UpdateOne(sc, bson.D{{Key: "_id", Value: to}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "bal", Value: amount}}}})
	}
	if err == nil {
		_, err = db.Collection("transfers").InsertOne(sc, bson.D{{Key: "_id", Value: id}, {Key: "amount", Value: amount}})
	}
	if err != nil {
		sess.AbortTransaction(sc)
		return err
	}
	return sess.CommitTransaction(sc)
}

// checkTransfers checks the total and the acknowledged transfers.
func checkTransfers(t *testing.T, db *mongo.Database, tr *transfers) {
	t.Helper()
	ctx := context.Background()
	cur, err := db.Collection("accounts").Find(ctx, bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	var accts []struct {
		Bal int `bson:"bal"`
	}
	if err := cur.All(ctx, &accts); err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, a := range accts {
		total += a.Bal
	}
	if len(accts) != accounts || total != accounts*openingFunds {
		t.Fatalf("%d accounts hold %d in all, want %d: a transaction was half applied", len(accts), total, accounts*openingFunds)
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	for _, id := range tr.acked {
		if n, _ := db.Collection("transfers").CountDocuments(ctx, bson.D{{Key: "_id", Value: id}}); n != 1 {
			t.Fatalf("acknowledged transfer %s is missing", id)
		}
	}
}
