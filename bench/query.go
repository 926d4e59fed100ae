package bench

import (
	"context"
	"fmt"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// rangeWidth is how many documents a Filter/Range call returns.
const rangeWidth = 100

// groups is how many distinct values the k field takes.
const groups = 100

func queryBenchmarks() []Benchmark {
	var bs []Benchmark
	for _, n := range []int{1000, 10000, 50000} {
		for _, idx := range []bool{false, true} {
			bs = append(bs,
				Benchmark{Name: indexedName("Filter/Eq/"+count(n), idx), Group: GroupFilters, Unit: "op", Setup: filterEq(n, idx)},
				Benchmark{Name: indexedName("Filter/Range/"+count(n), idx), Group: GroupFilters, Unit: "op", Setup: filterRange(n, idx)})
		}
	}
	for _, idx := range []bool{false, true} {
		bs = append(bs,
			Benchmark{Name: indexedName("Count/10K", idx), Group: GroupFilters, Unit: "op", Setup: countK(10000, idx)},
			Benchmark{Name: indexedName("Distinct/10K", idx), Group: GroupFilters, Unit: "op", Setup: distinctK(10000, idx)})
	}
	return bs
}

func indexedName(name string, indexed bool) string {
	if indexed {
		return name + "/Indexed"
	}
	return name
}

// count names a document count as benchmark names do: 1K, 10K, 100K.
func count(n int) string {
	if n%1000 == 0 {
		return strconv.Itoa(n/1000) + "K"
	}
	return strconv.Itoa(n)
}

// seedSmall seeds n small documents {_id: i, v: i, k: i % groups}, with
// the indexes asked for created first.
func seedSmall(ctx context.Context, coll *mongo.Collection, n int, indexKeys ...string) error {
	if err := createIndex(ctx, coll, indexKeys...); err != nil {
		return err
	}
	pad := padFor(size100B.bytes - 20)
	return seed(ctx, coll, n, func(i int) any {
		return bson.D{{Key: "_id", Value: int64(i)}, {Key: "v", Value: int64(i)},
			{Key: "k", Value: int64(i % groups)}, {Key: "pad", Value: pad}}
	})
}

func keysIf(indexed bool, keys ...string) []string {
	if indexed {
		return keys
	}
	return nil
}

func filterEq(n int, indexed bool) func(context.Context, *Env) (*Workload, error) {
	return func(ctx context.Context, e *Env) (*Workload, error) {
		if err := seedSmall(ctx, e.Coll, n, keysIf(indexed, "v")...); err != nil {
			return nil, err
		}
		return &Workload{Call: func(ctx context.Context, c int64) error {
			return findAll(ctx, e.Coll, bson.D{{Key: "v", Value: int64(spread(c, n))}}, 1)
		}}, nil
	}
}

func filterRange(n int, indexed bool) func(context.Context, *Env) (*Workload, error) {
	return func(ctx context.Context, e *Env) (*Workload, error) {
		if err := seedSmall(ctx, e.Coll, n, keysIf(indexed, "v")...); err != nil {
			return nil, err
		}
		return &Workload{Call: func(ctx context.Context, c int64) error {
			lo := int64(spread(c, n-rangeWidth))
			f := bson.D{{Key: "v", Value: bson.D{{Key: "$gte", Value: lo}, {Key: "$lt", Value: lo + rangeWidth}}}}
			return findAll(ctx, e.Coll, f, rangeWidth)
		}}, nil
	}
}

func countK(n int, indexed bool) func(context.Context, *Env) (*Workload, error) {
	return func(ctx context.Context, e *Env) (*Workload, error) {
		if err := seedSmall(ctx, e.Coll, n, keysIf(indexed, "k")...); err != nil {
			return nil, err
		}
		return &Workload{Call: func(ctx context.Context, c int64) error {
			cmd := bson.D{{Key: "count", Value: e.Coll.Name()},
				{Key: "query", Value: bson.D{{Key: "k", Value: int64(spread(c, groups))}}}}
			var res struct{ N int }
			if err := e.DB.RunCommand(ctx, cmd).Decode(&res); err != nil {
				return err
			}
			return expectCount("count", res.N, n/groups)
		}}, nil
	}
}

func distinctK(n int, indexed bool) func(context.Context, *Env) (*Workload, error) {
	return func(ctx context.Context, e *Env) (*Workload, error) {
		if err := seedSmall(ctx, e.Coll, n, keysIf(indexed, "k")...); err != nil {
			return nil, err
		}
		return &Workload{Call: func(ctx context.Context, _ int64) error {
			res := e.Coll.Distinct(ctx, "k", bson.D{})
			var vals []any
			if err := res.Decode(&vals); err != nil {
				return fmt.Errorf("distinct: %w", err)
			}
			return expectCount("distinct", len(vals), groups)
		}}, nil
	}
}
