package bench

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// The Soak family: a mixed workload for Config.Soak (dumbobench --soak),
// whose figure is the slope of the server's resident memory over time.
const (
	// soakSampleEvery spaces the RSS samples: a 30-minute soak gets 900,
	// plenty for a slope, and a short one still a few dozen.
	soakSampleEvery = 2 * time.Second
	// soakWindow bounds the data: a delete every 20 calls removes the
	// documents more than soakWindow ids behind the newest, so about
	// 0.3 × soakWindow stay and the data set does not grow with time,
	// which would make the memory grow for a good reason.
	soakWindow = 20000
	// soakDatabaseEvery: one call in that many creates and drops a
	// database (one insert), a few hundred in 30 minutes.
	soakDatabaseEvery = 5000
	// soakClients connections run the mix at once.
	soakClients = 4
)

func soakBenchmarks() []Benchmark {
	return []Benchmark{
		{Name: "Soak/Mixed", Group: GroupMemory, Unit: "op", Clients: soakClients, Soak: true, Setup: setupSoak},
	}
}

// setupSoak returns the mix: of every 20 calls 6 insert, 8 find by _id,
// 4 update by _id, 1 deletes the documents behind the window and 1
// aggregates the newest 200 (or, once in soakDatabaseEvery calls, creates
// and drops a database).
func setupSoak(_ context.Context, e *Env) (*Workload, error) {
	pad := padFor(size100B.bytes)
	return &Workload{Call: func(ctx context.Context, n int64) error {
		switch k := n % 20; {
		case k < 6:
			_, err := e.Coll.InsertOne(ctx, sized(n, pad))
			return err
		case k < 14:
			return soakFind(ctx, e.Coll, soakRecent(n))
		case k < 18:
			_, err := e.Coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: soakRecent(n)}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}})
			return err
		case k == 18:
			_, err := e.Coll.DeleteMany(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$lt", Value: n - soakWindow}}}})
			return err
		case n%soakDatabaseEvery == 19:
			return createDrop(ctx, e, fmt.Sprintf("dumbobench_soak_%d", n))
		default:
			return soakAggregate(ctx, e.Coll, n)
		}
	}}, nil
}

// soakRecent picks an id among the last soakWindow/4 calls' (most of them
// inserted, some not yet or never: a miss is a fine read too).
func soakRecent(n int64) int64 {
	return max(n-int64(spread(n, soakWindow/4)), 0)
}

func soakFind(ctx context.Context, c *mongo.Collection, id int64) error {
	err := c.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Err()
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil
	}
	return err
}

func soakAggregate(ctx context.Context, c *mongo.Collection, n int64) error {
	cur, err := c.Aggregate(ctx, mongo.Pipeline{
		{{Key: "$match", Value: bson.D{{Key: "_id", Value: bson.D{{Key: "$gte", Value: n - 200}}}}}},
		{{Key: "$group", Value: bson.D{{Key: "_id", Value: nil}, {Key: "count", Value: bson.D{{Key: "$sum", Value: 1}}}, {Key: "total", Value: bson.D{{Key: "$sum", Value: "$n"}}}}}},
	})
	if err != nil {
		return err
	}
	var out []bson.M
	return cur.All(ctx, &out)
}

// soakWarmup is where the slope's fit begins, in seconds from the start:
// the first fifth of the soak, but at least a minute while that leaves
// half of it (caches and the runtime's heap settle first).
func soakWarmup(samples []RSSSample) float64 {
	if len(samples) == 0 {
		return 0
	}
	total := samples[len(samples)-1].At
	return max(total/5, min(60, total/2))
}
