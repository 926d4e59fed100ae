package server_test

import (
	"context"
	"errors"
	"math/rand"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestWithTransaction: the driver's WithTransaction commits writes to two
// collections as one unit; inside, the transaction reads its own writes
// (through an index too) and outside nothing shows until the commit.
func TestWithTransaction(t *testing.T) {
	ts := startServer(t)
	client := ts.client()
	db := client.Database("shop")
	accounts, orders := db.Collection("accounts"), db.Collection("orders")
	if _, err := accounts.InsertMany(ctx, []any{bson.D{{Key: "_id", Value: "a"}, {Key: "bal", Value: 100}}, bson.D{{Key: "_id", Value: "b"}, {Key: "bal", Value: 0}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := orders.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "sku", Value: 1}}}); err != nil {
		t.Fatal(err)
	}
	sess, err := client.StartSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.EndSession(ctx)
	_, err = sess.WithTransaction(ctx, func(sc context.Context) (any, error) {
		if _, err := accounts.UpdateOne(sc, bson.D{{Key: "_id", Value: "a"}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "bal", Value: -30}}}}); err != nil {
			return nil, err
		}
		if _, err := accounts.UpdateOne(sc, bson.D{{Key: "_id", Value: "b"}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "bal", Value: 30}}}}); err != nil {
			return nil, err
		}
		if _, err := orders.InsertOne(sc, bson.D{{Key: "_id", Value: 1}, {Key: "sku", Value: "x1"}}); err != nil {
			return nil, err
		}
		var own bson.M
		if err := orders.FindOne(sc, bson.D{{Key: "sku", Value: "x1"}}).Decode(&own); err != nil {
			return nil, err
		}
		if n, _ := orders.CountDocuments(ctx, bson.D{}); n != 0 {
			t.Errorf("outside the transaction %d orders are visible before the commit", n)
		}
		return nil, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var a, b bson.M
	accounts.FindOne(ctx, bson.D{{Key: "_id", Value: "a"}}).Decode(&a)
	accounts.FindOne(ctx, bson.D{{Key: "_id", Value: "b"}}).Decode(&b)
	if a["bal"] != int32(70) || b["bal"] != int32(30) {
		t.Fatalf("after commit: a %v b %v", a, b)
	}
	if n, _ := orders.CountDocuments(ctx, bson.D{{Key: "sku", Value: "x1"}}); n != 1 {
		t.Fatalf("orders after commit: %d", n)
	}
}

// TestTransactionAbortAndIsolation: an aborted transaction leaves
// nothing; reads inside see the snapshot (no non-repeatable or phantom
// reads) while others write; after abort the transaction is gone.
func TestTransactionAbortAndIsolation(t *testing.T) {
	ts := startServer(t)
	client := ts.client()
	coll := client.Database("db").Collection("c")
	coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "v", Value: "old"}})
	sess, _ := client.StartSession()
	defer sess.EndSession(ctx)
	if err := sess.StartTransaction(); err != nil {
		t.Fatal(err)
	}
	sc := mongo.NewSessionContext(ctx, sess)
	var first bson.M
	if err := coll.FindOne(sc, bson.D{{Key: "_id", Value: 1}}).Decode(&first); err != nil {
		t.Fatal(err)
	}
	coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$set", Value: bson.D{{Key: "v", Value: "new"}}}})
	coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 2}})
	var again bson.M
	coll.FindOne(sc, bson.D{{Key: "_id", Value: 1}}).Decode(&again)
	if n, _ := coll.CountDocuments(sc, bson.D{}); again["v"] != "old" || n != 1 {
		t.Fatalf("inside after others wrote: %v, %d documents", again, n)
	}
	if _, err := coll.InsertOne(sc, bson.D{{Key: "_id", Value: 3}}); err != nil {
		t.Fatal(err)
	}
	if err := sess.AbortTransaction(ctx); err != nil {
		t.Fatal(err)
	}
	if n, _ := coll.CountDocuments(ctx, bson.D{{Key: "_id", Value: 3}}); n != 0 {
		t.Fatal("an aborted insert is visible")
	}
	if err := sess.CommitTransaction(ctx); err == nil {
		t.Fatal("commit after abort succeeded")
	}
}

// TestTransactionWriteConflict: the second of two transactions writing one
// document fails at once with WriteConflict and TransientTransactionError,
// changes nothing, and WithTransaction's retry then succeeds; a plain
// write waits for the holder instead of failing.
func TestTransactionWriteConflict(t *testing.T) {
	ts := startServer(t)
	client := ts.client()
	coll := client.Database("db").Collection("c")
	coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "n", Value: 0}})
	inc := bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}}
	s1, _ := client.StartSession()
	s2, _ := client.StartSession()
	defer s1.EndSession(ctx)
	defer s2.EndSession(ctx)
	s1.StartTransaction()
	s2.StartTransaction()
	c1, c2 := mongo.NewSessionContext(ctx, s1), mongo.NewSessionContext(ctx, s2)
	if _, err := coll.UpdateOne(c1, bson.D{{Key: "_id", Value: 1}}, inc); err != nil {
		t.Fatal(err)
	}
	_, err := coll.UpdateOne(c2, bson.D{{Key: "_id", Value: 1}}, inc)
	var se mongo.ServerError
	if !errors.As(err, &se) || !se.HasErrorCode(112) || !se.HasErrorLabel("TransientTransactionError") {
		t.Fatalf("second writer: %v", err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // a plain write waits for s1 to commit
		defer wg.Done()
		if _, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}}, inc); err != nil {
			t.Error(err)
		}
	}()
	if err := s1.CommitTransaction(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	var got bson.M
	coll.FindOne(ctx, bson.D{{Key: "_id", Value: 1}}).Decode(&got)
	if got["n"] != int32(2) {
		t.Fatalf("n = %v, want 2 (s1 and the plain write; s2 aborted)", got["n"])
	}
}

// TestTransactionRules: commands a transaction may not run, DDL on an
// existing collection, a second branch of a database, and version control.
func TestTransactionRules(t *testing.T) {
	ts := startServer(t)
	client := ts.client()
	db := client.Database("db")
	db.Collection("old").InsertOne(ctx, bson.D{{Key: "_id", Value: 1}})
	sess, _ := client.StartSession()
	defer sess.EndSession(ctx)
	try := func(name string, code int32, op func(sc context.Context) error) {
		t.Helper()
		sess.StartTransaction()
		sc := mongo.NewSessionContext(ctx, sess)
		err := op(sc)
		var se mongo.ServerError
		if !errors.As(err, &se) || !se.HasErrorCode(int(code)) {
			t.Fatalf("%s in a transaction: %v, want code %d", name, err, code)
		}
		sess.AbortTransaction(ctx)
	}
	try("count", 263, func(sc context.Context) error {
		return db.RunCommand(sc, bson.D{{Key: "count", Value: "old"}}).Err()
	})
	try("createIndexes on an existing collection", 263, func(sc context.Context) error {
		_, err := db.Collection("old").Indexes().CreateOne(sc, mongo.IndexModel{Keys: bson.D{{Key: "a", Value: 1}}})
		return err
	})
	try("create of an existing collection", 48, func(sc context.Context) error {
		return db.CreateCollection(sc, "old") // outside a transaction: ok, the options being the same
	})
	try("$out", 263, func(sc context.Context) error {
		_, err := db.Collection("old").Aggregate(sc, mongo.Pipeline{{{Key: "$out", Value: "copy"}}})
		return err
	})
	try("dumboCommit", 263, func(sc context.Context) error {
		return db.RunCommand(sc, bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "m"}}).Err()
	})
	mustRun(t, db, bson.D{{Key: "dumboBranch", Value: 1}, {Key: "branch", Value: "feat"}})
	try("a second branch of the database", 263, func(sc context.Context) error {
		if _, err := db.Collection("old").InsertOne(sc, bson.D{{Key: "_id", Value: 2}}); err != nil {
			return err
		}
		_, err := client.Database("db@feat").Collection("c").InsertOne(sc, bson.D{{Key: "_id", Value: 1}})
		return err
	})
	// A new collection and an index on it are allowed.
	sess.StartTransaction()
	sc := mongo.NewSessionContext(ctx, sess)
	if err := db.CreateCollection(sc, "fresh"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Collection("fresh").Indexes().CreateOne(sc, mongo.IndexModel{Keys: bson.D{{Key: "a", Value: 1}}}); err != nil {
		t.Fatal(err)
	}
	if err := sess.CommitTransaction(ctx); err != nil {
		t.Fatal(err)
	}
	specs, _ := db.Collection("fresh").Indexes().ListSpecifications(ctx)
	if len(specs) != 2 {
		t.Fatalf("indexes of the collection made in a transaction: %v", specs)
	}
	_ = options.Client
}

// TestTransactionsAgainstModel: clients run transactions that read
// counters and write them back incremented (read-modify-write, where a
// lost update would show), some aborting on purpose, many conflicting.
// Each counter must end equal to the number of committed transactions
// that touched it: every committed write visible, no aborted one, no lost
// update.
func TestTransactionsAgainstModel(t *testing.T) {
	ts := startServer(t)
	client := ts.client()
	coll := client.Database("db").Collection("counters")
	const keys, clients, perClient = 8, 4, 25
	for k := 0; k < keys; k++ {
		coll.InsertOne(ctx, bson.D{{Key: "_id", Value: k}, {Key: "n", Value: 0}})
	}
	var mu sync.Mutex
	model := make([]int32, keys)
	committed, conflicts := 0, 0
	var wg sync.WaitGroup
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(c)))
			for i := 0; i < perClient; i++ {
				touched := rng.Perm(keys)[:1+rng.Intn(3)]
				ok, err := incrementInTransaction(client, coll, touched, rng.Intn(5) == 0)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				if ok {
					committed++
					for _, k := range touched {
						model[k]++
					}
				} else {
					conflicts++
				}
				mu.Unlock()
			}
		}(c)
	}
	wg.Wait()
	for k := 0; k < keys; k++ {
		var got struct{ N int32 }
		if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: k}}).Decode(&got); err != nil {
			t.Fatal(err)
		}
		if got.N != model[k] {
			t.Errorf("counter %d = %d, committed transactions touching it: %d", k, got.N, model[k])
		}
	}
	if committed == 0 {
		t.Fatal("no transaction committed")
	}
	t.Logf("%d committed, %d aborted or conflicted", committed, conflicts)
}

// incrementInTransaction reads and increments the counters in one
// transaction; it reports whether the transaction committed (false: it
// aborted on purpose or lost a write conflict).
func incrementInTransaction(client *mongo.Client, coll *mongo.Collection, keys []int, abort bool) (bool, error) {
	sess, err := client.StartSession()
	if err != nil {
		return false, err
	}
	defer sess.EndSession(ctx)
	if err := sess.StartTransaction(); err != nil {
		return false, err
	}
	sc := mongo.NewSessionContext(ctx, sess)
	for _, k := range keys {
		var cur struct{ N int32 }
		err := coll.FindOne(sc, bson.D{{Key: "_id", Value: k}}).Decode(&cur)
		if err == nil {
			_, err = coll.UpdateOne(sc, bson.D{{Key: "_id", Value: k}}, bson.D{{Key: "$set", Value: bson.D{{Key: "n", Value: cur.N + 1}}}})
		}
		if err != nil {
			sess.AbortTransaction(ctx)
			return false, transientOrFatal(err)
		}
	}
	if abort {
		return false, sess.AbortTransaction(ctx)
	}
	if err := sess.CommitTransaction(ctx); err != nil {
		return false, transientOrFatal(err)
	}
	return true, nil
}

// transientOrFatal swallows a transaction's transient error (a write
// conflict) and returns any other.
func transientOrFatal(err error) error {
	var se mongo.ServerError
	if errors.As(err, &se) && se.HasErrorLabel("TransientTransactionError") {
		return nil
	}
	return err
}

// TestTransactionLifetime: setParameter shortens
// transactionLifetimeLimitSeconds, and an older open transaction is then
// aborted (its next statement gets NoSuchTransaction).
func TestTransactionLifetime(t *testing.T) {
	ts := startServer(t)
	client := ts.client()
	admin := client.Database("admin")
	res := mustRun(t, admin, bson.D{{Key: "setParameter", Value: 1}, {Key: "transactionLifetimeLimitSeconds", Value: 1}})
	if res["was"] != int64(60) {
		t.Fatalf("setParameter: %v", res)
	}
	_, err := run(t, admin, bson.D{{Key: "setParameter", Value: 1}, {Key: "bogus", Value: 1}})
	wantCode(t, err, 72, "InvalidOptions")
	coll := client.Database("db").Collection("c")
	sess, _ := client.StartSession()
	defer sess.EndSession(ctx)
	sess.StartTransaction()
	sc := mongo.NewSessionContext(ctx, sess)
	if _, err := coll.InsertOne(sc, bson.D{{Key: "_id", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := coll.FindOne(sc, bson.D{{Key: "_id", Value: 1}}).Err()
		var se mongo.ServerError
		if errors.As(err, &se) && se.HasErrorCode(251) {
			break
		}
		if err != nil || time.Now().After(deadline) {
			t.Fatalf("statement of an expired transaction: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if n, _ := coll.CountDocuments(ctx, bson.D{}); n != 0 {
		t.Fatalf("%d documents of the expired transaction are visible", n)
	}
}

// TestCommitDuringTransactionTakesOnlyCommittedData: a dumboCommit while
// another client's transaction is open commits what is committed, not the
// transaction's writes; after the transaction commits, they are the
// working set's change against that commit; a reset --hard drops them as
// one unit.
func TestCommitDuringTransactionTakesOnlyCommittedData(t *testing.T) {
	ts := startServer(t)
	client := ts.client()
	items := client.Database("shop").Collection("items")
	items.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}})
	sess, _ := client.StartSession()
	defer sess.EndSession(ctx)
	sess.StartTransaction()
	sc := mongo.NewSessionContext(ctx, sess)
	for _, id := range []int{2, 3} {
		if _, err := items.InsertOne(sc, bson.D{{Key: "_id", Value: id}}); err != nil {
			t.Fatal(err)
		}
	}
	vc(t, client, "shop", bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "during"}})
	if err := sess.CommitTransaction(ctx); err != nil {
		t.Fatal(err)
	}
	diff := vc(t, client, "shop", bson.D{{Key: "dumboDiff", Value: 1}})
	colls, _ := diff["collections"].(bson.A)
	if len(colls) != 1 {
		t.Fatalf("diff: %v", diff)
	}
	added, _ := get(colls[0], "added").(bson.A)
	if len(added) != 2 || get(added[0], "_id") != int32(2) || get(added[1], "_id") != int32(3) {
		t.Fatalf("the working set's change against the commit: %v, want the transaction's two inserts", diff)
	}
	vc(t, client, "shop", bson.D{{Key: "dumboReset", Value: 1}, {Key: "hard", Value: true}})
	if n, _ := items.CountDocuments(ctx, bson.D{}); n != 1 {
		t.Fatalf("%d documents after reset --hard, want the committed 1", n)
	}
}

// TestTransactionAcrossDatabases: one transaction writes two databases;
// nothing shows outside until the commit, then all of it; every database
// is read at the transaction's one point in time (a write to the second
// database after the transaction's first read is not seen); an abort
// leaves neither.
func TestTransactionAcrossDatabases(t *testing.T) {
	ts := startServer(t)
	client := ts.client()
	orders, stock := client.Database("orders").Collection("o"), client.Database("stock").Collection("s")
	stock.InsertOne(ctx, bson.D{{Key: "_id", Value: "x1"}, {Key: "qty", Value: 5}})
	orders.InsertOne(ctx, bson.D{{Key: "_id", Value: 0}})
	sess, _ := client.StartSession()
	defer sess.EndSession(ctx)
	if err := sess.StartTransaction(); err != nil {
		t.Fatal(err)
	}
	sc := mongo.NewSessionContext(ctx, sess)
	if err := orders.FindOne(sc, bson.D{{Key: "_id", Value: 0}}).Err(); err != nil {
		t.Fatal(err)
	}
	// After the transaction's first read: not in its snapshot.
	stock.InsertOne(ctx, bson.D{{Key: "_id", Value: "late"}, {Key: "qty", Value: 1}})
	if n, _ := stock.CountDocuments(sc, bson.D{}); n != 1 {
		t.Errorf("the transaction sees %d stock documents, want 1 (its snapshot's)", n)
	}
	if _, err := orders.InsertOne(sc, bson.D{{Key: "_id", Value: 1}, {Key: "sku", Value: "x1"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := stock.UpdateOne(sc, bson.D{{Key: "_id", Value: "x1"}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "qty", Value: -1}}}}); err != nil {
		t.Fatal(err)
	}
	if n, _ := orders.CountDocuments(ctx, bson.D{{Key: "_id", Value: 1}}); n != 0 {
		t.Fatal("an uncommitted order is visible outside the transaction")
	}
	if err := sess.CommitTransaction(ctx); err != nil {
		t.Fatal(err)
	}
	var s bson.M
	stock.FindOne(ctx, bson.D{{Key: "_id", Value: "x1"}}).Decode(&s)
	if n, _ := orders.CountDocuments(ctx, bson.D{{Key: "_id", Value: 1}}); n != 1 || s["qty"] != int32(4) {
		t.Fatalf("after commit: %d orders, stock %v", n, s)
	}

	sess.StartTransaction()
	orders.InsertOne(sc, bson.D{{Key: "_id", Value: 2}})
	stock.UpdateOne(sc, bson.D{{Key: "_id", Value: "x1"}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "qty", Value: -1}}}})
	if err := sess.AbortTransaction(ctx); err != nil {
		t.Fatal(err)
	}
	stock.FindOne(ctx, bson.D{{Key: "_id", Value: "x1"}}).Decode(&s)
	if n, _ := orders.CountDocuments(ctx, bson.D{{Key: "_id", Value: 2}}); n != 0 || s["qty"] != int32(4) {
		t.Fatalf("after abort: %d orders, stock %v", n, s)
	}
}

// TestFirstStatementWaitsForHolder: a transaction's first statement that
// meets a document another transaction holds waits for it to end and runs
// on the newer state (no lost update, no abort); a later statement that
// meets one still fails with WriteConflict, as on mongod.
func TestFirstStatementWaitsForHolder(t *testing.T) {
	ts := startServer(t)
	client := ts.client()
	coll := client.Database("db").Collection("c")
	coll.InsertMany(ctx, []any{bson.D{{Key: "_id", Value: 1}, {Key: "n", Value: 0}}, bson.D{{Key: "_id", Value: 2}, {Key: "n", Value: 0}}})
	inc := func(sc context.Context, id int) error {
		_, err := coll.UpdateOne(sc, bson.D{{Key: "_id", Value: id}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}})
		return err
	}
	s1, _ := client.StartSession()
	defer s1.EndSession(ctx)
	s1.StartTransaction()
	sc1 := mongo.NewSessionContext(ctx, s1)
	if err := inc(sc1, 1); err != nil {
		t.Fatal(err)
	}
	s2, _ := client.StartSession()
	defer s2.EndSession(ctx)
	s2.StartTransaction()
	sc2 := mongo.NewSessionContext(ctx, s2)
	second := make(chan error, 1)
	go func() { second <- inc(sc2, 1) }()
	select {
	case err := <-second:
		t.Fatalf("the first statement did not wait for the holder: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	if err := s1.CommitTransaction(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-second; err != nil {
		t.Fatalf("the waiting first statement: %v", err)
	}
	if err := s2.CommitTransaction(ctx); err != nil {
		t.Fatal(err)
	}
	var got bson.M
	coll.FindOne(ctx, bson.D{{Key: "_id", Value: 1}}).Decode(&got)
	if got["n"] != int32(2) {
		t.Fatalf("n = %v, want 2: both transactions' increments", got["n"])
	}

	s1.StartTransaction()
	if err := inc(sc1, 1); err != nil {
		t.Fatal(err)
	}
	s2.StartTransaction()
	if err := inc(sc2, 2); err != nil {
		t.Fatal(err)
	}
	var ce mongo.CommandError
	if err := inc(sc2, 1); !errors.As(err, &ce) || ce.Code != 112 || !ce.HasErrorLabel("TransientTransactionError") {
		t.Fatalf("a later statement on a held document: %v, want WriteConflict", err)
	}
	s1.AbortTransaction(ctx)
}
