package crashtest

import (
	"context"
	"fmt"
	"math/rand"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// autoCommitted records the inserts acknowledged on a database with
// automatic commits.
type autoCommitted struct {
	mu    sync.Mutex
	acked []string
}

func (a *autoCommitted) add(ids ...string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.acked = append(a.acked, ids...)
}

// autoCommitWriter inserts documents one by one, and in pairs in
// transactions, until the server dies.
func autoCommitWriter(client *mongo.Client, a *autoCommitted, name string, inTxn bool) {
	ctx := context.Background()
	coll := client.Database("auto").Collection("c")
	for i := 0; ; i++ {
		id := fmt.Sprintf("%s-%d", name, i)
		if !inTxn {
			if _, err := coll.InsertOne(ctx, bson.M{"_id": id}); err != nil {
				return
			}
			a.add(id)
			continue
		}
		if err := insertPairInTransaction(ctx, client, coll, id); err != nil {
			return
		}
		a.add(id+"a", id+"b")
	}
}

// insertPairInTransaction inserts id+"a" and id+"b" in one transaction.
// Not WithTransaction, which retries for two minutes once the server is
// gone; and the session ends within a second, as ending it on a dead
// server waits out the driver's server selection.
func insertPairInTransaction(ctx context.Context, client *mongo.Client, coll *mongo.Collection, id string) error {
	sess, err := client.StartSession()
	if err != nil {
		return err
	}
	defer func() {
		ectx, cancel := context.WithTimeout(ctx, time.Second)
		sess.EndSession(ectx)
		cancel()
	}()
	if err := sess.StartTransaction(); err != nil {
		return err
	}
	sc := mongo.NewSessionContext(ctx, sess)
	if _, err := coll.InsertMany(sc, []any{bson.M{"_id": id + "a"}, bson.M{"_id": id + "b"}}); err != nil {
		return err
	}
	return sess.CommitTransaction(sc)
}

// checkAutoCommitted checks that the head commit holds every
// acknowledged insert, and that a sample of them is each in exactly one
// commit.
func checkAutoCommitted(t *testing.T, client *mongo.Client, a *autoCommitted, rng *rand.Rand) {
	t.Helper()
	if len(a.acked) == 0 {
		return
	}
	ctx := context.Background()
	cur, err := client.Database("auto@HEAD~0").Collection("c").Find(ctx, bson.M{})
	if err != nil {
		t.Fatal(err)
	}
	var docs []bson.M
	if err := cur.All(ctx, &docs); err != nil {
		t.Fatal(err)
	}
	committed := map[any]bool{}
	for _, d := range docs {
		committed[d["_id"]] = true
	}
	for _, id := range a.acked {
		if !committed[id] {
			t.Fatalf("acknowledged insert %s is not in the head commit (%d documents there)", id, len(docs))
		}
	}
	db := client.Database("auto")
	for range min(10, len(a.acked)) {
		id := a.acked[rng.Intn(len(a.acked))]
		var res bson.M
		err := db.RunCommand(ctx, bson.D{{Key: "dumboLog", Value: 1}, {Key: "collection", Value: "c"}, {Key: "_id", Value: id}}).Decode(&res)
		if err != nil {
			t.Fatal(err)
		}
		if commits, _ := res["commits"].(bson.A); len(commits) != 1 {
			t.Fatalf("insert %s is in %d commits, want exactly one: %v", id, len(commits), res)
		}
	}
}

// TestKillDashNineAutoCommitsEveryAcknowledgedWrite: on a database whose
// dumboConfig turned automatic commits on, writers insert alone and in
// transactions while the server is killed with SIGKILL again and again.
// After each restart every acknowledged insert is in the head commit, in
// exactly one commit, and the switch is still on.
func TestKillDashNineAutoCommitsEveryAcknowledgedWrite(t *testing.T) {
	rounds := 6
	if testing.Short() {
		rounds = 2
	}
	dir := t.TempDir()
	a := &autoCommitted{}
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	for round := 0; round < rounds; round++ {
		p, client := start(t, dir)
		db := client.Database("auto")
		if round == 0 {
			if err := db.RunCommand(context.Background(), bson.D{{Key: "dumboConfig", Value: 1}, {Key: "autoCommit", Value: true}}).Err(); err != nil {
				t.Fatal(err)
			}
		}
		var cfg bson.M
		if err := db.RunCommand(context.Background(), bson.D{{Key: "dumboConfig", Value: 1}}).Decode(&cfg); err != nil || cfg["autoCommit"] != true {
			t.Fatalf("round %d: dumboConfig %v (%v), want automatic commits on", round, cfg, err)
		}
		checkAutoCommitted(t, client, a, rng)
		// The writers' client gives up selecting the server within a
		// second: once it is killed, a transaction's commit would retry
		// for the whole operation timeout.
		writers, err := mongo.Connect(options.Client().ApplyURI(p.URL()).SetServerSelectionTimeout(time.Second).SetRetryWrites(false))
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for w := 0; w < 4; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				autoCommitWriter(writers, a, fmt.Sprintf("w%d-r%d", w, round), w == 3)
			}(w)
		}
		time.Sleep(time.Duration(200+rng.Intn(600)) * time.Millisecond)
		p.StopT(t, syscall.SIGKILL)
		wg.Wait()
		dctx, cancel := context.WithTimeout(context.Background(), time.Second)
		client.Disconnect(dctx)
		writers.Disconnect(dctx)
		cancel()
	}
	p, client := start(t, dir)
	defer p.StopT(t, syscall.SIGTERM)
	defer client.Disconnect(context.Background())
	checkAutoCommitted(t, client, a, rng)
	if len(a.acked) < rounds {
		t.Fatalf("only %d inserts were acknowledged in %d rounds", len(a.acked), rounds)
	}
	t.Logf("%d acknowledged inserts, each in the head commit", len(a.acked))
}
