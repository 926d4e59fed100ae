package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// remoteBenchmarks measure a clone of 100,000 documents from a file
// remote, the push of a one-document change, and the bytes it moves.
func remoteBenchmarks() []Benchmark {
	const n = 100000
	return []Benchmark{
		{Name: "Remote/Clone/File/" + count(n), Group: GroupRemote, Unit: "op", DumboOnly: true, Long: true, Setup: remoteClone(n)},
		{Name: "Remote/PushOneDoc/File/" + count(n), Group: GroupRemote, Unit: "op", DumboOnly: true, Setup: remotePush(n)},
		{Name: "Remote/PushOneDocBytes/File/" + count(n), Group: GroupRemote, Unit: "B/push", DumboOnly: true,
			Quantity: true, Setup: remotePushBytes(n)},
	}
}

// remoteSeed seeds and commits n documents and pushes them to a new file
// remote "bench" in a temporary directory, which the workload's Close
// removes. The target must share this machine's file system.
func remoteSeed(ctx context.Context, e *Env, n int) (string, error) {
	if e.DataDir == "" {
		return "", errNotApplicable{"the remote must be on the target's machine: its data directory is unknown"}
	}
	if err := vcSeed(ctx, e, n); err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "dumbobench-remote-")
	if err != nil {
		return "", err
	}
	url := "file://" + filepath.Join(dir, "store")
	if _, err := vcCmd(ctx, e, kvs("dumboRemote", "add", "name", "bench", "url", url)); err != nil {
		os.RemoveAll(dir)
		return "", unsupported("dumboRemote", err)
	}
	if _, err := vcCmd(ctx, e, kvs("dumboPush", 1, "remote", "bench")); err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}

// remoteClone times dumboClone of the pushed database into a database
// of its own, dropped (untimed) before the next clone.
func remoteClone(n int) func(context.Context, *Env) (*Workload, error) {
	return func(ctx context.Context, e *Env) (*Workload, error) {
		dir, err := remoteSeed(ctx, e, n)
		if err != nil {
			return nil, err
		}
		url := "file://" + filepath.Join(dir, "store")
		name := func(c int64) string { return fmt.Sprintf("%s_clone%d", e.DB.Name(), c) }
		return &Workload{
			Prepare: func(ctx context.Context, c int64) error { return e.Client.Database(name(c - 1)).Drop(ctx) },
			Call: func(ctx context.Context, c int64) error {
				return e.Client.Database(name(c)).RunCommand(ctx, kvs("dumboClone", 1, "url", url)).Err()
			},
			Close: func() { os.RemoveAll(dir) },
		}, nil
	}
}

// remotePush times the push of a committed one-document change.
func remotePush(n int) func(context.Context, *Env) (*Workload, error) {
	return func(ctx context.Context, e *Env) (*Workload, error) {
		dir, err := remoteSeed(ctx, e, n)
		if err != nil {
			return nil, err
		}
		return &Workload{
			Prepare: func(ctx context.Context, c int64) error { return changeAndCommit(ctx, e, n, c) },
			Call: func(ctx context.Context, c int64) error {
				_, err := vcCmd(ctx, e, kvs("dumboPush", 1, "remote", "bench"))
				return err
			},
			Close: func() { os.RemoveAll(dir) },
		}, nil
	}
}

func changeAndCommit(ctx context.Context, e *Env, n int, c int64) error {
	if err := change(ctx, e, n, c); err != nil {
		return err
	}
	_, err := vcCmd(ctx, e, commitCmd(c))
	return err
}

// remotePushBytes is the median of the bytes 20 pushes of a one-document
// change each send, as dumboPush reports them.
func remotePushBytes(n int) func(context.Context, *Env) (*Workload, error) {
	return func(ctx context.Context, e *Env) (*Workload, error) {
		dir, err := remoteSeed(ctx, e, n)
		if err != nil {
			return nil, err
		}
		return &Workload{
			Measure: func(ctx context.Context) (float64, error) {
				var sent []int64
				for c := int64(1); c <= 20; c++ {
					if err := changeAndCommit(ctx, e, n, c); err != nil {
						return 0, err
					}
					raw, err := vcCmd(ctx, e, kvs("dumboPush", 1, "remote", "bench"))
					if err != nil {
						return 0, err
					}
					var reply struct{ Bytes int64 }
					if err := bson.Unmarshal(raw, &reply); err != nil {
						return 0, err
					}
					sent = append(sent, reply.Bytes)
				}
				slices.Sort(sent)
				return float64(sent[len(sent)/2]), nil
			},
			Close: func() { os.RemoveAll(dir) },
		}, nil
	}
}
