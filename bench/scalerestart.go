package bench

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// The Scale family's restarts. A target is reached by its URL, and the
// steps after these must find it where it was, so they do not restart it:
// they back its data directory up as the documentation says (fsync with
// lock, copy, fsyncUnlock) and start a DumboDB process of their own on
// the copy, with the target's flags. A call is one start, timed from the
// process's start until it answers hello, polled every restartPoll.

// DumboStarter starts a DumboDB process on dataDir and returns at once,
// without waiting for it to answer: its caller times that. dumbobench
// --start provides one, from the binary it built.
type DumboStarter func(dataDir string) (StartedServer, error)

// StartedServer is a process a DumboStarter started.
type StartedServer interface {
	// Addr is the host:port it listens on, without TLS.
	Addr() string
	// Exited is closed once the process has ended.
	Exited() <-chan struct{}
	// Output is what the process has written so far.
	Output() string
	// Stop signals the process and waits for it to end.
	Stop(sig os.Signal) error
}

const restartPoll = 5 * time.Millisecond

// restarter runs a server on a copy of a target's data directory.
type restarter struct {
	start DumboStarter
	dir   string // the copy's parent, removed at the end
	srv   StartedServer
}

// newRestarter copies the target's data directory and starts a server on
// it once, untimed: the first start of a copy recovers what was written
// since the last checkpoint, as after a crash.
func newRestarter(ctx context.Context, e *Env) (*restarter, error) {
	if e.DataDir == "" || e.Cfg.StartDumbo == nil {
		return nil, errNotApplicable{"needs the data directory and a server binary (--start)"}
	}
	dir, err := os.MkdirTemp("", "dumbobench-restart-")
	if err != nil {
		return nil, err
	}
	r := &restarter{start: e.Cfg.StartDumbo, dir: dir}
	if err := backUp(ctx, e, r.dataDir()); err != nil {
		r.close()
		return nil, err
	}
	first, cancel := context.WithTimeout(ctx, scaleCallLimit) // as the timed starts are
	defer cancel()
	if err := r.run(first); err != nil {
		r.close()
		return nil, err
	}
	return r, nil
}

func (r *restarter) dataDir() string { return filepath.Join(r.dir, "data") }

func (r *restarter) run(ctx context.Context) error {
	srv, err := r.start(r.dataDir())
	if err != nil {
		return err
	}
	r.srv = srv
	return waitAnswering(ctx, srv)
}

// waitAnswering returns once the server answers hello on a new
// connection. DumboDB listens once it has opened (and recovered) its data
// directory; until then the connection is refused, and it tries again.
func waitAnswering(ctx context.Context, srv StartedServer) error {
	for {
		c, err := dialRaw(ctx, srv.Addr())
		if err == nil {
			c.close()
			return nil
		}
		select {
		case <-srv.Exited():
			return fmt.Errorf("dumbodb exited before answering: %s", lastLine(srv.Output()))
		case <-ctx.Done():
			return fmt.Errorf("dumbodb did not answer: %w", err)
		case <-time.After(restartPoll):
		}
	}
}

// lastLine is the last line of a process's output: a server that cannot
// open its data directory says why there.
func lastLine(out string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	return lines[len(lines)-1]
}

// stop ends the running server with sig.
func (r *restarter) stop(sig os.Signal) error {
	srv := r.srv
	r.srv = nil
	return srv.Stop(sig)
}

func (r *restarter) close() {
	if r.srv != nil {
		r.stop(syscall.SIGTERM)
	}
	os.RemoveAll(r.dir)
}

func (r *restarter) workload(prepare func(context.Context, int64) error) *Workload {
	return &Workload{
		Prepare: prepare,
		Call:    func(ctx context.Context, _ int64) error { return r.run(ctx) },
		Close:   r.close,
	}
}

// restartClean times a start after a clean stop (SIGTERM).
func restartClean(ctx context.Context, e *Env, _ *scaleData) (*Workload, error) {
	r, err := newRestarter(ctx, e)
	if err != nil {
		return nil, err
	}
	return r.workload(func(context.Context, int64) error { return r.stop(syscall.SIGTERM) }), nil
}

// restartKill9 times a start after kill -9 with the cache full of
// acknowledged writes no checkpoint holds yet, which the start must
// recover from the write-ahead log: 1 % updates, one after another, until
// the server's un-checkpointed edits reach fillEdits of its cache (a
// checkpoint folds them from half of it), or until a checkpoint took
// them, or maxFillSlices.
func restartKill9(ctx context.Context, e *Env, d *scaleData) (*Workload, error) {
	r, err := newRestarter(ctx, e)
	if err != nil {
		return nil, err
	}
	target := int64(e.CacheSizeMB) << 20 * fillEdits.num / fillEdits.den
	return r.workload(func(ctx context.Context, c int64) error {
		if err := r.fillCache(ctx, d, c, target); err != nil {
			return err
		}
		return r.stop(syscall.SIGKILL)
	}), nil
}

// fillEdits is the share of the cache that restartKill9 fills with
// un-checkpointed edits, below the half from which a checkpoint starts.
var fillEdits = struct{ num, den int64 }{3, 8}

// maxFillSlices bounds the 1 % updates of one fill.
const maxFillSlices = 100

// fillCache updates 1 % slices of the orders on the restarter's server
// until its un-checkpointed edits reach target bytes (with an unknown
// cache size, target is 0 and one slice is written), or fall: a
// checkpoint took them.
func (r *restarter) fillCache(ctx context.Context, d *scaleData, c, target int64) error {
	url := "mongodb://" + r.srv.Addr() + "/?directConnection=true"
	client, err := mongo.Connect(options.Client().ApplyURI(url).SetWriteConcern(durable()))
	if err != nil {
		return err
	}
	defer client.Disconnect(context.Background())
	coll := client.Database(d.db.Name()).Collection(d.coll.Name())
	var last int64
	for i := int64(0); i < maxFillSlices; i++ {
		if err := changeOnePercent(ctx, coll, d.n, int((c+i)%100), fmt.Sprintf("before kill %d.%d", c, i)); err != nil {
			return err
		}
		edits, err := editBytes(ctx, client)
		if err != nil || edits >= target || edits < last {
			return err
		}
		last = edits
	}
	return nil
}

// editBytes is the server's count of un-checkpointed edit bytes.
func editBytes(ctx context.Context, client *mongo.Client) (int64, error) {
	var st struct {
		StorageEngine struct {
			EditBytes int64 `bson:"editBytes"`
		} `bson:"storageEngine"`
	}
	err := client.Database("admin").RunCommand(ctx, kvs("serverStatus", 1)).Decode(&st)
	return st.StorageEngine.EditBytes, err
}

// backUp copies the target's data directory to dir while fsync's lock
// holds its files still.
func backUp(ctx context.Context, e *Env, dir string) error {
	admin := e.Client.Database("admin")
	if err := admin.RunCommand(ctx, kvs("fsync", 1, "lock", true)).Err(); err != nil {
		return err
	}
	defer admin.RunCommand(context.Background(), kvs("fsyncUnlock", 1))
	return copyDir(e.DataDir, dir)
}

// copyDir copies the directories and regular files under from to to.
func copyDir(from, to string) error {
	return filepath.WalkDir(from, func(path string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(from, path)
		if err != nil {
			return err
		}
		switch {
		case de.IsDir():
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		case de.Type().IsRegular():
			return copyFile(path, filepath.Join(to, rel))
		}
		return nil
	})
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
