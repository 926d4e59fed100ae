package server_test

import (
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/dumbodb/dumbodb/internal/testload"
	"github.com/dumbodb/dumbodb/server"
	"github.com/dumbodb/dumbodb/storage"

	"github.com/rs/zerolog"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// testServer is a real server on a loopback port over a real data directory.
type testServer struct {
	t      testing.TB
	cfg    server.Config
	opts   storage.Options
	dir    string
	engine *storage.Engine
	srv    *server.Server
	addr   string
	logTo  io.Writer // the server's log (nil: discarded)
}

// startServer starts a test server; configure, when given, adjusts its
// configuration (test commands, TTL interval, ...).
func startServer(t testing.TB, configure ...func(*server.Config)) *testServer {
	t.Helper()
	return startServerWith(t, storage.Options{}, configure...)
}

// startCollection starts a test server and returns, through a new client,
// the database dbName and its collection coll: where most end-to-end tests
// of one collection begin.
func startCollection(t testing.TB, dbName, coll string) (*mongo.Database, *mongo.Collection) {
	t.Helper()
	db := startServer(t).client().Database(dbName)
	return db, db.Collection(coll)
}

// startServerWith starts a test server over a storage engine opened with opts.
func startServerWith(t testing.TB, opts storage.Options, configure ...func(*server.Config)) *testServer {
	t.Helper()
	ts := &testServer{t: t, dir: t.TempDir(), opts: opts, cfg: server.Config{BindIPs: []string{"127.0.0.1"}}}
	for _, c := range configure {
		c(&ts.cfg)
	}
	ts.start()
	t.Cleanup(ts.stop)
	return ts
}

func (ts *testServer) start() {
	ts.t.Helper()
	opts := ts.opts
	opts.Language = server.StorageLanguage()
	eng, err := storage.Open(ts.dir, opts, zerolog.New(io.Discard))
	if err != nil {
		ts.t.Fatal(err)
	}
	logTo := ts.logTo
	if logTo == nil {
		logTo = io.Discard
	}
	srv := server.New(ts.cfg, eng, zerolog.New(logTo), server.NewLogRing(16))
	if err := srv.Listen(); err != nil {
		ts.t.Fatal(err)
	}
	srv.Serve()
	ts.engine, ts.srv, ts.addr = eng, srv, srv.Addrs()[0].String()
}

func (ts *testServer) stop() {
	if ts.srv == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ts.srv.Shutdown(ctx)
	if err := ts.engine.Close(); err != nil {
		ts.t.Errorf("close engine: %v", err)
	}
	ts.srv = nil
}

// restart stops the server cleanly and starts a new one on the same data
// and address, so that clients connected before reconnect (a client left
// pointing at a dead address would spend its whole server selection
// timeout ending its sessions at cleanup).
func (ts *testServer) restart() {
	_, port, _ := net.SplitHostPort(ts.addr)
	ts.stop()
	saved := ts.cfg.Port
	ts.cfg.Port, _ = strconv.Atoi(port)
	defer func() { ts.cfg.Port = saved }()
	ts.start()
}

func (ts *testServer) uri() string { return "mongodb://" + ts.addr + "/?directConnection=true" }

// client connects the official driver, its timeout scaled to the
// machine's load; extra options apply on top.
func (ts *testServer) client(extra ...*options.ClientOptions) *mongo.Client {
	ts.t.Helper()
	opts := append([]*options.ClientOptions{options.Client().ApplyURI(ts.uri()).SetTimeout(testload.Timeout(30 * time.Second))}, extra...)
	c, err := mongo.Connect(opts...)
	if err != nil {
		ts.t.Fatal(err)
	}
	ts.t.Cleanup(func() { c.Disconnect(context.Background()) })
	return c
}

func (ts *testServer) dial() net.Conn {
	ts.t.Helper()
	nc, err := net.Dial("tcp", ts.addr)
	if err != nil {
		ts.t.Fatal(err)
	}
	ts.t.Cleanup(func() { nc.Close() })
	return nc
}

var ctx = context.Background()

// run runs a command and returns the raw reply or the error.
func run(t *testing.T, db *mongo.Database, cmd bson.D) (bson.M, error) {
	t.Helper()
	return runIn(ctx, db, cmd)
}

// runIn is run under c (a session's context, say).
func runIn(c context.Context, db *mongo.Database, cmd bson.D) (bson.M, error) {
	var out bson.M
	err := db.RunCommand(c, cmd).Decode(&out)
	return out, err
}

// mustRunIn is mustRun under c.
func mustRunIn(t *testing.T, c context.Context, db *mongo.Database, cmd bson.D) bson.M {
	t.Helper()
	out, err := runIn(c, db, cmd)
	if err != nil {
		t.Fatalf("%v: %v", cmd, err)
	}
	return out
}

// oneSession is a context bound to a session of its own, for tests that
// send a cursor's commands one by one: a cursor belongs to the session
// that opened it, as on mongod, and the driver may give each command a
// different implicit session (it does not pool them until it has heard
// the server's session timeout).
func oneSession(t *testing.T, db *mongo.Database) context.Context {
	t.Helper()
	sess, err := db.Client().StartSession()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.EndSession(context.Background()) })
	return mongo.NewSessionContext(ctx, sess)
}

// mustRun runs a command that must succeed.
func mustRun(t *testing.T, db *mongo.Database, cmd bson.D) bson.M {
	t.Helper()
	out, err := run(t, db, cmd)
	if err != nil {
		t.Fatalf("%v: %v", cmd, err)
	}
	return out
}

// wantCode asserts a command error with a code (and codeName when given).
func wantCode(t *testing.T, err error, code int32, name string) {
	t.Helper()
	var ce mongo.CommandError
	if !errors.As(err, &ce) {
		t.Fatalf("want command error %d %s, got %v (%T)", code, name, err, err)
	}
	if ce.Code != code || (name != "" && ce.Name != name) {
		t.Fatalf("want code %d %s, got %d %s: %s", code, name, ce.Code, ce.Name, ce.Message)
	}
}

// get follows a path of keys through nested documents of a decoded reply
// (the v2 driver decodes nested documents as bson.D).
func get(v any, path ...string) any {
	for _, k := range path {
		switch d := v.(type) {
		case bson.M:
			v = d[k]
		case bson.D:
			v = nil
			for _, e := range d {
				if e.Key == k {
					v = e.Value
				}
			}
		default:
			return nil
		}
	}
	return v
}

// num reads a counter of a reply whatever its integer type: mongod
// writes counters as int32 when they fit and int64 otherwise.
func num(v any) int64 {
	switch n := v.(type) {
	case int32:
		return int64(n)
	case int64:
		return n
	case float64:
		return int64(n)
	}
	return -1 << 62 // not a number: matches no expected count
}

// storageEngineStat reads a counter of serverStatus.storageEngine:
// logBytes (the payload bytes of the write records logged so far),
// fieldUpdates (the updates logged as field records), ...
func storageEngineStat(tb testing.TB, c *mongo.Client, name string) int64 {
	tb.Helper()
	var st struct {
		StorageEngine bson.Raw `bson:"storageEngine"`
	}
	if err := c.Database("admin").RunCommand(ctx, bson.M{"serverStatus": 1}).Decode(&st); err != nil {
		tb.Fatal(err)
	}
	n, ok := st.StorageEngine.Lookup(name).Int64OK()
	if !ok {
		tb.Fatalf("serverStatus.storageEngine.%s is missing", name)
	}
	return n
}

// allDocs reads every document of a cursor (err: the command's that
// opened it): allDocs(t)(coll.Find(...)).
func allDocs(t *testing.T) func(*mongo.Cursor, error) []bson.M {
	return func(cur *mongo.Cursor, err error) []bson.M {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		var out []bson.M
		if err := cur.All(ctx, &out); err != nil {
			t.Fatal(err)
		}
		return out
	}
}
