package server_test

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/dumbodb/dumbodb/server"
	"github.com/dumbodb/dumbodb/wire"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// blockFinds makes every find of clients named app wait a minute inside the
// server (failCommand's blockConnection), an operation that only killOp or a
// hang-up ends early.
func blockFinds(t *testing.T, admin *mongo.Database, app string) {
	t.Helper()
	mustRun(t, admin, bson.D{{Key: "configureFailPoint", Value: "failCommand"}, {Key: "mode", Value: "alwaysOn"},
		{Key: "data", Value: bson.D{{Key: "failCommands", Value: bson.A{"find"}}, {Key: "appName", Value: app},
			{Key: "blockConnection", Value: true}, {Key: "blockTimeMS", Value: 60000}}}})
}

// waitForOp polls currentOp until an operation matching filter is listed
// (want) or none is (!want), and returns the first match.
func waitForOp(t *testing.T, admin *mongo.Database, filter bson.D, want bool) bson.D {
	t.Helper()
	for i := 0; i < 400; i++ {
		res := mustRun(t, admin, append(bson.D{{Key: "currentOp", Value: 1}}, filter...))
		ops, _ := res["inprog"].(bson.A)
		if want && len(ops) > 0 {
			return ops[0].(bson.D)
		}
		if !want && len(ops) == 0 {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("currentOp %v: want listed %v, timed out", filter, want)
	return nil
}

func testCommandsServer(t *testing.T) *testServer {
	return startServer(t, func(c *server.Config) { c.TestCommands = true })
}

// TestKillOpInterruptsAnOperation: currentOp lists a running find with its
// opid, namespace and command, and killOp ends it with Interrupted.
func TestKillOpInterruptsAnOperation(t *testing.T) {
	ts := testCommandsServer(t)
	admin := ts.client().Database("admin")
	blockFinds(t, admin, "victim")
	victim := ts.client(options.Client().SetAppName("victim"))
	done := make(chan error, 1)
	go func() {
		done <- victim.Database("shop").Collection("c").FindOne(ctx, bson.D{}).Err()
	}()
	op := waitForOp(t, admin, bson.D{{Key: "ns", Value: "shop"}, {Key: "command.find", Value: "c"}}, true)
	if get(op, "appName") != "victim" || get(op, "active") != true || get(op, "op") != "command" {
		t.Fatalf("currentOp entry: %v", op)
	}
	mustRun(t, admin, bson.D{{Key: "killOp", Value: 1}, {Key: "op", Value: get(op, "opid")}})
	wantCode(t, <-done, 11601, "Interrupted")
	waitForOp(t, admin, bson.D{{Key: "ns", Value: "shop"}}, false)
	// The connection goes on serving.
	if err := victim.Ping(ctx, nil); err != nil {
		t.Fatal(err)
	}
	_, err := run(t, admin, bson.D{{Key: "killOp", Value: 1}})
	wantCode(t, err, 40414, "")
}

// TestHangUpInterruptsAnOperation: a client that closes its connection
// while its command runs stops that command.
func TestHangUpInterruptsAnOperation(t *testing.T) {
	ts := testCommandsServer(t)
	admin := ts.client().Database("admin")
	blockFinds(t, admin, "leaver")
	nc := ts.dial()
	// The appName comes from the handshake, so say hello first.
	rawRoundTrip(t, nc, bsoncore.NewDocumentBuilder().AppendInt32("hello", 1).AppendString("$db", "admin").
		AppendDocument("client", bsoncore.NewDocumentBuilder().AppendDocument("application",
			bsoncore.NewDocumentBuilder().AppendString("name", "leaver").Build()).Build()).Build())
	find := bsoncore.NewDocumentBuilder().AppendString("find", "c").AppendString("$db", "shop").Build()
	if err := wire.Write(nc, 2, 0, &wire.Msg{Body: find}, wire.CompressorNoop); err != nil {
		t.Fatal(err)
	}
	waitForOp(t, admin, bson.D{{Key: "appName", Value: "leaver"}, {Key: "command.find", Value: "c"}}, true)
	nc.Close()
	waitForOp(t, admin, bson.D{{Key: "appName", Value: "leaver"}, {Key: "command.find", Value: "c"}}, false)
}

// rawRoundTrip sends one command on a raw connection and reads its reply.
func rawRoundTrip(t *testing.T, nc net.Conn, cmd bsoncore.Document) bsoncore.Document {
	t.Helper()
	if err := wire.Write(nc, 1, 0, &wire.Msg{Body: cmd}, wire.CompressorNoop); err != nil {
		t.Fatal(err)
	}
	_, msg, _, err := wire.Read(bufio.NewReader(nc))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := msg.(*wire.Msg).Document()
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// openCursors is the server's open cursor count.
func openCursors(t *testing.T, admin *mongo.Database) int64 {
	t.Helper()
	res := mustRun(t, admin, bson.D{{Key: "serverStatus", Value: 1}})
	n, _ := get(res, "metrics", "cursor", "open", "total").(int64)
	return n
}

// TestCursorsOutliveTheirConnection: as on mongod, a cursor is not its
// connection's: when the connection closes its cursors stay open, and a
// getMore on another connection goes on reading one (a driver that
// cleared its pool does so).
func TestCursorsOutliveTheirConnection(t *testing.T) {
	ts := startServer(t)
	c := ts.client()
	admin := c.Database("admin")
	docs := bson.A{}
	for i := 0; i < 10; i++ {
		docs = append(docs, bson.D{{Key: "_id", Value: i}})
	}
	mustRun(t, c.Database("shop"), bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: docs}})
	nc := ts.dial()
	var ids []int64
	for _, noTimeout := range []bool{false, true} {
		reply := rawRoundTrip(t, nc, bsoncore.NewDocumentBuilder().AppendString("find", "c").AppendInt32("batchSize", 1).
			AppendBoolean("noCursorTimeout", noTimeout).AppendString("$db", "shop").Build())
		id, _ := reply.Lookup("cursor", "id").Int64OK()
		if id == 0 {
			t.Fatalf("no cursor: %v", reply)
		}
		ids = append(ids, id)
	}
	nc.Close()
	other := ts.dial()
	for _, id := range ids {
		reply := rawRoundTrip(t, other, bsoncore.NewDocumentBuilder().AppendInt64("getMore", id).AppendString("collection", "c").
			AppendString("$db", "shop").Build())
		batch, ok := reply.Lookup("cursor", "nextBatch").ArrayOK()
		if vals, _ := batch.Values(); !ok || len(vals) != 9 {
			t.Fatalf("getMore of cursor %d on another connection after its own closed: %v", id, reply)
		}
	}
	if n := openCursors(t, admin); n != 0 {
		t.Errorf("%d open cursors once both were read to their end, want 0", n)
	}
}

// TestDropKillsCursors: cursors of a dropped collection or database answer
// QueryPlanKilled on their next getMore; cursors elsewhere go on.
func TestDropKillsCursors(t *testing.T) {
	c := startServer(t).client()
	docs := bson.A{}
	for i := 0; i < 10; i++ {
		docs = append(docs, bson.D{{Key: "_id", Value: i}})
	}
	for _, db := range []string{"a", "b"} {
		for _, coll := range []string{"x", "y"} {
			mustRun(t, c.Database(db), bson.D{{Key: "insert", Value: coll}, {Key: "documents", Value: docs}})
		}
	}
	open := func(db, coll string) *mongo.Cursor {
		cur, err := c.Database(db).Collection(coll).Find(ctx, bson.D{}, options.Find().SetBatchSize(2))
		if err != nil {
			t.Fatal(err)
		}
		return cur
	}
	drain := func(cur *mongo.Cursor) error {
		for cur.Next(ctx) {
		}
		return cur.Err()
	}
	ax, ay, bx := open("a", "x"), open("a", "y"), open("b", "x")
	mustRun(t, c.Database("a"), bson.D{{Key: "drop", Value: "x"}})
	wantCode(t, drain(ax), 175, "QueryPlanKilled")
	if err := drain(ay); err != nil {
		t.Fatalf("a.y after dropping a.x: %v", err)
	}
	ay = open("a", "y")
	mustRun(t, c.Database("a"), bson.D{{Key: "dropDatabase", Value: 1}})
	wantCode(t, drain(ay), 175, "QueryPlanKilled")
	if err := drain(bx); err != nil {
		t.Fatalf("b.x after dropping a: %v", err)
	}
}

// TestCursorLimitPerConnection: one connection may hold a bounded number of
// cursors; past it find fails cleanly and closing cursors makes room.
func TestCursorLimitPerConnection(t *testing.T) {
	ts := startServer(t)
	c := ts.client()
	mustRun(t, c.Database("shop"), bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "_id", Value: 2}}}}})
	nc := ts.dial()
	find := bsoncore.NewDocumentBuilder().AppendString("find", "c").AppendInt32("batchSize", 1).AppendString("$db", "shop").Build()
	var ids []int64
	for {
		reply := rawRoundTrip(t, nc, find)
		if code, ok := reply.Lookup("code").Int32OK(); ok {
			if code != 146 || len(ids) != 1000 {
				t.Fatalf("after %d cursors: %v", len(ids), reply)
			}
			break
		}
		id, _ := reply.Lookup("cursor", "id").Int64OK()
		ids = append(ids, id)
		if len(ids) > 1000 {
			t.Fatal("no limit on cursors per connection")
		}
	}
	kill := bsoncore.NewArrayBuilder().AppendInt64(ids[0]).Build()
	rawRoundTrip(t, nc, bsoncore.NewDocumentBuilder().AppendString("killCursors", "c").AppendArray("cursors", kill).AppendString("$db", "shop").Build())
	if reply := rawRoundTrip(t, nc, find); reply.Lookup("code").Type != 0 {
		t.Fatalf("after killing one cursor: %v", reply)
	}
}

// TestStalledMessageClosesTheConnection: a connection that sends part of a
// message and then nothing is closed after the stall timeout, while one
// idle between messages stays open.
func TestStalledMessageClosesTheConnection(t *testing.T) {
	ts := startServer(t, func(c *server.Config) { c.MessageStall = 300 * time.Millisecond })
	idle := ts.dial()
	stalled := ts.dial()
	stalled.Write(header(1000, 2013)[:7])
	stalled.SetReadDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.ReadAll(stalled); err != nil {
		t.Fatalf("stalled connection not closed by the server: %v", err)
	}
	reply := rawRoundTrip(t, idle, bsoncore.NewDocumentBuilder().AppendInt32("ping", 1).AppendString("$db", "admin").Build())
	if ok, _ := reply.Lookup("ok").AsFloat64OK(); ok != 1 {
		t.Fatalf("idle connection: %v", reply)
	}
}

// TestInFlightLimitDropsTheGreedyConnection: connections sending large
// messages share the in-flight budget; the one that would pass it is
// closed, ordinary requests on others go on.
func TestInFlightLimitDropsTheGreedyConnection(t *testing.T) {
	// 8 MiB: a message that has grown to 4 MiB holds 7 (1 + 2 + 4 MiB, the
	// arrays it grew through) less its free 64 KiB, and a second cannot.
	ts := startServer(t, func(c *server.Config) { c.InFlightBytes = 8 << 20 })
	good := ts.client()
	const claimed = 40 << 20
	var greedy []net.Conn
	closed := -1
	for i := 0; i < 4 && closed < 0; i++ {
		nc := ts.dial()
		greedy = append(greedy, nc)
		nc.Write(header(claimed, 2013))
		// Send 3 MiB of the body: enough for the buffer to grow to 4 MiB.
		chunk := make([]byte, 3<<20)
		nc.SetWriteDeadline(time.Now().Add(20 * time.Second))
		if _, err := nc.Write(chunk); err != nil {
			closed = i
			break
		}
		nc.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
		var one [1]byte
		if _, err := nc.Read(one[:]); !errors.Is(err, os.ErrDeadlineExceeded) {
			closed = i
		}
	}
	if closed < 1 {
		t.Fatalf("the connection closed for the budget is %d, want a later one than the first", closed)
	}
	if err := good.Ping(ctx, nil); err != nil {
		t.Fatalf("an ordinary client after the budget ran out: %v", err)
	}
	for _, nc := range greedy {
		nc.Close()
	}
}

// TestMaxTimeMSBoundsEveryCommand: every command honours maxTimeMS
// (MaxTimeMSExpired), and maxTimeMS is parsed as mongod parses it.
func TestMaxTimeMSBoundsEveryCommand(t *testing.T) {
	ts := testCommandsServer(t)
	admin := ts.client().Database("admin")
	cmds := map[string]bson.D{
		"insert":          {{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{}}}},
		"update":          {{Key: "update", Value: "c"}, {Key: "updates", Value: bson.A{bson.D{{Key: "q", Value: bson.D{}}, {Key: "u", Value: bson.D{{Key: "$set", Value: bson.D{{Key: "a", Value: 1}}}}}}}}},
		"delete":          {{Key: "delete", Value: "c"}, {Key: "deletes", Value: bson.A{bson.D{{Key: "q", Value: bson.D{}}, {Key: "limit", Value: 0}}}}},
		"findAndModify":   {{Key: "findAndModify", Value: "c"}, {Key: "query", Value: bson.D{}}, {Key: "remove", Value: true}},
		"count":           {{Key: "count", Value: "c"}},
		"distinct":        {{Key: "distinct", Value: "c"}, {Key: "key", Value: "a"}},
		"aggregate":       {{Key: "aggregate", Value: "c"}, {Key: "pipeline", Value: bson.A{}}, {Key: "cursor", Value: bson.D{}}},
		"find":            {{Key: "find", Value: "c"}},
		"createIndexes":   {{Key: "createIndexes", Value: "c"}, {Key: "indexes", Value: bson.A{bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: 1}}}, {Key: "name", Value: "a_1"}}}}},
		"listCollections": {{Key: "listCollections", Value: 1}},
		"dumboCommit":     {{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "m"}},
	}
	names := bson.A{}
	for name := range cmds {
		names = append(names, name)
	}
	mustRun(t, admin, bson.D{{Key: "configureFailPoint", Value: "failCommand"}, {Key: "mode", Value: "alwaysOn"},
		{Key: "data", Value: bson.D{{Key: "failCommands", Value: names}, {Key: "appName", Value: "slow"},
			{Key: "blockConnection", Value: true}, {Key: "blockTimeMS", Value: 60000}}}})
	slow := ts.client(options.Client().SetAppName("slow").SetRetryWrites(false).SetRetryReads(false)).Database("shop")
	for name, cmd := range cmds {
		_, err := run(t, slow, append(cmd, bson.E{Key: "maxTimeMS", Value: 50}))
		var ce mongo.CommandError
		if !errors.As(err, &ce) || ce.Code != 50 {
			t.Errorf("%s with maxTimeMS 50: %v, want MaxTimeMSExpired", name, err)
		}
	}
	shop := ts.client().Database("shop")
	for _, bad := range []any{-1, 1.5, int64(1) << 31} {
		_, err := run(t, shop, bson.D{{Key: "find", Value: "c"}, {Key: "maxTimeMS", Value: bad}})
		wantCode(t, err, 2, "BadValue")
	}
	_, err := run(t, shop, bson.D{{Key: "find", Value: "c"}, {Key: "maxTimeMS", Value: "x"}})
	wantCode(t, err, 2, "BadValue")
	_, err = run(t, shop, bson.D{{Key: "aggregate", Value: "c"}, {Key: "pipeline", Value: bson.A{}}, {Key: "cursor", Value: bson.D{}}, {Key: "maxTimeMS", Value: "x"}})
	wantCode(t, err, 14, "TypeMismatch")
	mustRun(t, shop, bson.D{{Key: "find", Value: "c"}, {Key: "maxTimeMS", Value: 1000.0}})
}

// TestAggregateMaxTimeMS: joins that would run for seconds stop at their
// maxTimeMS with MaxTimeMSExpired, as mongod's do: a $lookup running its
// sub-pipeline over the whole foreign collection for every document, and
// a $graphLookup walking a long chain for every document.
func TestAggregateMaxTimeMS(t *testing.T) {
	ts := startServer(t)
	// No client-side timeout: the driver would append a maxTimeMS of its
	// own to the command, after ours.
	db := ts.client(options.Client().SetTimeout(0)).Database("interrupt")
	seed := func(coll string, n int, mk func(i int) bson.D) {
		docs := make([]any, n)
		for i := range docs {
			docs[i] = mk(i)
		}
		if _, err := db.Collection(coll).InsertMany(ctx, docs); err != nil {
			t.Fatal(err)
		}
	}
	seed("local", 1500, func(i int) bson.D { return bson.D{{Key: "_id", Value: i}, {Key: "k", Value: i}} })
	seed("foreign", 1500, func(i int) bson.D { return bson.D{{Key: "_id", Value: i}, {Key: "k", Value: i}} })
	seed("chain", 20000, func(i int) bson.D { return bson.D{{Key: "_id", Value: i}, {Key: "next", Value: i + 1}} })
	for name, stage := range map[string]bson.D{
		"$lookup": {{Key: "$lookup", Value: bson.D{{Key: "from", Value: "foreign"}, {Key: "let", Value: bson.D{{Key: "k", Value: "$k"}}},
			{Key: "pipeline", Value: mongo.Pipeline{{{Key: "$match", Value: bson.D{{Key: "$expr",
				Value: bson.D{{Key: "$eq", Value: bson.A{"$k", "$$k"}}}}}}}}}, {Key: "as", Value: "m"}}}},
		"$graphLookup": {{Key: "$graphLookup", Value: bson.D{{Key: "from", Value: "chain"}, {Key: "startWith", Value: 0},
			{Key: "connectFromField", Value: "next"}, {Key: "connectToField", Value: "_id"}, {Key: "as", Value: "path"}}}},
	} {
		t.Run(name, func(t *testing.T) {
			// $count makes the whole pipeline run for the first batch.
			_, err := run(t, db, bson.D{{Key: "aggregate", Value: "local"}, {Key: "pipeline", Value: bson.A{stage, bson.D{{Key: "$count", Value: "n"}}}},
				{Key: "cursor", Value: bson.D{}}, {Key: "maxTimeMS", Value: 50}})
			wantCode(t, err, 50, "MaxTimeMSExpired")
		})
	}
}
