package bench

import (
	"context"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// memoryDatabases is how many databases Memory/CreateDrop500 creates and
// drops.
const memoryDatabases = 500

func memoryBenchmarks() []Benchmark {
	return []Benchmark{
		{Name: "Memory/CreateDrop500", Group: GroupMemory, Unit: "MB kept", Quantity: true, Setup: setupCreateDrop},
		{Name: "Memory/FindAndModify/8MB", Group: GroupMemory, Unit: "op", Setup: setupFindAndModifyLarge},
	}
}

// setupFindAndModifyLarge increments a field of one 8 MB document
// (8,192 fields of 1,000 bytes) by findOneAndUpdate, returning that field
// only. findAndModify rewrites the whole document, and each version is
// one the server's states for reads at past times could keep: its RSS
// peak shows what bounds them (docs/design/resources.md, "The history's
// memory").
func setupFindAndModifyLarge(ctx context.Context, e *Env) (*Workload, error) {
	if err := seedFieldsDoc(ctx, e, 8<<20); err != nil {
		return nil, err
	}
	opts := options.FindOneAndUpdate().SetProjection(bson.D{{Key: "n", Value: 1}}).SetReturnDocument(options.After)
	return &Workload{Call: func(ctx context.Context, _ int64) error {
		var got struct{ N int64 }
		err := e.Coll.FindOneAndUpdate(ctx, bson.D{{Key: "_id", Value: int64(1)}},
			bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: int64(1)}}}}, opts).Decode(&got)
		if err == nil && got.N < 1 {
			err = fmt.Errorf("findAndModify returned n = %d", got.N)
		}
		return err
	}}, nil
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
