package bench

import (
	"context"
	"fmt"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// vcBenchmarks measure DumboDB's version control on collections of 10K and
// 100K documents (n/a on other servers).
func vcBenchmarks() []Benchmark {
	kinds := []struct {
		name  string
		setup func(n int) func(context.Context, *Env) (*Workload, error)
	}{
		{"Commit", vcCommit}, {"Branch", vcBranch}, {"Diff", vcDiff}, {"Merge", vcMerge}, {"Log", vcLog},
	}
	var bs []Benchmark
	for _, k := range kinds {
		for _, n := range []int{10000, 100000} {
			bs = append(bs, Benchmark{Name: fmt.Sprintf("VC/%s/%s", k.name, count(n)), Group: GroupVC,
				Unit: "op", DumboOnly: true, Setup: k.setup(n)})
		}
	}
	return append(bs, Benchmark{Name: "VC/CommitOneField/1MB", Group: GroupVC, Unit: "op", DumboOnly: true, Setup: vcCommitLarge})
}

func vcCmd(ctx context.Context, e *Env, cmd bson.D) (bson.Raw, error) {
	return e.DB.RunCommand(ctx, cmd).Raw()
}

func commitCmd(n int64) bson.D {
	return kvs("dumboCommit", 1, "message", fmt.Sprintf("dumbobench %d", n))
}

// vcSeed probes for version control, then seeds n documents and commits.
func vcSeed(ctx context.Context, e *Env, n int) error {
	if _, err := vcCmd(ctx, e, kvs("dumboLog", 1, "limit", 1)); err != nil && !strings.Contains(err.Error(), "does not exist") {
		return unsupported("dumboLog", err)
	}
	if err := seedSmall(ctx, e.Coll, n); err != nil {
		return err
	}
	_, err := vcCmd(ctx, e, commitCmd(0))
	return err
}

// change sets field v of one document of n to a value no seeded document
// has (untimed preparation), so that every change is a real change.
func change(ctx context.Context, coll *mongo.Collection, n int, c int64) error {
	return expectMatched(coll.UpdateOne(ctx, kvs("_id", int64(spread(c, n))), kvs("$set", kvs("v", fmt.Sprintf("c%d", c)))))
}

// vcCommit times a commit of a one-document change.
func vcCommit(n int) func(context.Context, *Env) (*Workload, error) {
	return func(ctx context.Context, e *Env) (*Workload, error) {
		if err := vcSeed(ctx, e, n); err != nil {
			return nil, err
		}
		return &Workload{
			Prepare: func(ctx context.Context, c int64) error { return change(ctx, e.Coll, n, c) },
			Call: func(ctx context.Context, c int64) error {
				_, err := vcCmd(ctx, e, commitCmd(c))
				return err
			},
		}, nil
	}
}

// vcBranch times creating a branch.
func vcBranch(n int) func(context.Context, *Env) (*Workload, error) {
	return func(ctx context.Context, e *Env) (*Workload, error) {
		if err := vcSeed(ctx, e, n); err != nil {
			return nil, err
		}
		return &Workload{Call: func(ctx context.Context, c int64) error {
			_, err := vcCmd(ctx, e, kvs("dumboBranch", 1, "branch", fmt.Sprintf("b%d", c)))
			return err
		}}, nil
	}
}

// vcDiff times a diff of two commits that differ in 10 documents.
func vcDiff(n int) func(context.Context, *Env) (*Workload, error) {
	return func(ctx context.Context, e *Env) (*Workload, error) {
		if err := vcSeed(ctx, e, n); err != nil {
			return nil, err
		}
		for i := int64(0); i < 10; i++ {
			if err := change(ctx, e.Coll, n, i*7919); err != nil {
				return nil, err
			}
		}
		if _, err := vcCmd(ctx, e, commitCmd(1)); err != nil {
			return nil, err
		}
		return &Workload{Call: func(ctx context.Context, c int64) error {
			raw, err := vcCmd(ctx, e, kvs("dumboDiff", 1, "from", "main~1", "to", "main"))
			if err != nil {
				return err
			}
			mod, _ := raw.Lookup("collections", "0", "modified").ArrayOK()
			if vals, _ := mod.Values(); len(vals) != 10 {
				return fmt.Errorf("diff found %d modified documents, want 10", len(vals))
			}
			return nil
		}}, nil
	}
}

// vcMerge times merging a branch with 10 changes into main with 10 other
// changes (both committed untimed).
func vcMerge(n int) func(context.Context, *Env) (*Workload, error) {
	return func(ctx context.Context, e *Env) (*Workload, error) {
		if err := vcSeed(ctx, e, n); err != nil {
			return nil, err
		}
		side := e.Client.Database(e.DB.Name() + "@side").Collection(e.Coll.Name())
		return &Workload{
			Prepare: func(ctx context.Context, c int64) error {
				// Recreate the side branch from main (it does not exist on
				// the first call, so that delete may fail).
				vcCmd(ctx, e, kvs("dumboBranch", 1, "branch", "side", "forceDelete", 1))
				if _, err := vcCmd(ctx, e, kvs("dumboBranch", 1, "branch", "side")); err != nil {
					return err
				}
				for i := int64(0); i < 10; i++ {
					if err := expectMatched(side.UpdateOne(ctx, kvs("_id", int64(spread(c*20+i, n))), kvs("$set", kvs("s", c)))); err != nil {
						return err
					}
					if err := change(ctx, e.Coll, n, c*20+i+10); err != nil {
						return err
					}
				}
				if _, err := e.DB.Client().Database(e.DB.Name()+"@side").RunCommand(ctx, commitCmd(c)).Raw(); err != nil {
					return err
				}
				_, err := vcCmd(ctx, e, commitCmd(c))
				return err
			},
			Call: func(ctx context.Context, c int64) error {
				_, err := vcCmd(ctx, e, kvs("dumboMerge", 1, "mergeIn", "side"))
				return err
			},
		}, nil
	}
}

// vcLog times reading the last 10 commits.
func vcLog(n int) func(context.Context, *Env) (*Workload, error) {
	return func(ctx context.Context, e *Env) (*Workload, error) {
		if err := vcSeed(ctx, e, n); err != nil {
			return nil, err
		}
		for i := int64(1); i <= 10; i++ {
			if err := change(ctx, e.Coll, n, i); err != nil {
				return nil, err
			}
			if _, err := vcCmd(ctx, e, commitCmd(i)); err != nil {
				return nil, err
			}
		}
		return &Workload{Call: func(ctx context.Context, c int64) error {
			_, err := vcCmd(ctx, e, kvs("dumboLog", 1, "limit", 10))
			return err
		}}, nil
	}
}

// vcCommitLarge times committing a one-field change in a 1 MB document.
// (The storage each such commit adds is measured by the Go benchmark
// BenchmarkVCBytesPerCommit1MB in package storage.)
func vcCommitLarge(ctx context.Context, e *Env) (*Workload, error) {
	if _, err := vcCmd(ctx, e, kvs("dumboLog", 1, "limit", 1)); err != nil && !strings.Contains(err.Error(), "does not exist") {
		return nil, unsupported("dumboLog", err)
	}
	pad := padFor(1 << 20)
	if _, err := e.Coll.InsertOne(ctx, kvs("_id", int64(1), "counter", int64(0), "pad", pad)); err != nil {
		return nil, err
	}
	return &Workload{
		Prepare: func(ctx context.Context, c int64) error {
			return expectMatched(e.Coll.UpdateOne(ctx, kvs("_id", int64(1)), kvs("$set", kvs("counter", c))))
		},
		Call: func(ctx context.Context, c int64) error {
			_, err := vcCmd(ctx, e, commitCmd(c))
			return err
		},
	}, nil
}

// kvs builds a document from key, value pairs.
func kvs(kv ...any) bson.D {
	out := make(bson.D, 0, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, bson.E{Key: kv[i].(string), Value: kv[i+1]})
	}
	return out
}
