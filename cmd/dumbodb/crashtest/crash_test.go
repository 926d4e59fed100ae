// Package crashtest kills a real dumbodb process with SIGKILL while clients
// write to it, restarts it, and checks that every acknowledged write
// survived and that no write is half applied. It is kept apart from the
// unit tests, as bbolt keeps its crash tests.
package crashtest

import (
	"context"
	"fmt"
	"hash/crc32"
	"math/rand"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dumbodb/dumbodb/internal/dumboproc"
	"github.com/dumbodb/dumbodb/internal/testload"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

func TestMain(m *testing.M) { dumboproc.Main(m) }

// start runs dumbodb on dir and returns the process and a connected client.
func start(t *testing.T, dir string, extra ...string) (*dumboproc.Proc, *mongo.Client) {
	t.Helper()
	p := dumboproc.StartT(t, dir, extra...)
	client, err := mongo.Connect(options.Client().
		ApplyURI(p.URL()).SetTimeout(testload.Timeout(30 * time.Second)).SetRetryWrites(false))
	if err != nil {
		t.Fatal(err)
	}
	return p, client
}

// ledger records what the server acknowledged.
type ledger struct {
	mu       sync.Mutex
	batches  map[string]int // batch id -> documents in it (acknowledged)
	tried    map[string]int // batch id -> documents (sent, maybe not acknowledged)
	incAcked map[string]int // counter -> acknowledged increments
	incTried map[string]int
}

func newLedger() *ledger {
	return &ledger{batches: map[string]int{}, tried: map[string]int{}, incAcked: map[string]int{}, incTried: map[string]int{}}
}

// writer inserts batches of documents and increments its counter until
// the server dies.
func writer(coll *mongo.Collection, l *ledger, name string, round int, rng *rand.Rand) {
	ctx := context.Background()
	for i := 0; ; i++ {
		batch := fmt.Sprintf("%s-r%d-%d", name, round, i)
		n := 1 + rng.Intn(5)
		docs := make([]any, n)
		for j := range docs {
			docs[j] = bson.M{"_id": fmt.Sprintf("%s-%d", batch, j), "batch": batch, "n": n, "pad": payload(batch, j)}
		}
		l.mu.Lock()
		l.tried[batch] = n
		l.mu.Unlock()
		if _, err := coll.InsertMany(ctx, docs); err != nil {
			return
		}
		l.mu.Lock()
		l.batches[batch] = n
		l.incTried[name]++
		l.mu.Unlock()
		if _, err := coll.UpdateOne(ctx, bson.M{"_id": "ctr-" + name}, bson.M{"$inc": bson.M{"c": 1}},
			options.UpdateOne().SetUpsert(true)); err != nil {
			return
		}
		l.mu.Lock()
		l.incAcked[name]++
		l.mu.Unlock()
	}
}

// payload is a document's padding; the first document of about one batch
// in 32 gets 70 KiB, so that it is stored as a doctree (over the 64 KiB
// threshold) and kills also land while trees are written.
func payload(batch string, j int) string {
	size := 100 + len(batch)*j%300
	if j == 0 && crc32.ChecksumIEEE([]byte(batch))%32 == 0 {
		size = 70 << 10
	}
	return fmt.Sprintf("%s/%d/%s", batch, j, string(make([]byte, size)))
}

// check verifies the recovered data against the ledger and returns how
// many documents large enough for a doctree it found.
func check(t *testing.T, coll *mongo.Collection, l *ledger) int {
	t.Helper()
	ctx := context.Background()
	cur, err := coll.Find(ctx, bson.M{"batch": bson.M{"$exists": true}})
	if err != nil {
		t.Fatal(err)
	}
	var docs []struct {
		ID    string `bson:"_id"`
		Batch string
		N     int
		Pad   string
	}
	if err := cur.All(ctx, &docs); err != nil {
		t.Fatal(err)
	}
	present := map[string]int{}
	large := 0
	for _, d := range docs {
		present[d.Batch]++
		if len(d.Pad) > 64<<10 {
			large++
		}
		var j int
		fmt.Sscanf(d.ID[len(d.Batch)+1:], "%d", &j)
		if d.Pad != payload(d.Batch, j) {
			t.Fatalf("document %s is damaged", d.ID)
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for b, n := range l.batches {
		if present[b] != n {
			t.Fatalf("acknowledged batch %s: %d of %d documents survived", b, present[b], n)
		}
	}
	for b, got := range present {
		if got != l.tried[b] {
			t.Fatalf("batch %s half applied: %d of %d documents", b, got, l.tried[b])
		}
		l.batches[b] = got // a batch that survived without an ack counts from now on
	}
	for name, acked := range l.incAcked {
		var ctr struct{ C int }
		coll.FindOne(ctx, bson.M{"_id": "ctr-" + name}).Decode(&ctr)
		if ctr.C < acked || ctr.C > l.incTried[name] {
			t.Fatalf("counter %s = %d, acknowledged %d, tried %d", name, ctr.C, acked, l.incTried[name])
		}
		l.incAcked[name], l.incTried[name] = ctr.C, ctr.C
	}
	return large
}

func TestKillDashNineLosesNothingAcknowledged(t *testing.T) {
	rounds := 20
	if testing.Short() {
		rounds = 3
	}
	dir := t.TempDir()
	l := newLedger()
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	// Some rounds checkpoint often, so that kills also land during and
	// between checkpoints and log recycling.
	variants := [][]string{nil, {"--syncdelay", "1"}, {"--cacheSizeMB", "1"}}
	tr := &transfers{}
	pm := &patchModel{}
	cm := &cappedModel{}
	for round := 0; round < rounds; round++ {
		p, client := start(t, dir, variants[round%len(variants)]...)
		coll := client.Database("crash").Collection("c")
		check(t, coll, l)
		openAccounts(t, client)
		checkTransfers(t, client, tr)
		openPatchDocs(t, client, pm)
		checkPatchDocs(t, client, pm)
		openCapped(t, client, cm)
		checkCapped(t, client, cm)
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			cappedWriter(client, cm)
		}()
		wg.Add(1)
		go func() {
			defer wg.Done()
			patchWriter(client, pm, rand.New(rand.NewSource(int64(round))))
		}()
		for w := 0; w < 2; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				transferWriter(client, tr, fmt.Sprintf("t%d-r%d", w, round), rand.New(rand.NewSource(int64(round*100+w))))
			}(w)
		}
		for w := 0; w < 8; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				writer(coll, l, fmt.Sprintf("w%d", w), round, rand.New(rand.NewSource(int64(round*100+w))))
			}(w)
		}
		time.Sleep(time.Duration(100+rng.Intn(700)) * time.Millisecond)
		p.StopT(t, syscall.SIGKILL)
		wg.Wait()
		// The server is gone: ending the client's sessions would wait out
		// the driver's server selection timeout.
		dctx, cancel := context.WithTimeout(context.Background(), time.Second)
		client.Disconnect(dctx)
		cancel()
	}
	p, client := start(t, dir)
	defer p.StopT(t, syscall.SIGTERM)
	defer client.Disconnect(context.Background())
	checkTransfers(t, client, tr)
	checkPatchDocs(t, client, pm)
	checkCapped(t, client, cm)
	if cm.acked <= cappedMax {
		t.Fatalf("only %d capped inserts were acknowledged: the test did not overflow the collection", cm.acked)
	}
	wantPatchesLogged(t, client)
	if len(tr.acked) == 0 {
		t.Fatal("no transfer was acknowledged: the test did not exercise transactions")
	}
	if check(t, client.Database("crash").Collection("c"), l) == 0 {
		t.Fatal("no document large enough for a doctree survived: the test did not exercise them")
	}
	if len(l.batches) < rounds {
		t.Fatalf("only %d batches were acknowledged in %d rounds", len(l.batches), rounds)
	}
}
