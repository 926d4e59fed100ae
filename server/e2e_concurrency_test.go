package server_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/dumbodb/dumbodb/server"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

const clients = 32

// busyPolling runs a test's server with the binary's default busy-poll
// window, so that connections spin between requests as in production.
func busyPolling(c *server.Config) { c.BusyPoll = server.DefaultBusyPoll }

// TestCompareAndSwapFrom32Clients: every value of v is won by exactly one
// client, and the final v is the number of acknowledged wins.
func TestCompareAndSwapFrom32Clients(t *testing.T) {
	ts := startServer(t, busyPolling)
	c := ts.client()
	coll := c.Database("test").Collection("cas")
	if _, err := coll.InsertOne(ctx, bson.M{"_id": 1, "v": 0}); err != nil {
		t.Fatal(err)
	}
	const target = 300
	var mu sync.Mutex
	winners := map[int32]int{}
	var wg sync.WaitGroup
	for g := 0; g < clients; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				var cur struct{ V int32 }
				if err := coll.FindOne(ctx, bson.M{"_id": 1}).Decode(&cur); err != nil {
					t.Error(err)
					return
				}
				if cur.V >= target {
					return
				}
				res, err := coll.UpdateOne(ctx, bson.M{"_id": 1, "v": cur.V}, bson.M{"$set": bson.M{"v": cur.V + 1}})
				if err != nil {
					t.Error(err)
					return
				}
				if res.ModifiedCount == 1 {
					mu.Lock()
					winners[cur.V]++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	var final struct{ V int32 }
	coll.FindOne(ctx, bson.M{"_id": 1}).Decode(&final)
	if final.V != target || len(winners) != target {
		t.Fatalf("final v %d, %d distinct wins", final.V, len(winners))
	}
	for n, w := range winners {
		if w != 1 {
			t.Fatalf("v=%d was won %d times", n, w)
		}
	}
}

// TestIncFrom32Clients: no increment is lost.
func TestIncFrom32Clients(t *testing.T) {
	ts := startServer(t, busyPolling)
	c := ts.client()
	coll := c.Database("test").Collection("inc")
	const each = 40
	var wg sync.WaitGroup
	for g := 0; g < clients; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				_, err := coll.UpdateOne(ctx, bson.M{"_id": "counter"}, bson.M{"$inc": bson.M{"n": 1}},
					options.UpdateOne().SetUpsert(true))
				if err != nil {
					t.Error(err)
					return
				}
				if _, err := coll.InsertOne(ctx, bson.M{"_id": fmt.Sprintf("%d-%d", g, i)}); err != nil {
					t.Error(err)
					return
				}
			}
		}(g)
	}
	wg.Wait()
	var final struct{ N int32 }
	if err := coll.FindOne(ctx, bson.M{"_id": "counter"}).Decode(&final); err != nil {
		t.Fatal(err)
	}
	if final.N != clients*each {
		t.Fatalf("counter %d, want %d", final.N, clients*each)
	}
	if n, _ := coll.CountDocuments(ctx, bson.M{}); n != clients*each+1 {
		t.Fatalf("%d documents, want %d", n, clients*each+1)
	}
}
