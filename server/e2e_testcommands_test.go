package server_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dumbodb/dumbodb/server"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// startTestCommands starts a server with the test commands on, and a
// client that gives commands no maxTimeMS of its own (a client timeout
// would give every command one).
func startTestCommands(t *testing.T, extra ...*options.ClientOptions) (*mongo.Database, *mongo.Database) {
	t.Helper()
	opts := append([]*options.ClientOptions{options.Client().SetTimeout(0)}, extra...)
	c := startServer(t, func(c *server.Config) { c.TestCommands = true }).client(opts...)
	return c.Database("admin"), c.Database("tc")
}

// shortHeartbeat is for tests that fail commands with shutdown errors:
// the driver then marks the server unknown and waits for its monitor's
// next hello, which the server holds up to the heartbeat interval, as
// mongod does. Not for tests that count timed commands: the monitor's
// round-trip hellos carry a maxTimeMS.
func shortHeartbeat() *options.ClientOptions {
	return options.Client().SetHeartbeatInterval(500 * time.Millisecond)
}

// setFailPoint configures a fail point; off again when the test ends.
func setFailPoint(t *testing.T, admin *mongo.Database, name string, mode any, data bson.M) {
	t.Helper()
	cmd := bson.D{{Key: "configureFailPoint", Value: name}, {Key: "mode", Value: mode}}
	if data != nil {
		cmd = append(cmd, bson.E{Key: "data", Value: data})
	}
	mustRun(t, admin, cmd)
	t.Cleanup(func() {
		admin.RunCommand(ctx, bson.D{{Key: "configureFailPoint", Value: name}, {Key: "mode", Value: "off"}})
	})
}

// tcCursor is the id of the cursor a find or aggregate reply opened.
func tcCursor(t *testing.T, reply bson.M) int64 {
	t.Helper()
	id, ok := get(reply, "cursor", "id").(int64)
	if !ok || id == 0 {
		t.Fatalf("no open cursor: %v", reply)
	}
	return id
}

func tcGetMore(id int64) bson.D {
	return bson.D{{Key: "getMore", Value: id}, {Key: "collection", Value: "c"}}
}

// TestMaxTimeAlwaysTimeOut: with maxTimeAlwaysTimeOut on, every command
// with a positive maxTimeMS fails with MaxTimeMSExpired, and so does a
// getMore of a cursor whose command had one (which kills the cursor);
// commands without a time limit run, as on mongod.
func TestMaxTimeAlwaysTimeOut(t *testing.T) {
	admin, db := startTestCommands(t)
	sc := oneSession(t, db)
	mustRun(t, db, bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.M{"_id": 1}, bson.M{"_id": 2}, bson.M{"_id": 3}}}})
	timed := tcCursor(t, mustRunIn(t, sc, db, bson.D{{Key: "find", Value: "c"}, {Key: "batchSize", Value: 1}, {Key: "maxTimeMS", Value: 600000}}))
	untimed := tcCursor(t, mustRunIn(t, sc, db, bson.D{{Key: "find", Value: "c"}, {Key: "batchSize", Value: 1}}))
	setFailPoint(t, admin, "maxTimeAlwaysTimeOut", "alwaysOn", nil)

	for _, cmd := range []bson.D{
		{{Key: "find", Value: "c"}, {Key: "maxTimeMS", Value: 600000}},
		{{Key: "aggregate", Value: "c"}, {Key: "pipeline", Value: bson.A{}}, {Key: "cursor", Value: bson.M{}}, {Key: "maxTimeMS", Value: 1}},
		{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.M{"_id": 4}}}, {Key: "maxTimeMS", Value: 600000}},
		{{Key: "ping", Value: 1}, {Key: "maxTimeMS", Value: 600000}},
	} {
		_, err := run(t, db, cmd)
		wantCode(t, err, 50, "MaxTimeMSExpired")
		if !strings.Contains(err.Error(), "operation exceeded time limit") {
			t.Errorf("%s: %v", cmd[0].Key, err)
		}
	}
	if n, err := db.Collection("c").CountDocuments(ctx, bson.M{"_id": 4}); err != nil || n != 0 {
		t.Fatalf("the timed-out insert wrote: %d %v", n, err)
	}
	mustRun(t, db, bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.M{"_id": 1}}}) // no time limit: it runs

	_, err := runIn(sc, db, tcGetMore(timed))
	wantCode(t, err, 50, "MaxTimeMSExpired")
	_, err = runIn(sc, db, tcGetMore(timed))
	wantCode(t, err, 43, "CursorNotFound")
	mustRunIn(t, sc, db, tcGetMore(untimed))
}

// TestMaxTimeAlwaysTimeOutModes: {times: n} fires on the next n commands
// that have a time limit and {skip: n} on every one after the next n;
// commands without one do not count. A getMore's maxTimeMS on an
// awaitData cursor is how long it waits, not a time limit. Every command
// goes over one raw connection: a driver's monitors send hellos with a
// maxTimeMS of their own, which count as mongod counts them.
func TestMaxTimeAlwaysTimeOutModes(t *testing.T) {
	ts := startServer(t, func(c *server.Config) { c.TestCommands = true })
	nc := ts.dial()
	run := func(cmd bson.D) bson.M { return raw(t, nc, append(cmd, bson.E{Key: "$db", Value: "tc"})) }
	failPoint := func(mode any) {
		reply := raw(t, nc, bson.D{{Key: "configureFailPoint", Value: "maxTimeAlwaysTimeOut"}, {Key: "mode", Value: mode}, {Key: "$db", Value: "admin"}})
		if reply["ok"] != 1.0 {
			t.Fatalf("configureFailPoint: %v", reply)
		}
	}
	mustOK := func(reply bson.M) bson.M {
		t.Helper()
		if reply["ok"] != 1.0 {
			t.Fatalf("%v", reply)
		}
		return reply
	}
	timedFind := bson.D{{Key: "find", Value: "c"}, {Key: "maxTimeMS", Value: 600000}}
	failPoint(bson.M{"times": 1})
	mustOK(run(bson.D{{Key: "find", Value: "c"}}))
	wantRawCode(t, run(timedFind), 50)
	mustOK(run(timedFind))

	failPoint(bson.M{"skip": 1})
	mustOK(run(timedFind))
	for range 2 {
		wantRawCode(t, run(timedFind), 50)
	}

	mustOK(run(bson.D{{Key: "create", Value: "capped"}, {Key: "capped", Value: true}, {Key: "size", Value: 4096}}))
	mustOK(run(bson.D{{Key: "insert", Value: "capped"}, {Key: "documents", Value: bson.A{bson.M{"_id": 1}}}}))
	id := tcCursor(t, mustOK(run(bson.D{{Key: "find", Value: "capped"}, {Key: "tailable", Value: true}, {Key: "awaitData", Value: true}})))
	failPoint("alwaysOn")
	mustOK(run(bson.D{{Key: "getMore", Value: id}, {Key: "collection", Value: "capped"}, {Key: "maxTimeMS", Value: 10}}))

	failPoint("off")
	mustOK(run(timedFind))
}

// labelsOf are the error labels of a command error (nil: none).
func labelsOf(err error) []string {
	var ce mongo.CommandError
	if errors.As(err, &ce) {
		return ce.Labels
	}
	return nil
}

// TestFailCommandErrorLabels: an error a failCommand fail point makes
// carries the labels mongod would give a real error of that code in that
// command (TransientTransactionError in a transaction,
// RetryableWriteError in a retryable write, commitTransaction and
// abortTransaction, the change-stream labels), unless the fail point
// names errorLabels, which are then the only ones.
func TestFailCommandErrorLabels(t *testing.T) {
	admin, db := startTestCommands(t, shortHeartbeat())
	sc := oneSession(t, db)
	txn := int64(0)
	insert := func(fields ...bson.E) bson.D {
		txn++
		cmd := bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.M{}}}, {Key: "txnNumber", Value: txn}}
		return append(cmd, fields...)
	}
	retryable := func() bson.D { return insert() }
	inTxn := func() bson.D {
		return insert(bson.E{Key: "autocommit", Value: false}, bson.E{Key: "startTransaction", Value: true})
	}
	commit := func() bson.D {
		mustRunIn(t, sc, db, inTxn())
		return bson.D{{Key: "commitTransaction", Value: 1}, {Key: "txnNumber", Value: txn}, {Key: "autocommit", Value: false}}
	}
	plain := func() bson.D { return bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.M{}}}} }
	for _, c := range []struct {
		name   string
		failed string
		data   bson.M
		cmd    func() bson.D
		want   []string
	}{
		{"retryable, retriable code", "insert", bson.M{"errorCode": 91}, retryable, []string{"RetryableWriteError"}},
		{"retryable, other code", "insert", bson.M{"errorCode": 11000}, retryable, nil},
		{"retryable, labels named none", "insert", bson.M{"errorCode": 91, "errorLabels": bson.A{}}, retryable, nil},
		{"retryable, labels named", "insert", bson.M{"errorCode": 91, "errorLabels": bson.A{"Custom"}}, retryable, []string{"Custom"}},
		{"no session fields", "insert", bson.M{"errorCode": 91}, plain, nil},
		{"transaction, WriteConflict", "insert", bson.M{"errorCode": 112}, inTxn, []string{"TransientTransactionError"}},
		{"transaction, retriable code", "insert", bson.M{"errorCode": 10107}, inTxn, []string{"TransientTransactionError"}},
		{"transaction, LockTimeout", "insert", bson.M{"errorCode": 24}, inTxn, []string{"TransientTransactionError"}},
		{"transaction, SnapshotUnavailable", "insert", bson.M{"errorCode": 246}, inTxn, []string{"TransientTransactionError"}},
		{"transaction, other code", "insert", bson.M{"errorCode": 2}, inTxn, nil},
		{"commit, NoSuchTransaction", "commitTransaction", bson.M{"errorCode": 251}, commit, []string{"TransientTransactionError"}},
		{"commit, retriable code", "commitTransaction", bson.M{"errorCode": 91}, commit, []string{"RetryableWriteError"}},
		{"commit, WriteConflict", "commitTransaction", bson.M{"errorCode": 112}, commit, []string{"TransientTransactionError"}},
		{"find, ChangeStreamFatalError", "find", bson.M{"errorCode": 280}, func() bson.D { return bson.D{{Key: "find", Value: "c"}} },
			[]string{"NonResumableChangeStreamError"}},
		{"opening a change stream, HostUnreachable", "aggregate", bson.M{"errorCode": 6}, func() bson.D {
			return bson.D{{Key: "aggregate", Value: "c"}, {Key: "pipeline", Value: bson.A{bson.M{"$changeStream": bson.M{}}}}, {Key: "cursor", Value: bson.M{}}}
		}, []string{"ResumableChangeStreamError"}},
	} {
		cmd := c.cmd()
		setFailPoint(t, admin, "failCommand", bson.M{"times": 1}, merged(bson.M{"failCommands": bson.A{c.failed}}, c.data))
		target := db
		if c.failed == "commitTransaction" {
			target = admin
		}
		_, err := runIn(sc, target, cmd)
		if err == nil || !slices.Equal(labelsOf(err), c.want) {
			t.Errorf("%s: %v, labels %v, want %v", c.name, err, labelsOf(err), c.want)
		}
	}
	// A real error is labelled by the same rules.
	_, err := runIn(sc, admin, bson.D{{Key: "commitTransaction", Value: 1}, {Key: "txnNumber", Value: txn + 100}, {Key: "autocommit", Value: false}})
	wantCode(t, err, 251, "NoSuchTransaction")
	if !slices.Equal(labelsOf(err), []string{"TransientTransactionError"}) {
		t.Errorf("a commit of no transaction: labels %v", labelsOf(err))
	}
}

// TestFailCommandBeforeTheTransaction: failCommand fails a statement
// before it takes its session, as on mongod: a failed first statement
// leaves no transaction (its commit finds none, the session's next
// transaction starts cleanly), and a failed later one leaves the
// transaction as it was, to commit. The client goes on at once: the
// not-primary error carries the topology version, as mongod's do.
func TestFailCommandBeforeTheTransaction(t *testing.T) {
	admin, db := startTestCommands(t)
	sc := oneSession(t, db)
	insert := func(txn int64, first bool) bson.D {
		cmd := bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.M{}}}, {Key: "txnNumber", Value: txn},
			{Key: "autocommit", Value: false}}
		if first {
			cmd = append(cmd, bson.E{Key: "startTransaction", Value: true})
		}
		return cmd
	}
	commit := func(txn int64) error {
		_, err := runIn(sc, admin, bson.D{{Key: "commitTransaction", Value: 1}, {Key: "txnNumber", Value: txn}, {Key: "autocommit", Value: false}})
		return err
	}
	failInsert := func() {
		setFailPoint(t, admin, "failCommand", bson.M{"times": 1}, bson.M{"failCommands": bson.A{"insert"}, "errorCode": 10107})
	}
	failInsert()
	_, err := runIn(sc, db, insert(1, true))
	wantCode(t, err, 10107, "NotWritablePrimary")
	var ce mongo.CommandError
	if !errors.As(err, &ce) || ce.Raw.Lookup("topologyVersion", "processId").Type != bson.TypeObjectID {
		t.Errorf("a not-primary error without the topologyVersion: %v", err)
	}
	wantCode(t, commit(1), 251, "NoSuchTransaction")
	mustRunIn(t, sc, db, insert(2, true))
	failInsert()
	_, err = runIn(sc, db, insert(2, false))
	wantCode(t, err, 10107, "NotWritablePrimary")
	if err := commit(2); err != nil {
		t.Fatalf("the transaction after its failed statement: %v", err)
	}
	if n, _ := db.Collection("c").CountDocuments(ctx, bson.M{}); n != 1 {
		t.Errorf("%d documents, want the transaction's 1", n)
	}
}

// TestWriteConcernErrorLabels: a write concern error a failCommand fail
// point adds to a reply is labelled RetryableWriteError when its code is
// retriable and the command a retryable write or a commit, as mongod
// labels a real one; the fail point's errorLabels replace that. The
// write is done.
func TestWriteConcernErrorLabels(t *testing.T) {
	admin, db := startTestCommands(t, shortHeartbeat())
	sc := oneSession(t, db)
	wce := bson.M{"code": 91, "errmsg": "Replication is being shut down"}
	for _, c := range []struct {
		name string
		cmd  bson.D
		data bson.M
		want []string
	}{
		{"retryable write", bson.D{{Key: "txnNumber", Value: int64(1)}}, nil, []string{"RetryableWriteError"}},
		{"plain write", nil, nil, nil},
		{"labels named", bson.D{{Key: "txnNumber", Value: int64(2)}}, bson.M{"errorLabels": bson.A{"Custom"}}, []string{"Custom"}},
	} {
		setFailPoint(t, admin, "failCommand", bson.M{"times": 1}, merged(bson.M{"failCommands": bson.A{"insert"}, "writeConcernError": wce}, c.data))
		cmd := append(bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.M{}}}}, c.cmd...)
		wantWriteConcernError(t, c.name, db.RunCommand(sc, cmd).Err(), c.want)
	}
	mustRunIn(t, sc, db, bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.M{}}},
		{Key: "txnNumber", Value: int64(3)}, {Key: "autocommit", Value: false}, {Key: "startTransaction", Value: true}})
	setFailPoint(t, admin, "failCommand", bson.M{"times": 1}, bson.M{"failCommands": bson.A{"commitTransaction"}, "writeConcernError": wce})
	err := admin.RunCommand(sc, bson.D{{Key: "commitTransaction", Value: 1}, {Key: "txnNumber", Value: int64(3)}, {Key: "autocommit", Value: false}}).Err()
	wantWriteConcernError(t, "commit", err, []string{"RetryableWriteError"})
	if n, _ := db.Collection("c").CountDocuments(ctx, bson.M{}); n != 4 {
		t.Errorf("%d documents, want the 4 written despite their write concern errors", n)
	}
}

// wantWriteConcernError asserts a reply's write concern error of code 91
// and its labels.
func wantWriteConcernError(t *testing.T, name string, err error, labels []string) {
	t.Helper()
	var we mongo.WriteException
	if !errors.As(err, &we) || we.WriteConcernError == nil || we.WriteConcernError.Code != 91 || !slices.Equal(we.Labels, labels) {
		t.Errorf("%s: %v (labels %v), want a write concern error labelled %v", name, err, we.Labels, labels)
	}
}

// merged is a with b's fields added.
func merged(a, b bson.M) bson.M {
	out := bson.M{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// TestFailedEmptyPipelineLabelled: an aggregate with an empty pipeline
// that fails with a code change streams resume on is answered with the
// error, its labels decided without a first stage to look at.
func TestFailedEmptyPipelineLabelled(t *testing.T) {
	admin, db := startTestCommands(t)
	setFailPoint(t, admin, "failCommand", bson.M{"times": 1}, bson.M{"failCommands": bson.A{"aggregate"}, "errorCode": 7})
	err := db.RunCommand(ctx, bson.D{{Key: "aggregate", Value: "c"}, {Key: "pipeline", Value: bson.A{}}, {Key: "cursor", Value: bson.D{}}}).Err()
	var ce mongo.CommandError
	if !errors.As(err, &ce) || ce.Code != 7 {
		t.Fatalf("aggregate under failCommand: %v, want code 7", err)
	}
}
