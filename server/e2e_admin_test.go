package server_test

import (
	"errors"
	"math"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dumbodb/dumbodb/server"
	"github.com/dumbodb/dumbodb/storage"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

func TestHelloShape(t *testing.T) {
	ts := startServer(t)
	admin := ts.client().Database("admin")
	for _, name := range []string{"hello", "isMaster", "ismaster"} {
		res := mustRun(t, admin, bson.D{{Key: name, Value: 1}})
		writable := "isWritablePrimary"
		if name != "hello" {
			writable = "ismaster"
		}
		if res[writable] != true {
			t.Errorf("%s: %s = %v", name, writable, res[writable])
		}
		for field, want := range map[string]any{
			"maxBsonObjectSize": int32(16777216), "maxMessageSizeBytes": int32(48000000),
			"maxWriteBatchSize": int32(100000), "maxWireVersion": int32(25), "minWireVersion": int32(0),
			"logicalSessionTimeoutMinutes": int32(30), "readOnly": false, "ok": 1.0,
		} {
			if res[field] != want {
				t.Errorf("%s: %s = %v (%T), want %v", name, field, res[field], res[field], want)
			}
		}
		if _, ok := res["connectionId"].(int32); !ok { // mongod's appendNumber: an int while it fits
			t.Errorf("%s: connectionId = %v", name, res["connectionId"])
		}
	}
}

func TestConnectionIDsIncrease(t *testing.T) {
	ts := startServer(t)
	a := num(mustRun(t, ts.client().Database("admin"), bson.D{{Key: "hello", Value: 1}})["connectionId"])
	b := num(mustRun(t, ts.client().Database("admin"), bson.D{{Key: "hello", Value: 1}})["connectionId"])
	if a <= 0 || b <= a {
		t.Fatalf("connection ids %d then %d", a, b)
	}
}

func TestAdminCommands(t *testing.T) {
	ts := startServer(t)
	c := ts.client()
	admin := c.Database("admin")

	bi := mustRun(t, admin, bson.D{{Key: "buildInfo", Value: 1}})
	if v, _ := bi["version"].(string); len(v) < 3 || v[:3] != "8.0" {
		t.Errorf("buildInfo version %v", bi["version"])
	}
	if bi["dumbodbVersion"] == nil {
		t.Error("buildInfo lacks dumbodbVersion")
	}
	if bi["javascriptEngine"] != "goja" || get(bi, "storageEngines") == nil {
		t.Errorf("buildInfo's engines: %v, %v", bi["javascriptEngine"], bi["storageEngines"])
	}
	mustRun(t, admin, bson.D{{Key: "ping", Value: 1}})
	mustRun(t, c.Database("anydb"), bson.D{{Key: "ping", Value: 1}})

	fcv := mustRun(t, admin, bson.D{{Key: "getParameter", Value: 1}, {Key: "featureCompatibilityVersion", Value: 1}})
	if get(fcv, "featureCompatibilityVersion", "version") != "8.0" {
		t.Errorf("fcv %v", fcv)
	}
	all := mustRun(t, admin, bson.D{{Key: "getParameter", Value: "*"}})
	if len(all) < 4 {
		t.Errorf("getParameter * gave %v", all)
	}
	_, err := run(t, admin, bson.D{{Key: "getParameter", Value: 1}, {Key: "noSuchParameter", Value: 1}})
	wantCode(t, err, 72, "InvalidOptions")
	detailed := mustRun(t, admin, bson.D{{Key: "getParameter", Value: bson.D{{Key: "showDetails", Value: true}}},
		{Key: "transactionLifetimeLimitSeconds", Value: 1}, {Key: "enableTestCommands", Value: 1}})
	if get(detailed, "transactionLifetimeLimitSeconds", "value") != int32(60) ||
		get(detailed, "transactionLifetimeLimitSeconds", "settableAtRuntime") != true ||
		get(detailed, "enableTestCommands", "value") != false || get(detailed, "enableTestCommands", "settableAtRuntime") != false {
		t.Errorf("getParameter showDetails: %v", detailed)
	}
	everything := mustRun(t, admin, bson.D{{Key: "getParameter", Value: bson.D{{Key: "allParameters", Value: true}, {Key: "showDetails", Value: true}}}})
	if get(everything, "requireApiVersion", "value") != false {
		t.Errorf("getParameter allParameters showDetails: %v", everything)
	}

	opts := mustRun(t, admin, bson.D{{Key: "getCmdLineOpts", Value: 1}})
	if get(opts, "parsed", "storage", "dbPath") != ts.dir {
		t.Errorf("getCmdLineOpts %v", opts)
	}
	names := mustRun(t, admin, bson.D{{Key: "getLog", Value: "*"}})
	if len(names["names"].(bson.A)) != 2 {
		t.Errorf("getLog * %v", names)
	}
	mustRun(t, admin, bson.D{{Key: "getLog", Value: "startupWarnings"}})
	hi := mustRun(t, admin, bson.D{{Key: "hostInfo", Value: 1}})
	if get(hi, "system", "numCores").(int32) < 1 {
		t.Errorf("hostInfo %v", hi)
	}
	cs := mustRun(t, admin, bson.D{{Key: "connectionStatus", Value: 1}})
	if cs["authInfo"] == nil {
		t.Errorf("connectionStatus %v", cs)
	}
	me := mustRun(t, admin, bson.D{{Key: "whatsmyuri", Value: 1}})
	if me["you"] == "" {
		t.Errorf("whatsmyuri %v", me)
	}
	lc := mustRun(t, admin, bson.D{{Key: "listCommands", Value: 1}})
	if get(lc, "commands", "find") == nil {
		t.Errorf("listCommands lacks find")
	}
	mustRun(t, admin, bson.D{{Key: "endSessions", Value: bson.A{}}})

	_, err = run(t, admin, bson.D{{Key: "atlasVersion", Value: 1}})
	wantCode(t, err, 59, "CommandNotFound")
	_, err = run(t, admin, bson.D{{Key: "noSuchCommand", Value: 1}})
	wantCode(t, err, 59, "CommandNotFound")
	_, err = run(t, c.Database("test"), bson.D{{Key: "getCmdLineOpts", Value: 1}})
	wantCode(t, err, 13, "Unauthorized")
}

func TestServerStatusCounters(t *testing.T) {
	ts := startServer(t)
	c := ts.client()
	admin := c.Database("admin")
	before := mustRun(t, admin, bson.D{{Key: "serverStatus", Value: 1}})
	coll := c.Database("test").Collection("c")
	if _, err := coll.InsertMany(ctx, []any{bson.M{"a": 1}, bson.M{"a": 2}}); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.Find(ctx, bson.M{}); err != nil {
		t.Fatal(err)
	}
	after := mustRun(t, admin, bson.D{{Key: "serverStatus", Value: 1}})
	delta := func(k string) int64 {
		return get(after, "opcounters", k).(int64) - get(before, "opcounters", k).(int64)
	}
	if delta("insert") != 2 || delta("query") != 1 {
		t.Errorf("opcounters before %v after %v", before["opcounters"], after["opcounters"])
	}
	if after["uptimeMillis"].(int64) < before["uptimeMillis"].(int64) {
		t.Errorf("uptime went back")
	}
	if get(after, "connections", "current").(int32) < 1 {
		t.Errorf("connections %v", after["connections"])
	}
}

func TestCompressionNegotiated(t *testing.T) {
	ts := startServer(t)
	for _, comp := range []string{"snappy", "zlib", "zstd"} {
		c := ts.client(options.Client().SetCompressors([]string{comp}))
		coll := c.Database("test").Collection(comp)
		big := make([]byte, 100000)
		if _, err := coll.InsertOne(ctx, bson.M{"_id": 1, "big": big}); err != nil {
			t.Fatalf("%s: %v", comp, err)
		}
		var got bson.M
		if err := coll.FindOne(ctx, bson.M{"_id": 1}).Decode(&got); err != nil {
			t.Fatalf("%s: %v", comp, err)
		}
		if len(got["big"].(bson.Binary).Data) != len(big) {
			t.Fatalf("%s: bad round trip", comp)
		}
	}
}

// TestServerStatusMemory: mem holds the process's real resident and
// virtual sizes (the test server runs in this process, so its
// /proc/self is the test's), goMemory the Go runtime's classes, and
// storageEngine the edit budget's parts.
func TestServerStatusMemory(t *testing.T) {
	ts := startServer(t)
	c := ts.client()
	if _, err := c.Database("test").Collection("c").InsertOne(ctx, bson.M{"a": 1}); err != nil {
		t.Fatal(err)
	}
	held := make([]byte, 64<<20)
	for i := range held {
		held[i] = byte(i)
	}
	st := mustRun(t, c.Database("admin"), bson.D{{Key: "serverStatus", Value: 1}})
	runtime.KeepAlive(held)

	resident, virtual := get(st, "mem", "resident").(int64), get(st, "mem", "virtual").(int64)
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip("no /proc/self/status")
	}
	var vmRSSKB int64
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			vmRSSKB, _ = strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		}
	}
	if resident < 64 || math.Abs(float64(resident-vmRSSKB>>10)) > float64(vmRSSKB>>10)/5 {
		t.Errorf("mem.resident %d MiB, /proc/self/status VmRSS %d MiB", resident, vmRSSKB>>10)
	}
	if virtual <= resident || get(st, "mem", "supported") != true {
		t.Errorf("mem %v: want virtual above resident (Go reserves address space) and supported", st["mem"])
	}

	goMem := func(k string) int64 { return get(st, "goMemory", k).(int64) }
	if goMem("objectsBytes") < 64<<20 || goMem("totalBytes") < goMem("objectsBytes")+goMem("stacksBytes") ||
		goMem("liveBytes") <= 0 || goMem("goalBytes") <= 0 || goMem("metadataBytes") <= 0 {
		t.Errorf("goMemory %v: want the 64 MiB held among the heap's objects, and each class counted", st["goMemory"])
	}
	if get(st, "storageEngine", "editBytes").(int64) <= 0 {
		t.Errorf("storageEngine %v: an insert not yet checkpointed holds edit memory", st["storageEngine"])
	}
	if _, ok := get(st, "storageEngine", "historyBytes").(int64); !ok {
		t.Errorf("storageEngine %v: no historyBytes", st["storageEngine"])
	}
}

// TestServerReturnsFreeMemory: with Config.MemoryRelease set, the server
// returns the heap's free pages once a collection leaves more than its
// floor free, and serverStatus.goMemory counts the releases; without it,
// the server never forces one.
func TestServerReturnsFreeMemory(t *testing.T) {
	releasing := startServer(t, func(c *server.Config) { c.MemoryRelease = 20 * time.Millisecond })
	idle := startServer(t)
	releases := func(ts *testServer) (int64, int64) {
		st := mustRun(t, ts.client().Database("admin"), bson.D{{Key: "serverStatus", Value: 1}})
		return get(st, "goMemory", "serverReleases").(int64), get(st, "goMemory", "serverReleasedBytes").(int64)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		garbage := make([][]byte, 64)
		for i := range garbage {
			garbage[i] = make([]byte, 256<<10)
		}
		runtime.KeepAlive(garbage)
		runtime.GC() // 16 MiB of free pages for the next release
		n, bytes := releases(releasing)
		if n > 0 && bytes > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no release in 20 s of 16 MiB garbage: serverReleases %d, serverReleasedBytes %d", n, bytes)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if n, bytes := releases(idle); n != 0 || bytes != 0 {
		t.Errorf("a server without MemoryRelease released %d times (%d bytes)", n, bytes)
	}
}

// TestAdminCommandsOfWhatIsNotThere: lockInfo and connPoolStats answer in
// mongod's shape with nothing held and no pools; shutdown is refused to a
// user without the shutdown action, and off admin.
func TestAdminCommandsOfWhatIsNotThere(t *testing.T) {
	ts, root := authServer(t)
	admin := root.Database("admin")
	if got := mustRun(t, admin, bson.D{{Key: "lockInfo", Value: 1}}); len(got["lockInfo"].(bson.A)) != 0 {
		t.Errorf("lockInfo %v", got)
	}
	if got := mustRun(t, admin, bson.D{{Key: "connPoolStats", Value: 1}}); got["totalCreated"] != int32(0) || got["pools"] == nil {
		t.Errorf("connPoolStats %v", got)
	}
	addUser(t, root, "admin", "dev", bson.A{"readWriteAnyDatabase"})
	dev := ts.authClient("dev", "pw", "admin", "").Database("admin")
	_, err := run(t, dev, bson.D{{Key: "shutdown", Value: 1}})
	wantCode(t, err, 13, "Unauthorized")
	_, err = run(t, root.Database("app"), bson.D{{Key: "shutdown", Value: 1}})
	wantCode(t, err, 13, "Unauthorized")
	_, err = run(t, admin, bson.D{{Key: "shutdown", Value: 1}, {Key: "timeoutSecs", Value: -1}})
	wantCode(t, err, 2, "BadValue")
}

// TestDefaultRWConcern: getDefaultRWConcern reports mongod 8's implicit
// defaults for a replica set until setDefaultRWConcern sets others, which
// a restart keeps; an empty document unsets one; inputs mongod refuses
// are refused with its codes.
func TestDefaultRWConcern(t *testing.T) {
	ts := startServer(t)
	admin := ts.client().Database("admin")
	got := mustRun(t, admin, bson.D{{Key: "getDefaultRWConcern", Value: 1}})
	if get(got, "defaultWriteConcern", "w") != "majority" || get(got, "defaultReadConcern", "level") != "local" ||
		got["defaultWriteConcernSource"] != "implicit" || got["defaultReadConcernSource"] != "implicit" || got["updateOpTime"] != nil {
		t.Errorf("getDefaultRWConcern %v", got)
	}
	for _, bad := range []struct {
		cmd  bson.D
		code int32
	}{
		{bson.D{}, 2},
		{bson.D{{Key: "defaultWriteConcern", Value: 1}}, 14},
		{bson.D{{Key: "defaultWriteConcern", Value: bson.M{"w": 0}}}, 2},
		{bson.D{{Key: "defaultReadConcern", Value: 1}}, 14},
		{bson.D{{Key: "defaultReadConcern", Value: bson.M{"level": "dummy"}}}, 9},
		{bson.D{{Key: "defaultReadConcern", Value: bson.M{"level": "linearizable"}}}, 2},
		{bson.D{{Key: "defaultReadConcern", Value: bson.M{"level": "snapshot"}}}, 2},
		{bson.D{{Key: "defaultReadConcern", Value: bson.D{{Key: "level", Value: "local"}, {Key: "afterClusterTime", Value: bson.Timestamp{T: 50, I: 1}}}}}, 2},
	} {
		_, err := run(t, admin, append(bson.D{{Key: "setDefaultRWConcern", Value: 1}}, bad.cmd...))
		var ce mongo.CommandError
		if !errors.As(err, &ce) || ce.Code != bad.code {
			t.Errorf("setDefaultRWConcern %v: %v, want code %d", bad.cmd, err, bad.code)
		}
	}
	set := mustRun(t, admin, bson.D{{Key: "setDefaultRWConcern", Value: 1},
		{Key: "defaultReadConcern", Value: bson.M{"level": "majority"}}, {Key: "defaultWriteConcern", Value: bson.M{"w": 1, "j": false}}})
	if get(set, "defaultReadConcern", "level") != "majority" || get(set, "defaultWriteConcern", "j") != false ||
		get(set, "defaultWriteConcern", "wtimeout") != int32(0) || set["defaultWriteConcernSource"] != "global" || set["updateOpTime"] == nil {
		t.Errorf("setDefaultRWConcern %v", set)
	}
	// A write without a writeConcern runs with the default one.
	if _, err := ts.client().Database("app").Collection("c").InsertOne(ctx, bson.M{"_id": 1}); err != nil {
		t.Fatal(err)
	}
	ts.restart()
	admin = ts.client().Database("admin")
	got = mustRun(t, admin, bson.D{{Key: "getDefaultRWConcern", Value: 1}, {Key: "inMemory", Value: true}})
	if get(got, "defaultReadConcern", "level") != "majority" || get(got, "defaultWriteConcern", "w") != int32(1) ||
		got["defaultReadConcernSource"] != "global" || got["updateWallClockTime"] == nil {
		t.Errorf("after a restart: %v", got)
	}
	got = mustRun(t, admin, bson.D{{Key: "setDefaultRWConcern", Value: 1}, {Key: "defaultWriteConcern", Value: bson.M{}}})
	if get(got, "defaultWriteConcern", "w") != "majority" || got["defaultWriteConcernSource"] != "implicit" ||
		get(got, "defaultReadConcern", "level") != "majority" {
		t.Errorf("the write concern unset: %v", got)
	}
}

// TestCurrentOpStage: $currentOp on admin lists an operation in
// progress (a find held by a fail point) as currentOp does, with idle
// connections, idle cursors and idle sessions when asked; on another
// database, or with an unknown option, it is refused as mongod does.
func TestCurrentOpStage(t *testing.T) {
	c := startServer(t, func(cfg *server.Config) { cfg.TestCommands = true }).client()
	admin := c.Database("admin")
	coll := c.Database("app").Collection("c")
	docs := make([]any, 10)
	for i := range docs {
		docs[i] = bson.M{"_id": i}
	}
	if _, err := coll.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	cur, err := coll.Find(ctx, bson.M{}, options.Find().SetBatchSize(2))
	if err != nil {
		t.Fatal(err)
	}
	defer cur.Close(ctx)
	mustRun(t, admin, bson.D{{Key: "configureFailPoint", Value: "failCommand"}, {Key: "mode", Value: bson.D{{Key: "times", Value: 1}}},
		{Key: "data", Value: bson.D{{Key: "failCommands", Value: bson.A{"find"}}, {Key: "blockConnection", Value: true}, {Key: "blockTimeMS", Value: 700}}}})
	done := make(chan error, 1)
	go func() { done <- coll.FindOne(ctx, bson.M{"_id": 3}).Err() }()
	listed := func(stage bson.D) []bson.M {
		t.Helper()
		return allDocs(t)(admin.Aggregate(ctx, mongo.Pipeline{{{Key: "$currentOp", Value: stage}}}))
	}
	var sawOp bool
	for deadline := time.Now().Add(5 * time.Second); !sawOp && time.Now().Before(deadline); {
		for _, d := range listed(bson.D{{Key: "allUsers", Value: true}}) {
			sawOp = sawOp || (d["type"] == "op" && d["ns"] == "app" && d["active"] == true)
		}
	}
	if !sawOp {
		t.Error("$currentOp did not list the blocked find")
	}
	<-done
	kinds := map[any]int{}
	for _, d := range listed(bson.D{{Key: "allUsers", Value: true}, {Key: "idleConnections", Value: true}, {Key: "idleCursors", Value: true}}) {
		kinds[d["type"]]++
	}
	if kinds["idleCursor"] != 1 || kinds["op"] < 1 {
		t.Errorf("listed %v", kinds)
	}
	_, err = c.Database("app").Aggregate(ctx, mongo.Pipeline{{{Key: "$currentOp", Value: bson.D{}}}})
	wantCode(t, err, 73, "InvalidNamespace")
	_, err = admin.Aggregate(ctx, mongo.Pipeline{{{Key: "$currentOp", Value: bson.D{{Key: "everything", Value: true}}}}})
	wantCode(t, err, 9, "FailedToParse")
}

// TestTop: top counts the commands on each collection by kind, with
// their time, as mongod's does.
func TestTop(t *testing.T) {
	c := startServer(t).client()
	coll := c.Database("app").Collection("c")
	for i := range 3 {
		if _, err := coll.InsertOne(ctx, bson.M{"_id": i}); err != nil {
			t.Fatal(err)
		}
	}
	if err := coll.FindOne(ctx, bson.M{"_id": 1}).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.DeleteOne(ctx, bson.M{"_id": 2}); err != nil {
		t.Fatal(err)
	}
	top := mustRun(t, c.Database("admin"), bson.D{{Key: "top", Value: 1}})
	totals := top["totals"].(bson.D)
	var app bson.D
	for _, e := range totals {
		if e.Key == "app.c" {
			app = e.Value.(bson.D)
		}
	}
	count := func(kind string) any {
		for _, e := range app {
			if e.Key == kind {
				for _, f := range e.Value.(bson.D) {
					if f.Key == "count" {
						return f.Value
					}
				}
			}
		}
		return nil
	}
	for kind, want := range map[string]int64{"total": 5, "insert": 3, "queries": 1, "remove": 1, "writeLock": 4, "readLock": 1} {
		if got := count(kind); got != want {
			t.Errorf("top app.c %s: %v, want %d (%v)", kind, got, want, app)
		}
	}
}

// TestServerStatusRepl: serverStatus has mongod's repl section in a
// replica set (setName, isWritablePrimary, primary, me, hosts), and
// {repl: 0} leaves it out.
func TestServerStatusRepl(t *testing.T) {
	admin := startServer(t).client().Database("admin")
	st := mustRun(t, admin, bson.D{{Key: "serverStatus", Value: 1}})
	repl, ok := st["repl"].(bson.D)
	if !ok {
		t.Fatalf("no repl section: %v", st)
	}
	got := map[string]any{}
	for _, e := range repl {
		got[e.Key] = e.Value
	}
	if got["setName"] != "rs0" || got["isWritablePrimary"] != true || got["primary"] != got["me"] || got["hosts"] == nil {
		t.Errorf("repl %v", repl)
	}
	if st := mustRun(t, admin, bson.D{{Key: "serverStatus", Value: 1}, {Key: "repl", Value: 0}}); st["repl"] != nil {
		t.Error("{repl: 0} kept the repl section")
	}
}

// TestSetParameterRoundTrips: the parameters getParameter lists that
// setParameter changes come back as set (quiet, cursorTimeoutMillis), a
// logLevel or logComponentVerbosity the host program owns is refused,
// help is answered, and values out of range are refused.
func TestSetParameterRoundTrips(t *testing.T) {
	admin := startServer(t).client().Database("admin")
	mustRun(t, admin, bson.D{{Key: "setParameter", Value: 1}, {Key: "quiet", Value: true}, {Key: "cursorTimeoutMillis", Value: 5000}})
	got := mustRun(t, admin, bson.D{{Key: "getParameter", Value: 1}, {Key: "quiet", Value: 1}, {Key: "cursorTimeoutMillis", Value: 1}})
	if got["quiet"] != true || got["cursorTimeoutMillis"] != int64(5000) {
		t.Errorf("after setParameter: %v", got)
	}
	_, err := run(t, admin, bson.D{{Key: "setParameter", Value: 1}, {Key: "logLevel", Value: 1}})
	wantCode(t, err, 238, "NotImplemented") // a test server logs through its test's logger
	_, err = run(t, admin, bson.D{{Key: "setParameter", Value: 1}, {Key: "logComponentVerbosity", Value: bson.M{"command": bson.M{"verbosity": 2}}}})
	wantCode(t, err, 238, "NotImplemented")
	_, err = run(t, admin, bson.D{{Key: "setParameter", Value: 1}, {Key: "cursorTimeoutMillis", Value: 0}})
	wantCode(t, err, 2, "BadValue")
	// The index builds' sort budget: mongod's bounds and type.
	const sortBudget = "maxIndexBuildMemoryUsageMegabytes"
	defer storage.SetIndexBuildMemory(storage.IndexBuildMemory())
	mustRun(t, admin, bson.D{{Key: "setParameter", Value: 1}, {Key: sortBudget, Value: 64}})
	if got := mustRun(t, admin, bson.D{{Key: "getParameter", Value: 1}, {Key: sortBudget, Value: 1}}); got[sortBudget] != int32(64) || storage.IndexBuildMemory() != 64<<20 {
		t.Errorf("after setting %s to 64: %v", sortBudget, got[sortBudget])
	}
	_, err = run(t, admin, bson.D{{Key: "setParameter", Value: 1}, {Key: sortBudget, Value: 49}})
	wantCode(t, err, 2, "BadValue")
	help := mustRun(t, admin, bson.D{{Key: "setParameter", Value: 1}, {Key: "help", Value: true}})
	if s, _ := help["help"].(string); !strings.Contains(s, "cursorTimeoutMillis") || !strings.Contains(s, "quiet") {
		t.Errorf("help: %v", help)
	}
}

// TestLogComponentVerbosity: the host program's logger is given each
// component's verbosity after inheritance (a child takes its parent's,
// a component without one the global verbosity), and getParameter
// shows the components' own.
func TestLogComponentVerbosity(t *testing.T) {
	var mu sync.Mutex
	var global int
	var levels map[string]int
	admin := startServer(t, func(c *server.Config) {
		c.SetLogLevel = func(g int, l map[string]int) { mu.Lock(); global, levels = g, l; mu.Unlock() }
	}).client().Database("admin")
	mustRun(t, admin, bson.D{{Key: "setParameter", Value: 1}, {Key: "logComponentVerbosity", Value: bson.M{
		"verbosity": 1, "replication": bson.M{"verbosity": 2}, "storage": bson.M{"journal": 3}}}})
	mu.Lock()
	if global != 1 || levels["REPL"] != 2 || levels["ELECTION"] != 2 || levels["JOURNAL"] != 3 || levels["STORAGE"] != 1 || levels["COMMAND"] != 1 {
		t.Errorf("the logger's levels: %d %v", global, levels)
	}
	mu.Unlock()
	got := mustRun(t, admin, bson.D{{Key: "getParameter", Value: 1}, {Key: "logComponentVerbosity", Value: 1}, {Key: "logLevel", Value: 1}})
	if got["logLevel"] != int32(1) || get(got, "logComponentVerbosity", "replication", "verbosity") != int32(2) ||
		get(got, "logComponentVerbosity", "replication", "election", "verbosity") != int32(-1) ||
		get(got, "logComponentVerbosity", "storage", "journal", "verbosity") != int32(3) {
		t.Errorf("getParameter: %v", got)
	}
	for _, bad := range []bson.M{{"nosuch": 1}, {"storage": bson.M{"verbosity": 6}}, {"verbosity": -1}, {"storage": bson.M{"nosuch": 1}}} {
		_, err := run(t, admin, bson.D{{Key: "setParameter", Value: 1}, {Key: "logComponentVerbosity", Value: bad}})
		wantCode(t, err, 2, "BadValue")
	}
}

// TestDefaultProfile: with a default level (--profile,
// operationProfiling.mode) every database is profiled from its first
// command, profile -1 reports that level, and a database's own level
// overrides it; a bad default filter is refused.
func TestDefaultProfile(t *testing.T) {
	ts := startServer(t)
	if err := ts.srv.SetDefaultProfile(2, nil); err != nil {
		t.Fatal(err)
	}
	c := ts.client()
	app := c.Database("fresh")
	if _, err := app.Collection("c").InsertOne(ctx, bson.M{"_id": 1}); err != nil {
		t.Fatal(err)
	}
	entries := allDocs(t)(app.Collection("system.profile").Find(ctx, bson.M{"ns": "fresh.c"}))
	if len(entries) != 1 || entries[0]["op"] != "insert" {
		t.Fatalf("entries at the default level 2: %v", entries)
	}
	if got := mustRun(t, c.Database("other"), bson.D{{Key: "profile", Value: -1}}); got["was"] != int32(2) {
		t.Errorf("profile -1 of a database without its own level: %v", got)
	}
	mustRun(t, app, bson.D{{Key: "profile", Value: 0}})
	if _, err := app.Collection("c").InsertOne(ctx, bson.M{"_id": 2}); err != nil {
		t.Fatal(err)
	}
	if n := len(allDocs(t)(app.Collection("system.profile").Find(ctx, bson.M{"ns": "fresh.c"}))); n != 1 {
		t.Errorf("%d entries after the database's own level 0", n)
	}
	if err := ts.srv.SetDefaultProfile(1, bsoncore.NewDocumentBuilder().AppendInt32("$nosuch", 1).Build()); err == nil {
		t.Error("a bad default filter was taken")
	}
}

// TestProfiler: at level 2 every operation on the database leaves an
// entry in system.profile (op, ns, command, nreturned, millis, ts); at
// level 1 with a filter only those it matches; profile -1 reads the
// level; system.profile is listed while the database is profiled.
func TestProfiler(t *testing.T) {
	c := startServer(t).client()
	app := c.Database("app")
	coll := app.Collection("c")
	was := mustRun(t, app, bson.D{{Key: "profile", Value: 2}})
	if was["was"] != int32(0) || was["slowms"] != int64(100) {
		t.Errorf("profile 2: %v", was)
	}
	if _, err := coll.InsertOne(ctx, bson.M{"_id": 1}); err != nil {
		t.Fatal(err)
	}
	if err := coll.FindOne(ctx, bson.M{"_id": 1}).Err(); err != nil {
		t.Fatal(err)
	}
	read := func() []bson.M {
		t.Helper()
		return allDocs(t)(app.Collection("system.profile").Find(ctx, bson.M{"ns": "app.c"}, options.Find().SetSort(bson.M{"ts": 1})))
	}
	entries := read()
	if len(entries) != 2 || entries[0]["op"] != "insert" || entries[1]["op"] != "query" || entries[1]["nreturned"] != int64(1) || entries[1]["command"] == nil {
		t.Fatalf("entries at level 2: %v", entries)
	}
	mustRun(t, app, bson.D{{Key: "profile", Value: 1}, {Key: "filter", Value: bson.M{"op": "insert"}}})
	if err := coll.FindOne(ctx, bson.M{"_id": 1}).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.InsertOne(ctx, bson.M{"_id": 2}); err != nil {
		t.Fatal(err)
	}
	if entries := read(); len(entries) != 3 || entries[2]["op"] != "insert" {
		t.Errorf("entries after level 1 with a filter: %v", entries)
	}
	if got := mustRun(t, app, bson.D{{Key: "profile", Value: -1}}); got["was"] != int32(1) || got["filter"] == nil {
		t.Errorf("profile -1: %v", got)
	}
	names, err := app.ListCollectionNames(ctx, bson.M{})
	if err != nil || !strings.Contains(strings.Join(names, ","), "system.profile") {
		t.Errorf("listCollections: %v %v", names, err)
	}
	err = app.Collection("system.profile").Drop(ctx)
	wantCode(t, err, 20, "IllegalOperation")
	mustRun(t, app, bson.D{{Key: "profile", Value: 0}})
	_, err = run(t, app, bson.D{{Key: "profile", Value: 3}})
	wantCode(t, err, 2, "BadValue")
	assertProfileDrops(t, app)
}

// assertProfileDrops: with profiling off, system.profile drops and is no
// longer listed; dropDatabase takes it and the database's level with it.
func assertProfileDrops(t *testing.T, app *mongo.Database) {
	t.Helper()
	listed := func() bool {
		names, err := app.ListCollectionNames(ctx, bson.M{})
		if err != nil {
			t.Fatal(err)
		}
		return slices.Contains(names, "system.profile")
	}
	if got := mustRun(t, app, bson.D{{Key: "drop", Value: "system.profile"}}); got["ns"] != "app.system.profile" {
		t.Errorf("drop system.profile: %v", got)
	}
	if listed() {
		t.Error("system.profile listed after its drop")
	}
	mustRun(t, app, bson.D{{Key: "profile", Value: 2}})
	if _, err := app.Collection("c").InsertOne(ctx, bson.M{"_id": 3}); err != nil {
		t.Fatal(err)
	}
	if !listed() {
		t.Error("system.profile not listed at level 2")
	}
	if err := app.Drop(ctx); err != nil {
		t.Fatal(err)
	}
	if listed() {
		t.Error("system.profile listed after dropDatabase")
	}
	if got := mustRun(t, app, bson.D{{Key: "profile", Value: -1}}); got["was"] != int32(0) {
		t.Errorf("level after dropDatabase: %v", got)
	}
}
