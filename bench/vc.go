package bench

import (
	"context"
	"errors"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// vcCommands are DumboDB's version-control operations, by the command
// that performs each.
var vcCommands = []struct{ name, command string }{
	{"Commit", "dumboCommit"},
	{"Branch", "dumboBranch"},
	{"Diff", "dumboDiff"},
	{"Merge", "dumboMerge"},
	{"Log", "dumboLog"},
}

func vcBenchmarks() []Benchmark {
	var bs []Benchmark
	for _, c := range vcCommands {
		for _, n := range []int{10000, 100000} {
			bs = append(bs, Benchmark{Name: fmt.Sprintf("VC/%s/%s", c.name, count(n)), Group: GroupVC,
				Unit: "op", DumboOnly: true, Setup: vcCommand(c.command, n)})
		}
	}
	return append(bs, Benchmark{Name: "VC/BytesPerCommit/1MB", Group: GroupVC, Unit: "op", DumboOnly: true, Setup: bytesPerCommit})
}

func vcRun(ctx context.Context, e *Env, command string, n int64) error {
	return e.DB.RunCommand(ctx, bson.D{{Key: command, Value: e.Coll.Name()},
		{Key: "message", Value: fmt.Sprintf("dumbobench %d", n)}}).Err()
}

// vcCommand times one version-control command after a one-document change
// (untimed) in a collection of n documents. The command is probed before
// seeding so that a server without it fails fast.
func vcCommand(command string, n int) func(context.Context, *Env) (*Workload, error) {
	return func(ctx context.Context, e *Env) (*Workload, error) {
		if err := vcRun(ctx, e, command, 0); err != nil {
			return nil, unsupported(command, err)
		}
		if err := seedSmall(ctx, e.Coll, n); err != nil {
			return nil, err
		}
		return &Workload{
			Prepare: func(ctx context.Context, c int64) error {
				return expectMatched(e.Coll.UpdateOne(ctx, d("_id", int64(spread(c, n))), d("$set", d("v", c))))
			},
			Call: func(ctx context.Context, c int64) error { return vcRun(ctx, e, command, c) },
		}, nil
	}
}

// bytesPerCommit needs commits and a way to read the storage size; until
// the server has both it reports the missing command.
func bytesPerCommit(ctx context.Context, e *Env) (*Workload, error) {
	if err := vcRun(ctx, e, "dumboCommit", 0); err != nil {
		return nil, unsupported("dumboCommit", err)
	}
	return nil, errors.New("dumbobench does not measure bytes per commit yet: it needs a storage-size figure per commit")
}
