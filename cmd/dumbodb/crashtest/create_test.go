package crashtest

import (
	"context"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// Creating databases under kill -9 (docs/design/resources.md, "Creating a
// database"): clients create databases by their first insert, one after
// the other, and drop some, while the server is killed. After a restart a
// database whose first insert was acknowledged is there with exactly its
// documents, a dropped one whose drop was acknowledged is gone, and any
// other database is one a client tried to create, with all its documents:
// a creation cut short leaves no database, never an empty or broken one.

// createdPrefix starts the names of the databases this test creates.
const createdPrefix = "new-"

// creations records what the server acknowledged.
type creations struct {
	mu       sync.Mutex
	docs     map[string]int  // database -> documents its first insert held (tried)
	acked    map[string]bool // its first insert was acknowledged
	dropped  map[string]bool // its drop was acknowledged
	dropping map[string]bool // its drop was sent
}

func newCreations() *creations {
	return &creations{docs: map[string]int{}, acked: map[string]bool{},
		dropped: map[string]bool{}, dropping: map[string]bool{}}
}

// createDocs are a new database's documents: n of them, each naming it.
func createDocs(db string, n int) []any {
	docs := make([]any, n)
	for j := range docs {
		docs[j] = bson.M{"_id": j, "db": db, "n": n}
	}
	return docs
}

// create makes db by inserting n documents, recording it tried first and
// acknowledged after.
func (cr *creations) create(client *mongo.Client, db string, n int) error {
	cr.mu.Lock()
	cr.docs[db] = n
	cr.mu.Unlock()
	if _, err := client.Database(db).Collection("c").InsertMany(context.Background(), createDocs(db, n)); err != nil {
		return err
	}
	cr.mu.Lock()
	cr.acked[db] = true
	cr.mu.Unlock()
	return nil
}

// creator creates databases one after the other until the server dies.
func creator(client *mongo.Client, cr *creations, name string, rng *rand.Rand) {
	for i := 0; ; i++ {
		if cr.create(client, fmt.Sprintf("%s%s-%d", createdPrefix, name, i), 1+rng.Intn(4)) != nil {
			return
		}
	}
}

// dropper drops acknowledged databases now and then until the server dies.
func dropper(client *mongo.Client, cr *creations, rng *rand.Rand) {
	for {
		time.Sleep(time.Duration(rng.Intn(20)) * time.Millisecond)
		cr.mu.Lock()
		var victim string
		for db := range cr.acked {
			if !cr.dropping[db] {
				victim = db
				break
			}
		}
		if victim != "" {
			cr.dropping[victim] = true
		}
		cr.mu.Unlock()
		if victim == "" {
			continue
		}
		if client.Database(victim).Drop(context.Background()) != nil {
			return
		}
		cr.mu.Lock()
		cr.dropped[victim] = true
		cr.mu.Unlock()
	}
}

// checkCreations verifies the databases after a restart against the
// ledger, and forgets what a crash lost, returning the names whose
// creation it cut short, for the next round to create again.
func checkCreations(t *testing.T, client *mongo.Client, cr *creations) (lost []string) {
	t.Helper()
	ctx := context.Background()
	names, err := client.ListDatabaseNames(ctx, bson.M{})
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, db := range names {
		if strings.HasPrefix(db, createdPrefix) {
			listed[db] = true
		}
	}
	cr.mu.Lock()
	defer cr.mu.Unlock()
	for db := range listed {
		n, tried := cr.docs[db]
		if !tried {
			t.Fatalf("database %s appeared, though no client created it", db)
		}
		if cr.dropped[db] {
			t.Fatalf("database %s is back after its drop was acknowledged", db)
		}
		checkCreated(t, client, db, n)
	}
	for db := range cr.acked {
		if !listed[db] && !cr.dropping[db] {
			t.Fatalf("database %s, whose first insert was acknowledged, is gone", db)
		}
	}
	for db := range cr.docs {
		if !listed[db] { // lost before its acknowledgement, or dropped
			if !cr.dropping[db] {
				lost = append(lost, db)
			}
			delete(cr.docs, db)
			delete(cr.acked, db)
		}
		delete(cr.dropping, db) // a drop not acknowledged did not happen
		delete(cr.dropped, db)
	}
	for db := range listed {
		cr.acked[db] = true // there for good now
	}
	slices.Sort(lost)
	return lost
}

// checkCreated reads a created database: exactly the n documents of its
// first insert.
func checkCreated(t *testing.T, client *mongo.Client, db string, n int) {
	t.Helper()
	cur, err := client.Database(db).Collection("c").Find(context.Background(), bson.M{})
	if err != nil {
		t.Fatalf("database %s does not open: %v", db, err)
	}
	var docs []struct {
		ID int `bson:"_id"`
		DB string
		N  int
	}
	if err := cur.All(context.Background(), &docs); err != nil {
		t.Fatalf("database %s: %v", db, err)
	}
	if len(docs) != n {
		t.Fatalf("database %s holds %d documents, its first insert %d", db, len(docs), n)
	}
	for j, d := range docs {
		if d.ID != j || d.DB != db || d.N != n {
			t.Fatalf("database %s: document %d is %+v", db, j, d)
		}
	}
}

func TestKillDashNineWhileCreatingDatabases(t *testing.T) {
	rounds := 12
	if testing.Short() {
		rounds = 3
	}
	dir := t.TempDir()
	cr := newCreations()
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	// Checkpoints write new databases' stores and idle closes both write
	// them and remove their logs: kills land during those too.
	variants := [][]string{nil, {"--syncdelay", "1"}, {"--idleDatabaseSeconds", "1"}}
	created, recreated := 0, 0
	for round := 0; round < rounds; round++ {
		p, client := start(t, dir, variants[round%len(variants)]...)
		lost := checkCreations(t, client, cr)
		created = max(created, len(cr.acked))
		// What a cut-short creation left must not stand in the way of
		// creating the same name again.
		for _, db := range lost {
			if err := cr.create(client, db, 2); err != nil {
				t.Fatalf("creating %s again after a crash cut its creation short: %v", db, err)
			}
			recreated++
		}
		var wg sync.WaitGroup
		for w := range 3 {
			wg.Go(func() {
				creator(client, cr, fmt.Sprintf("r%d-w%d", round, w), rand.New(rand.NewSource(int64(round*10+w))))
			})
		}
		wg.Go(func() { dropper(client, cr, rand.New(rand.NewSource(int64(round)))) })
		time.Sleep(time.Duration(200+rng.Intn(700)) * time.Millisecond)
		p.StopT(t, syscall.SIGKILL)
		wg.Wait()
		dctx, cancel := context.WithTimeout(context.Background(), time.Second)
		client.Disconnect(dctx)
		cancel()
	}
	p, client := start(t, dir)
	defer p.StopT(t, syscall.SIGTERM)
	defer client.Disconnect(context.Background())
	checkCreations(t, client, cr)
	if created < rounds {
		t.Fatalf("only %d databases were there after %d rounds of creations", created, rounds)
	}
	t.Logf("up to %d databases kept over %d kills; %d creations cut short and made again", created, rounds, recreated)
}
