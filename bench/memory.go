package bench

import (
	"context"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// memoryDatabases is how many databases Memory/CreateDrop500 creates and
// drops: issue 19's figure.
const memoryDatabases = 500

func memoryBenchmarks() []Benchmark {
	return []Benchmark{
		{Name: "Memory/CreateDrop500", Group: GroupMemory, Unit: "MB kept", Quantity: true, Setup: setupCreateDrop},
	}
}

// setupCreateDrop creates memoryDatabases databases one after another,
// each by one small insert, and drops each right after. Its amount is the
// server's RSS after the last drop minus before the first; the row's RSS
// columns give the peak on the way and the RSS after. It needs the pid.
func setupCreateDrop(_ context.Context, e *Env) (*Workload, error) {
	if e.Pid == 0 {
		return nil, errNotApplicable{reason: "needs the server's pid (--start)"}
	}
	return &Workload{Measure: func(ctx context.Context) (float64, error) {
		before, err := processRSS(e.Pid)
		if err != nil {
			return 0, err
		}
		for i := range memoryDatabases {
			if err := createDrop(ctx, e, fmt.Sprintf("dumbobench_mem_%03d", i)); err != nil {
				return 0, err
			}
		}
		after, err := processRSS(e.Pid)
		if err != nil {
			return 0, err
		}
		return mb(after.rss - before.rss), nil
	}}, nil
}

// createDrop creates database name by one insert and drops it.
func createDrop(ctx context.Context, e *Env, name string) error {
	db := e.Client.Database(name)
	if _, err := db.Collection("c").InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "v", Value: "x"}}); err != nil {
		return fmt.Errorf("create %s: %w", name, err)
	}
	if err := db.Drop(ctx); err != nil {
		return fmt.Errorf("drop %s: %w", name, err)
	}
	return nil
}
