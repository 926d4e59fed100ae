package server_test

import (
	"bufio"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/wire"

	"github.com/dumbodb/dumbodb/internal/dumboproc"
	"github.com/dumbodb/dumbodb/internal/testload"
	"github.com/dumbodb/dumbodb/server"
)

// raw runs one command on a raw connection (no driver session fields),
// decoded for assertions.
func raw(t *testing.T, nc net.Conn, cmd bson.D) bson.M {
	t.Helper()
	b, err := bson.Marshal(cmd)
	if err != nil {
		t.Fatal(err)
	}
	var out bson.M
	if err := bson.Unmarshal(rawRoundTrip(t, nc, bsoncore.Document(b)), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func wantRawCode(t *testing.T, reply bson.M, code int32) {
	t.Helper()
	if reply["ok"] != 0.0 || reply["code"] != code {
		t.Fatalf("want error %d, got %v", code, reply)
	}
}

// TestReplicaSetFace: with a plain URL (no directConnection) the driver
// discovers a one-member replica set through the advertised host and
// writes through it; hello, replSetGetStatus, replSetGetConfig and
// replSetInitiate describe that member.
func TestReplicaSetFace(t *testing.T) {
	ts := startServer(t)
	c, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + ts.addr + "/").SetTimeout(testload.Timeout(30 * time.Second)))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Disconnect(ctx)
	if _, err := c.Database("db").Collection("c").InsertOne(ctx, bson.D{{Key: "_id", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	admin := c.Database("admin")
	hello := mustRun(t, admin, bson.D{{Key: "hello", Value: 1}})
	if hello["setName"] != server.DefaultReplSet || hello["primary"] != ts.addr || hello["me"] != ts.addr ||
		hello["isWritablePrimary"] != true || get(hello, "hosts") == nil || get(hello, "lastWrite", "opTime", "ts") == nil {
		t.Fatalf("hello: %v", hello)
	}
	if _, ok := hello["$clusterTime"]; !ok {
		t.Fatalf("no $clusterTime in %v", hello)
	}
	status := mustRun(t, admin, bson.D{{Key: "replSetGetStatus", Value: 1}})
	if status["set"] != server.DefaultReplSet || status["myState"] != int32(1) {
		t.Fatalf("replSetGetStatus: %v", status)
	}
	members, _ := status["members"].(bson.A)
	if len(members) != 1 || get(members[0], "stateStr") != "PRIMARY" || get(members[0], "name") != ts.addr {
		t.Fatalf("members: %v", members)
	}
	conf := mustRun(t, admin, bson.D{{Key: "replSetGetConfig", Value: 1}})
	if get(conf, "config", "_id") != server.DefaultReplSet {
		t.Fatalf("replSetGetConfig: %v", conf)
	}
	one := bson.D{{Key: "_id", Value: server.DefaultReplSet}, {Key: "members", Value: bson.A{bson.D{{Key: "_id", Value: 0}, {Key: "host", Value: ts.addr}}}}}
	mustRun(t, admin, bson.D{{Key: "replSetInitiate", Value: one}})
	mustRun(t, admin, bson.D{{Key: "replSetInitiate", Value: 1}})
	elsewhere := bson.D{{Key: "_id", Value: server.DefaultReplSet}, {Key: "members", Value: bson.A{bson.D{{Key: "_id", Value: 0}, {Key: "host", Value: "db.example.com:27017"}}}}}
	_, err = run(t, admin, bson.D{{Key: "replSetInitiate", Value: elsewhere}})
	wantCode(t, err, 93, "InvalidReplicaSetConfig")
	if c := mustRun(t, admin, bson.D{{Key: "replSetGetConfig", Value: 1}, {Key: "commitmentStatus", Value: true}}); c["commitmentStatus"] != true {
		t.Fatalf("replSetGetConfig with commitmentStatus: %v", c)
	}
	_, err = run(t, admin, bson.D{{Key: "replSetInitiate", Value: bson.D{{Key: "_id", Value: "other"}, {Key: "members", Value: bson.A{}}}}})
	wantCode(t, err, 93, "InvalidReplicaSetConfig")
}

// TestStandaloneSwitch: --standalone presents a plain mongod standalone,
// which refuses transaction numbers.
func TestStandaloneSwitch(t *testing.T) {
	ts := startServer(t, func(c *server.Config) { c.Standalone = true })
	nc := ts.dial()
	hello := raw(t, nc, bson.D{{Key: "hello", Value: 1}, {Key: "$db", Value: "admin"}})
	if _, ok := hello["setName"]; ok {
		t.Fatalf("standalone hello has setName: %v", hello)
	}
	if _, ok := hello["$clusterTime"]; ok {
		t.Fatalf("standalone reply has $clusterTime: %v", hello)
	}
	wantRawCode(t, raw(t, nc, bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{}}},
		{Key: "lsid", Value: bson.D{{Key: "id", Value: newUUID()}}}, {Key: "txnNumber", Value: int64(1)}, {Key: "$db", Value: "db"}}), 20)
	wantRawCode(t, raw(t, nc, bson.D{{Key: "replSetGetStatus", Value: 1}, {Key: "$db", Value: "admin"}}), 76)
}

func newUUID() bson.Binary {
	id := bson.NewObjectID()
	return bson.Binary{Subtype: 4, Data: append(id[:], 0, 0, 0, 0)}
}

// TestRetryableWritesRunOnce: a retried statement (same lsid and
// txnNumber) answers from its first outcome and changes nothing again,
// also after a restart; an older txnNumber gets TransactionTooOld.
func TestRetryableWritesRunOnce(t *testing.T) {
	ts := startServer(t)
	lsid := bson.D{{Key: "id", Value: newUUID()}}
	nc := ts.dial()
	insert := bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{
		bson.D{{Key: "_id", Value: 1}, {Key: "n", Value: 0}}, bson.D{{Key: "_id", Value: 2}, {Key: "n", Value: 0}}}},
		{Key: "lsid", Value: lsid}, {Key: "txnNumber", Value: int64(1)}, {Key: "$db", Value: "db"}}
	for try := 0; try < 2; try++ {
		if r := raw(t, nc, insert); r["ok"] != 1.0 || r["n"] != int32(2) || r["writeErrors"] != nil {
			t.Fatalf("insert try %d: %v", try, r)
		}
	}
	inc := bson.D{{Key: "update", Value: "c"}, {Key: "updates", Value: bson.A{
		bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: 1}}}, {Key: "u", Value: bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}}}},
		bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: 3}}}, {Key: "u", Value: bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}}}, {Key: "upsert", Value: true}},
	}}, {Key: "lsid", Value: lsid}, {Key: "txnNumber", Value: int64(2)}, {Key: "$db", Value: "db"}}
	fam := bson.D{{Key: "findAndModify", Value: "c"}, {Key: "query", Value: bson.D{{Key: "_id", Value: 2}}},
		{Key: "update", Value: bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 10}}}}}, {Key: "new", Value: true},
		{Key: "lsid", Value: lsid}, {Key: "txnNumber", Value: int64(3)}, {Key: "$db", Value: "db"}}
	for try := 0; try < 3; try++ {
		if try == 2 {
			ts.restart()
			nc = ts.dial()
		}
		if r := raw(t, nc, inc); r["n"] != int32(2) || r["nModified"] != int32(1) || len(r["upserted"].(bson.A)) != 1 {
			t.Fatalf("update try %d: %v", try, r)
		}
	}
	for try := 0; try < 2; try++ {
		if r := raw(t, nc, fam); get(r, "value", "n") != int32(10) {
			t.Fatalf("findAndModify try %d: %v", try, r)
		}
	}
	// A retry of txnNumber 2 after 3 is too old.
	wantRawCode(t, raw(t, nc, inc), 225)
	docs := ts.client().Database("db").Collection("c")
	for id, want := range map[int]int32{1: 1, 2: 10, 3: 1} {
		var got bson.M
		if err := docs.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&got); err != nil || got["n"] != want {
			t.Fatalf("_id %d: %v %v, want n %d", id, got, err, want)
		}
	}
}

// TestRetryableWriteRefusals: multi-document writes cannot be retryable,
// txnNumber needs a session and a retryable command, and startTransaction
// needs autocommit: false.
func TestRetryableWriteRefusals(t *testing.T) {
	ts := startServer(t)
	nc := ts.dial()
	lsid := bson.D{{Key: "id", Value: newUUID()}}
	multi := raw(t, nc, bson.D{{Key: "update", Value: "c"}, {Key: "updates", Value: bson.A{bson.D{{Key: "q", Value: bson.D{}},
		{Key: "u", Value: bson.D{{Key: "$set", Value: bson.D{{Key: "a", Value: 1}}}}}, {Key: "multi", Value: true}}}},
		{Key: "lsid", Value: lsid}, {Key: "txnNumber", Value: int64(1)}, {Key: "$db", Value: "db"}})
	if errs, _ := multi["writeErrors"].(bson.A); len(errs) != 1 || get(errs[0], "code") != int32(72) {
		t.Fatalf("multi update: %v", multi)
	}
	wantRawCode(t, raw(t, nc, bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{}}},
		{Key: "txnNumber", Value: int64(1)}, {Key: "$db", Value: "db"}}), 20)
	wantRawCode(t, raw(t, nc, bson.D{{Key: "find", Value: "c"}, {Key: "lsid", Value: lsid},
		{Key: "txnNumber", Value: int64(1)}, {Key: "$db", Value: "db"}}), 50768)
	wantRawCode(t, raw(t, nc, bson.D{{Key: "find", Value: "c"}, {Key: "lsid", Value: lsid}, {Key: "txnNumber", Value: int64(5)},
		{Key: "startTransaction", Value: true}, {Key: "$db", Value: "db"}}), 72)
	wantRawCode(t, raw(t, nc, bson.D{{Key: "find", Value: "c"}, {Key: "readConcern", Value: bson.D{{Key: "level", Value: "bogus"}}}, {Key: "$db", Value: "db"}}), 2)
	wantRawCode(t, raw(t, nc, bson.D{{Key: "find", Value: "c"}, {Key: "readConcern", Value: bson.D{{Key: "level", Value: "snapshot"},
		{Key: "atClusterTime", Value: bson.Timestamp{T: 1, I: 1}}}}, {Key: "$db", Value: "db"}}), 239)
}

// TestClusterTime: every reply carries $clusterTime and operationTime; a
// write's operationTime is later than the reads before it, and
// afterClusterTime is honoured.
func TestClusterTime(t *testing.T) {
	ts := startServer(t)
	nc := ts.dial()
	ping := raw(t, nc, bson.D{{Key: "ping", Value: 1}, {Key: "$db", Value: "admin"}})
	before, _ := ping["operationTime"].(bson.Timestamp)
	ins := raw(t, nc, bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{}}}, {Key: "$db", Value: "db"}})
	wrote, _ := ins["operationTime"].(bson.Timestamp)
	if before.IsZero() || !before.Before(wrote) {
		t.Fatalf("read at %v, write at %v", before, wrote)
	}
	future := bson.Timestamp{T: wrote.T + 100, I: 1}
	f := raw(t, nc, bson.D{{Key: "find", Value: "c"}, {Key: "readConcern", Value: bson.D{{Key: "level", Value: "majority"},
		{Key: "afterClusterTime", Value: future}}}, {Key: "$db", Value: "db"}})
	if got, _ := f["operationTime"].(bson.Timestamp); got.Before(future) || f["ok"] != 1.0 {
		t.Fatalf("afterClusterTime %v: %v", future, f)
	}
	errReply := raw(t, nc, bson.D{{Key: "noSuchCommand", Value: 1}, {Key: "$db", Value: "admin"}})
	if _, ok := errReply["$clusterTime"]; !ok {
		t.Fatalf("error reply without $clusterTime: %v", errReply)
	}
}

// TestSessionsLifecycle: startSession, $listLocalSessions, refresh, and
// endSessions / killSessions, which kill the session's cursors.
func TestSessionsLifecycle(t *testing.T) {
	ts := startServer(t)
	nc := ts.dial()
	started := raw(t, nc, bson.D{{Key: "startSession", Value: 1}, {Key: "$db", Value: "admin"}})
	id := get(started, "id", "id")
	if id == nil || started["timeoutMinutes"] != int32(30) {
		t.Fatalf("startSession: %v", started)
	}
	lsid := bson.D{{Key: "id", Value: id}}
	listed := raw(t, nc, bson.D{{Key: "aggregate", Value: 1}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$listLocalSessions", Value: bson.D{}}}}},
		{Key: "cursor", Value: bson.D{}}, {Key: "$db", Value: "admin"}})
	if batch, _ := get(listed, "cursor", "firstBatch").(bson.A); len(batch) != 1 || get(batch[0], "_id", "id") == nil {
		t.Fatalf("$listLocalSessions: %v", listed)
	}
	for spec, want := range map[string]bson.D{"1": {}, "1 ": {{Key: "allUsers", Value: true}},
		"0": {{Key: "users", Value: bson.A{bson.D{{Key: "user", Value: "ann"}, {Key: "db", Value: "admin"}}}}}} {
		all := raw(t, nc, bson.D{{Key: "aggregate", Value: "system.sessions"}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$listSessions", Value: want}}}},
			{Key: "cursor", Value: bson.D{}}, {Key: "$db", Value: "config"}})
		if batch, _ := get(all, "cursor", "firstBatch").(bson.A); fmt.Sprint(len(batch)) != strings.TrimSpace(spec) {
			t.Fatalf("$listSessions %v: %v, want %s sessions", want, all, spec)
		}
	}
	raw(t, nc, bson.D{{Key: "refreshSessions", Value: bson.A{lsid}}, {Key: "$db", Value: "admin"}})
	docs := bson.A{}
	for i := 0; i < 5; i++ {
		docs = append(docs, bson.D{{Key: "_id", Value: i}})
	}
	raw(t, nc, bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: docs}, {Key: "$db", Value: "db"}})
	for _, end := range []string{"endSessions", "killSessions"} {
		found := raw(t, nc, bson.D{{Key: "find", Value: "c"}, {Key: "batchSize", Value: 1}, {Key: "lsid", Value: lsid}, {Key: "$db", Value: "db"}})
		cursorID, _ := get(found, "cursor", "id").(int64)
		if cursorID == 0 {
			t.Fatalf("find: %v", found)
		}
		raw(t, nc, bson.D{{Key: end, Value: bson.A{lsid}}, {Key: "$db", Value: "admin"}})
		more := raw(t, nc, bson.D{{Key: "getMore", Value: cursorID}, {Key: "collection", Value: "c"}, {Key: "$db", Value: "db"}})
		if more["ok"] != 0.0 {
			t.Fatalf("getMore after %s: %v", end, more)
		}
	}
	listed = raw(t, nc, bson.D{{Key: "aggregate", Value: 1}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$listLocalSessions", Value: bson.D{}}}}},
		{Key: "cursor", Value: bson.D{}}, {Key: "$db", Value: "admin"}})
	if batch, _ := get(listed, "cursor", "firstBatch").(bson.A); len(batch) != 0 {
		t.Fatalf("sessions after killSessions: %v", batch)
	}
}

// TestAwaitableHello: a hello with our topologyVersion and maxAwaitTimeMS
// waits out the time (the topology never changes); another processId gets
// an answer at once.
func TestAwaitableHello(t *testing.T) {
	ts := startServer(t)
	nc := ts.dial()
	first := raw(t, nc, bson.D{{Key: "hello", Value: 1}, {Key: "$db", Value: "admin"}})
	tv := first["topologyVersion"]
	start := time.Now()
	again := raw(t, nc, bson.D{{Key: "hello", Value: 1}, {Key: "topologyVersion", Value: tv}, {Key: "maxAwaitTimeMS", Value: int64(300)}, {Key: "$db", Value: "admin"}})
	if again["ok"] != 1.0 || time.Since(start) < 250*time.Millisecond {
		t.Fatalf("awaitable hello answered after %v: %v", time.Since(start), again)
	}
	other := bson.D{{Key: "processId", Value: bson.NewObjectID()}, {Key: "counter", Value: int64(0)}}
	if r := raw(t, nc, bson.D{{Key: "hello", Value: 1}, {Key: "topologyVersion", Value: other}, {Key: "maxAwaitTimeMS", Value: int64(600000)}, {Key: "$db", Value: "admin"}}); r["ok"] != 1.0 {
		t.Fatalf("hello with another topology: %v", r)
	}
	wantRawCode(t, raw(t, nc, bson.D{{Key: "hello", Value: 1}, {Key: "maxAwaitTimeMS", Value: int64(10)}, {Key: "$db", Value: "admin"}}), 31368)
}

// TestStreamingHello: an awaitable hello sent with exhaustAllowed is
// answered with moreToCome set, and the server goes on sending a reply
// every maxAwaitTimeMS with no request, each responding to the previous
// reply, as the drivers' streaming monitor expects.
func TestStreamingHello(t *testing.T) {
	ts := startServer(t)
	nc := ts.dial()
	first := raw(t, nc, bson.D{{Key: "hello", Value: 1}, {Key: "$db", Value: "admin"}})
	body, _ := bson.Marshal(bson.D{{Key: "hello", Value: 1}, {Key: "topologyVersion", Value: first["topologyVersion"]},
		{Key: "maxAwaitTimeMS", Value: int64(50)}, {Key: "$db", Value: "admin"}})
	if err := wire.Write(nc, 7, 0, &wire.Msg{Flags: wire.FlagExhaustAllowed, Body: body}, wire.CompressorNoop); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(nc)
	responseTo := int32(7)
	for i := range 3 {
		hdr, msg, _, err := wire.Read(r)
		if err != nil {
			t.Fatal(err)
		}
		m := msg.(*wire.Msg)
		if m.Flags&wire.FlagMoreToCome == 0 || hdr.ResponseTo != responseTo {
			t.Fatalf("reply %d: flags %x, responseTo %d (want moreToCome, %d)", i, m.Flags, hdr.ResponseTo, responseTo)
		}
		if ok, _ := m.Body.Lookup("ok").AsFloat64OK(); ok != 1 || m.Body.Lookup("isWritablePrimary").Boolean() != true {
			t.Fatalf("reply %d: %s", i, m.Body)
		}
		responseTo = hdr.RequestID
	}
}

// TestWaitingIsNotSlow: an awaitable hello that waits, and a client that
// hangs up on it, log no "Slow query" and no interruption (mongod leaves
// them out too), while a find held 200 ms by a fail point logs one.
func TestWaitingIsNotSlow(t *testing.T) {
	logs := &dumboproc.SyncBuffer{}
	ts := &testServer{t: t, dir: t.TempDir(), cfg: server.Config{BindIPs: []string{"127.0.0.1"}, TestCommands: true}, logTo: logs}
	ts.start()
	t.Cleanup(ts.stop)
	nc := ts.dial()
	tv := raw(t, nc, bson.D{{Key: "hello", Value: 1}, {Key: "$db", Value: "admin"}})["topologyVersion"]
	raw(t, nc, bson.D{{Key: "hello", Value: 1}, {Key: "topologyVersion", Value: tv}, {Key: "maxAwaitTimeMS", Value: int64(300)}, {Key: "$db", Value: "admin"}})
	hangUp := ts.dial()
	awaiting, _ := bson.Marshal(bson.D{{Key: "hello", Value: 1}, {Key: "topologyVersion", Value: tv}, {Key: "maxAwaitTimeMS", Value: int64(2000)}, {Key: "$db", Value: "admin"}})
	if err := wire.Write(hangUp, 1, 0, &wire.Msg{Body: awaiting}, wire.CompressorNoop); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // past slowOpWatch: the hang-up is watched
	hangUp.Close()
	time.Sleep(200 * time.Millisecond)
	for _, line := range strings.Split(logs.String(), "\n") {
		if !strings.Contains(line, `"level":"debug"`) && (strings.Contains(line, "Slow query") || strings.Contains(line, "interrupting")) {
			t.Fatalf("waiting was logged as slow or interrupted: %s", line)
		}
	}
	c := ts.client()
	mustRun(t, c.Database("admin"), bson.D{{Key: "configureFailPoint", Value: "failCommand"}, {Key: "mode", Value: bson.D{{Key: "times", Value: 1}}},
		{Key: "data", Value: bson.D{{Key: "failCommands", Value: bson.A{"find"}}, {Key: "blockConnection", Value: true}, {Key: "blockTimeMS", Value: 200}}}})
	if err := c.Database("app").Collection("c").FindOne(ctx, bson.M{}).Err(); err != nil && err != mongo.ErrNoDocuments {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), `"command":{"find":"c"`) || !strings.Contains(logs.String(), `"ns":"app.c"`) || !strings.Contains(logs.String(), "Slow query") {
		t.Fatalf("a slow find was not logged:\n%s", logs.String())
	}
}

// TestMaxConnsAndSlowMS: with MaxConns 2 a third connection is closed as
// it arrives and logged, and serverStatus counts the two left; with
// SlowOp 1 h a find held 200 ms is no slow query.
func TestMaxConnsAndSlowMS(t *testing.T) {
	logs := &dumboproc.SyncBuffer{}
	ts := &testServer{t: t, dir: t.TempDir(), logTo: logs, cfg: server.Config{BindIPs: []string{"127.0.0.1"},
		TestCommands: true, MaxConns: 2, SlowOp: time.Hour}}
	ts.start()
	t.Cleanup(ts.stop)
	first, second := ts.dial(), ts.dial()
	raw(t, first, bson.D{{Key: "ping", Value: 1}, {Key: "$db", Value: "admin"}})
	raw(t, second, bson.D{{Key: "ping", Value: 1}, {Key: "$db", Value: "admin"}})
	third := ts.dial()
	third.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := third.Read(make([]byte, 1)); err == nil {
		t.Fatal("a third connection past MaxConns 2 was served")
	}
	if !strings.Contains(logs.String(), "too many open connections") {
		t.Error("the refused connection was not logged")
	}
	status := raw(t, first, bson.D{{Key: "serverStatus", Value: 1}, {Key: "$db", Value: "admin"}})
	if get(status, "connections", "current") != int32(2) || get(status, "connections", "available") != int32(0) {
		t.Errorf("serverStatus.connections %v", status["connections"])
	}
	raw(t, first, bson.D{{Key: "configureFailPoint", Value: "failCommand"}, {Key: "mode", Value: bson.D{{Key: "times", Value: 1}}},
		{Key: "data", Value: bson.D{{Key: "failCommands", Value: bson.A{"find"}}, {Key: "blockConnection", Value: true}, {Key: "blockTimeMS", Value: 200}}},
		{Key: "$db", Value: "admin"}})
	raw(t, second, bson.D{{Key: "find", Value: "c"}, {Key: "$db", Value: "app"}})
	if strings.Contains(logs.String(), "Slow query") {
		t.Error("a 200 ms find was logged as slow under a 1 h threshold")
	}
}
