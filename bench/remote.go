package bench

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"
)

// remoteBenchmarks measure a clone of 100,000 documents, the push of a
// one-document change, and the bytes it moves, from and to a file
// remote, an S3 store (--s3-remote) and over HTTP (the target's own HTTP
// listener: both ends on one machine, as two servers on loopback).
func remoteBenchmarks() []Benchmark {
	const n = 100000
	return []Benchmark{
		{Name: "Remote/Clone/File/" + count(n), Group: GroupRemote, Unit: "op", DumboOnly: true, Long: true, Setup: remoteClone(n, fileRemote)},
		{Name: "Remote/PushOneDoc/File/" + count(n), Group: GroupRemote, Unit: "op", DumboOnly: true, Setup: remotePush(n, fileRemote)},
		{Name: "Remote/PushOneDocBytes/File/" + count(n), Group: GroupRemote, Unit: "B/push", DumboOnly: true,
			Quantity: true, Setup: remotePushBytes(n, fileRemote)},
		{Name: "Remote/Clone/S3/" + count(n), Group: GroupRemote, Unit: "op", DumboOnly: true, Long: true, Setup: remoteClone(n, s3Remote)},
		{Name: "Remote/PushOneDoc/S3/" + count(n), Group: GroupRemote, Unit: "op", DumboOnly: true, Setup: remotePush(n, s3Remote)},
		{Name: "Remote/PushOneDocBytes/S3/" + count(n), Group: GroupRemote, Unit: "B/push", DumboOnly: true,
			Quantity: true, Setup: remotePushBytes(n, s3Remote)},
		{Name: "Remote/Clone/HTTP/" + count(n), Group: GroupRemote, Unit: "op", DumboOnly: true, Long: true, Setup: remoteClone(n, httpRemote)},
		{Name: "Remote/CloneThroughput/HTTP/" + count(n), Group: GroupRemote, Unit: "MB/s", DumboOnly: true,
			Quantity: true, Setup: remoteCloneThroughput(n, httpRemote)},
		{Name: "Remote/PushOneDoc/HTTP/" + count(n), Group: GroupRemote, Unit: "op", DumboOnly: true, Setup: remotePush(n, httpRemote)},
		{Name: "Remote/PushOneDocBytes/HTTP/" + count(n), Group: GroupRemote, Unit: "B/push", DumboOnly: true,
			Quantity: true, Setup: remotePushBytes(n, httpRemote)},
	}
}

// remoteSetup makes a benchmark's remote: a clone's source URL, and the
// database pushes are made from (with the remote "bench"), with a
// cleanup.
type remoteSetup func(ctx context.Context, e *Env, n int) (cloneURL string, pushFrom *mongo.Database, cleanup func(), err error)

// fileRemote pushes the seeded database to a file remote.
func fileRemote(ctx context.Context, e *Env, n int) (string, *mongo.Database, func(), error) {
	dir, err := remoteSeed(ctx, e, n)
	if err != nil {
		return "", nil, nil, err
	}
	return "file://" + filepath.Join(dir, "store"), e.DB, func() { os.RemoveAll(dir) }, nil
}

// httpRemote serves the seeded database from the target's HTTP listener;
// pushes go from a clone of it (made over HTTP) back to it.
func httpRemote(ctx context.Context, e *Env, n int) (string, *mongo.Database, func(), error) {
	addr, err := targetHTTPAddress(ctx, e)
	if err != nil {
		return "", nil, nil, err
	}
	if err := vcSeed(ctx, e, n); err != nil {
		return "", nil, nil, err
	}
	src := "http://" + addr + "/" + e.DB.Name()
	from := e.Client.Database(e.DB.Name() + "_pushfrom")
	from.Drop(ctx)
	if err := from.RunCommand(ctx, kvs("dumboClone", 1, "url", src)).Err(); err != nil {
		return "", nil, nil, err
	}
	if err := from.RunCommand(ctx, kvs("dumboRemote", "add", "name", "bench", "url", src)).Err(); err != nil {
		return "", nil, nil, err
	}
	return src, from, func() { from.Drop(context.Background()) }, nil
}

// targetHTTPAddress is the target's --httpAddress, from getCmdLineOpts.
func targetHTTPAddress(ctx context.Context, e *Env) (string, error) {
	var opts struct{ Argv []string }
	if err := e.Client.Database("admin").RunCommand(ctx, kvs("getCmdLineOpts", 1)).Decode(&opts); err != nil {
		return "", err
	}
	for i, a := range opts.Argv {
		if v, ok := strings.CutPrefix(a, "--httpAddress="); ok {
			return v, nil
		}
		if a == "--httpAddress" && i+1 < len(opts.Argv) {
			return opts.Argv[i+1], nil
		}
	}
	return "", errNotApplicable{"the target has no HTTP listener (--httpAddress)"}
}

// remoteSeed seeds and commits n documents and pushes them to a new file
// remote "bench" in a temporary directory, which the workload's Close
// removes. The target must share this machine's file system.
func remoteSeed(ctx context.Context, e *Env, n int) (string, error) {
	if e.DataDir == "" {
		return "", errNotApplicable{"the remote must be on the target's machine: its data directory is unknown"}
	}
	dir, err := os.MkdirTemp("", "dumbobench-remote-")
	if err != nil {
		return "", err
	}
	if err := pushSeed(ctx, e, n, "file://"+filepath.Join(dir, "store")); err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}

// pushSeed seeds and commits n documents and pushes them to url as the
// remote "bench".
func pushSeed(ctx context.Context, e *Env, n int, remoteURL string) error {
	if err := vcSeed(ctx, e, n); err != nil {
		return err
	}
	if _, err := vcCmd(ctx, e, kvs("dumboRemote", "add", "name", "bench", "url", remoteURL)); err != nil {
		return unsupported("dumboRemote", err)
	}
	_, err := vcCmd(ctx, e, kvs("dumboPush", 1, "remote", "bench"))
	return err
}

// s3Remote pushes the seeded database to a prefix of its own under
// Config.S3Remote.
func s3Remote(ctx context.Context, e *Env, n int) (string, *mongo.Database, func(), error) {
	if e.Cfg.S3Remote == "" {
		return "", nil, nil, errNotApplicable{"no --s3-remote"}
	}
	u, err := url.Parse(e.Cfg.S3Remote)
	if err != nil || u.Scheme != "s3" {
		return "", nil, nil, fmt.Errorf("--s3-remote %q is no s3:// URL", e.Cfg.S3Remote)
	}
	u.Path = path.Join(u.Path, fmt.Sprintf("%s-%d", e.DB.Name(), time.Now().UnixNano()))
	if err := pushSeed(ctx, e, n, u.String()); err != nil {
		return "", nil, nil, err
	}
	return u.String(), e.DB, func() {}, nil
}

// remoteClone times dumboClone of the seeded database into a database
// of its own, dropped (untimed) before the next clone.
func remoteClone(n int, setup remoteSetup) func(context.Context, *Env) (*Workload, error) {
	return func(ctx context.Context, e *Env) (*Workload, error) {
		src, _, cleanup, err := setup(ctx, e, n)
		if err != nil {
			return nil, err
		}
		run := time.Now().UnixNano() // each clone benchmark's databases are its own
		name := func(c int64) string { return fmt.Sprintf("%s_clone%d_%d", e.DB.Name(), run, c) }
		var last atomic.Int64
		return &Workload{
			Prepare: func(ctx context.Context, c int64) error { return e.Client.Database(name(c - 1)).Drop(ctx) },
			Call: func(ctx context.Context, c int64) error {
				last.Store(c)
				return e.Client.Database(name(c)).RunCommand(ctx, kvs("dumboClone", 1, "url", src)).Err()
			},
			Close: func() {
				e.Client.Database(name(last.Load())).Drop(context.Background())
				cleanup()
			},
		}, nil
	}
}

// remoteCloneThroughput is the median over 5 clones of the bytes a clone
// reports it copied per second of the clone.
func remoteCloneThroughput(n int, setup remoteSetup) func(context.Context, *Env) (*Workload, error) {
	return func(ctx context.Context, e *Env) (*Workload, error) {
		src, _, cleanup, err := setup(ctx, e, n)
		if err != nil {
			return nil, err
		}
		return &Workload{
			Measure: func(ctx context.Context) (float64, error) {
				var rates []float64
				for c := range 5 {
					db := e.Client.Database(fmt.Sprintf("%s_tclone%d", e.DB.Name(), c))
					start := time.Now()
					var reply struct{ Bytes int64 }
					if err := db.RunCommand(ctx, kvs("dumboClone", 1, "url", src)).Decode(&reply); err != nil {
						return 0, err
					}
					rates = append(rates, float64(reply.Bytes)/time.Since(start).Seconds()/1e6)
					if err := db.Drop(ctx); err != nil {
						return 0, err
					}
				}
				slices.Sort(rates)
				return rates[len(rates)/2], nil
			},
			Close: cleanup,
		}, nil
	}
}

// remotePush times the push of a committed one-document change.
func remotePush(n int, setup remoteSetup) func(context.Context, *Env) (*Workload, error) {
	return func(ctx context.Context, e *Env) (*Workload, error) {
		_, from, cleanup, err := setup(ctx, e, n)
		if err != nil {
			return nil, err
		}
		return &Workload{
			Prepare: func(ctx context.Context, c int64) error { return changeAndCommit(ctx, e, from, n, c) },
			Call: func(ctx context.Context, c int64) error {
				return from.RunCommand(ctx, kvs("dumboPush", 1, "remote", "bench")).Err()
			},
			Close: cleanup,
		}, nil
	}
}

// changeAndCommit changes one document of db and commits it.
func changeAndCommit(ctx context.Context, e *Env, db *mongo.Database, n int, c int64) error {
	if err := change(ctx, db.Collection(e.Coll.Name()), n, c); err != nil {
		return err
	}
	return db.RunCommand(ctx, commitCmd(c)).Err()
}

// remotePushBytes is the median of the bytes 20 pushes of a one-document
// change each send, as dumboPush reports them.
func remotePushBytes(n int, setup remoteSetup) func(context.Context, *Env) (*Workload, error) {
	return func(ctx context.Context, e *Env) (*Workload, error) {
		_, from, cleanup, err := setup(ctx, e, n)
		if err != nil {
			return nil, err
		}
		return &Workload{
			Measure: func(ctx context.Context) (float64, error) {
				var sent []int64
				for c := int64(1); c <= 20; c++ {
					if err := changeAndCommit(ctx, e, from, n, c); err != nil {
						return 0, err
					}
					var reply struct{ Bytes int64 }
					if err := from.RunCommand(ctx, kvs("dumboPush", 1, "remote", "bench")).Decode(&reply); err != nil {
						return 0, err
					}
					sent = append(sent, reply.Bytes)
				}
				slices.Sort(sent)
				return float64(sent[len(sent)/2]), nil
			},
			Close: cleanup,
		}, nil
	}
}
