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
// transaction that moves an amount and records the transfer. The accounts
// are split over two databases, so most transfers are transactions over
// both. After every kill the total must be what it was and every
// acknowledged transfer must be there: a transaction is all there or not
// at all, in every database it wrote.
const (
	accounts     = 10
	openingFunds = 1000
)

// accountDBs hold the accounts: account i is in accountDBs[i%2].
var accountDBs = [2]string{"crash", "crash2"}

func accountsOf(client *mongo.Client, i int) *mongo.Collection {
	return client.Database(accountDBs[i%len(accountDBs)]).Collection("accounts")
}

// transfers records the transfers the server acknowledged.
type transfers struct {
	mu    sync.Mutex
	acked []string
}

// openAccounts creates the accounts once.
func openAccounts(t *testing.T, client *mongo.Client) {
	t.Helper()
	ctx := context.Background()
	if n, _ := accountsOf(client, 0).CountDocuments(ctx, bson.D{}); n > 0 {
		return
	}
	for i := range accounts {
		if _, err := accountsOf(client, i).InsertOne(ctx, bson.D{{Key: "_id", Value: i}, {Key: "bal", Value: openingFunds}}); err != nil {
			t.Fatal(err)
		}
	}
}

// transferWriter moves money until the server dies.
func transferWriter(client *mongo.Client, tr *transfers, name string, rng *rand.Rand) {
	ctx := context.Background()
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
		err = transfer(mongo.NewSessionContext(tctx, sess), client, sess, id, from, to, amount)
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
func transfer(sc context.Context, client *mongo.Client, sess *mongo.Session, id string, from, to, amount int) error {
	if err := sess.StartTransaction(); err != nil {
		return err
	}
	_, err := accountsOf(client, from).UpdateOne(sc, bson.D{{Key: "_id", Value: from}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "bal", Value: -amount}}}})
	if err == nil {
		_, err = accountsOf(client, to).UpdateOne(sc, bson.D{{Key: "_id", Value: to}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "bal", Value: amount}}}})
	}
	if err == nil {
		_, err = client.Database("crash").Collection("transfers").InsertOne(sc, bson.D{{Key: "_id", Value: id}, {Key: "amount", Value: amount}})
	}
	if err != nil {
		sess.AbortTransaction(sc)
		return err
	}
	return sess.CommitTransaction(sc)
}

// checkTransfers checks the total and the acknowledged transfers.
func checkTransfers(t *testing.T, client *mongo.Client, tr *transfers) {
	t.Helper()
	ctx := context.Background()
	n, total := 0, 0
	for _, name := range accountDBs {
		cur, err := client.Database(name).Collection("accounts").Find(ctx, bson.D{})
		if err != nil {
			t.Fatal(err)
		}
		var accts []struct {
			Bal int `bson:"bal"`
		}
		if err := cur.All(ctx, &accts); err != nil {
			t.Fatal(err)
		}
		for _, a := range accts {
			total += a.Bal
		}
		n += len(accts)
	}
	if n != accounts || total != accounts*openingFunds {
		t.Fatalf("%d accounts hold %d in all, want %d: a transaction was half applied", n, total, accounts*openingFunds)
	}
	db := client.Database("crash")
	tr.mu.Lock()
	defer tr.mu.Unlock()
	for _, id := range tr.acked {
		if n, _ := db.Collection("transfers").CountDocuments(ctx, bson.D{{Key: "_id", Value: id}}); n != 1 {
			t.Fatalf("acknowledged transfer %s is missing", id)
		}
	}
}
