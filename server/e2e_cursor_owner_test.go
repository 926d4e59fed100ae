package server_test

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/dumbodb/dumbodb/server"
)

// A cursor belongs to the session it was opened in and to the user who
// opened it, not to a connection: mongod continues it from any
// connection in the same session (or, opened without one, without one)
// by the same user, and refuses the others with its own codes and
// messages, which these tests check word for word. They send commands on
// raw connections: a driver gives every command a session.

// rawSession is a logical session id as a client sends it (lsid).
type rawSession struct{ id []byte }

func newRawSession(t *testing.T) rawSession {
	t.Helper()
	id := make([]byte, 16)
	if _, err := rand.Read(id); err != nil {
		t.Fatal(err)
	}
	id[6], id[8] = id[6]&0x0f|0x40, id[8]&0x3f|0x80 // a version 4 UUID
	return rawSession{id: id}
}

// in is cmd sent in the session.
func (s rawSession) in(cmd bson.D) bson.D {
	return append(cmd, bson.E{Key: "lsid", Value: bson.D{{Key: "id", Value: bson.Binary{Subtype: 4, Data: s.id}}}})
}

// text is the session of user ("": nobody logged in) as mongod's
// messages spell it: the id, the uid (the SHA-256 of "user@db") in
// base64, and the transaction fields a client's session leaves empty.
func (s rawSession) text(user string) string {
	uid := sha256.Sum256([]byte(user))
	u := s.id
	return fmt.Sprintf("%x-%x-%x-%x-%x - %s -  - ", u[0:4], u[4:6], u[6:8], u[8:10], u[10:], base64.StdEncoding.EncodeToString(uid[:]))
}

// openRawCursor runs a find that must leave a cursor open and returns it.
func openRawCursor(t *testing.T, nc net.Conn, cmd bson.D) int64 {
	t.Helper()
	reply := raw(t, nc, cmd)
	id, _ := get(reply, "cursor", "id").(int64)
	if id == 0 {
		t.Fatalf("%v left no cursor: %v", cmd, reply)
	}
	return id
}

func getMoreCmd(id int64, coll, db string, extra ...bson.E) bson.D {
	return append(bson.D{{Key: "getMore", Value: id}, {Key: "collection", Value: coll}, {Key: "$db", Value: db}}, extra...)
}

// wantRawError checks a raw reply for an error's code and message.
func wantRawError(t *testing.T, reply bson.M, code int32, msg string) {
	t.Helper()
	if reply["ok"] != 0.0 || reply["code"] != code || reply["errmsg"] != msg {
		t.Fatalf("want error %d %q, got %v", code, msg, reply)
	}
}

// wantBatchOf checks a getMore that succeeded with n documents.
func wantBatchOf(t *testing.T, reply bson.M, n int) {
	t.Helper()
	if batch, ok := get(reply, "cursor", "nextBatch").(bson.A); !ok || len(batch) != n {
		t.Fatalf("want a batch of %d, got %v", n, reply)
	}
}

// TestGetMoreInAnotherSession: without access control, a getMore in
// another session than its cursor's is Location50738, one without a
// session of a cursor opened in one Location50737, and the reverse
// Location50736, for a find, an aggregate, a tailable find and a change
// stream alike; the refused getMore leaves the cursor to its session,
// on any connection.
func TestGetMoreInAnotherSession(t *testing.T) {
	ts := startServer(t)
	db := ts.client().Database("ss")
	seed(t, db.Collection("c"), 10)
	mustRun(t, db, bson.D{{Key: "create", Value: "log"}, {Key: "capped", Value: true}, {Key: "size", Value: 4096}})
	insertIDs(t, db.Collection("log"), 1, 2, 3)
	opened, other := newRawSession(t), newRawSession(t)
	nc1, nc2 := ts.dial(), ts.dial()
	for _, tc := range []struct {
		open bson.D
		next int // documents its getMore finds
	}{
		{bson.D{{Key: "find", Value: "c"}, {Key: "batchSize", Value: 1}}, 1},
		{bson.D{{Key: "aggregate", Value: "c"}, {Key: "pipeline", Value: bson.A{}}, {Key: "cursor", Value: bson.D{{Key: "batchSize", Value: 1}}}}, 1},
		{bson.D{{Key: "find", Value: "log"}, {Key: "tailable", Value: true}, {Key: "batchSize", Value: 1}}, 1},
		{bson.D{{Key: "aggregate", Value: "c"}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$changeStream", Value: bson.D{}}}}}, {Key: "cursor", Value: bson.D{}}}, 0},
	} {
		open := append(tc.open, bson.E{Key: "$db", Value: "ss"})
		coll := open[0].Value.(string)
		id := openRawCursor(t, nc1, opened.in(open))
		more := getMoreCmd(id, coll, "ss", bson.E{Key: "batchSize", Value: 1})
		wantRawError(t, raw(t, nc2, other.in(more)), 50738, fmt.Sprintf("Cannot run getMore on cursor %d, which was created in session %s, in session %s",
			id, opened.text(""), other.text("")))
		wantRawError(t, raw(t, nc2, more), 50737, fmt.Sprintf("Cannot run getMore on cursor %d, which was created in session %s, without an lsid",
			id, opened.text("")))
		wantBatchOf(t, raw(t, nc2, opened.in(more)), tc.next)

		id = openRawCursor(t, nc1, open)
		wantRawError(t, raw(t, nc2, other.in(getMoreCmd(id, coll, "ss"))), 50736, fmt.Sprintf("Cannot run getMore on cursor %d, which was not created in a session, in session %s",
			id, other.text("")))
		wantBatchOf(t, raw(t, nc2, getMoreCmd(id, coll, "ss", bson.E{Key: "batchSize", Value: 1})), tc.next)
	}

	// A standalone has sessions too.
	standalone := startServer(t, func(c *server.Config) { c.Standalone = true })
	seed(t, standalone.client().Database("ss").Collection("c"), 1)
	alone := standalone.dial()
	id := openRawCursor(t, alone, opened.in(bson.D{{Key: "find", Value: "c"}, {Key: "batchSize", Value: 0}, {Key: "$db", Value: "ss"}}))
	wantRawError(t, raw(t, alone, other.in(getMoreCmd(id, "c", "ss"))), 50738, fmt.Sprintf("Cannot run getMore on cursor %d, which was created in session %s, in session %s",
		id, opened.text(""), other.text("")))

	// Through the driver: a cursor of one session read in another.
	sa, sb := oneSession(t, db), oneSession(t, db)
	id = get(mustRunIn(t, sa, db, bson.D{{Key: "find", Value: "c"}, {Key: "batchSize", Value: 1}}), "cursor", "id").(int64)
	_, err := runIn(sb, db, bson.D{{Key: "getMore", Value: id}, {Key: "collection", Value: "c"}})
	wantCode(t, err, 50738, "Location50738")
	mustRunIn(t, sa, db, bson.D{{Key: "getMore", Value: id}, {Key: "collection", Value: "c"}})
}

// rawLogin authenticates a raw connection as user of db with SCRAM-SHA-256.
func rawLogin(t *testing.T, nc net.Conn, user, pwd, db string) {
	t.Helper()
	if reply := scramReply(t, nc, user, pwd, db); reply["ok"] != 1.0 || reply["done"] != true {
		t.Fatalf("login of %s: %v", user, reply)
	}
}

// TestCursorOwnersUnderAuth: with access control, a user continues its
// cursor from another connection of its own, in the cursor's session or
// without one as the cursor was opened; a session that differs is
// Unauthorized with mongod's message naming both sessions (another
// user's session differs by its uid); another user without sessions
// is told the cursor is not its own, and its killCursors naming the
// cursor is refused whole. The owner kills it whatever namespace and
// session its killCursors names.
func TestCursorOwnersUnderAuth(t *testing.T) {
	ts, root := authServer(t)
	seed(t, root.Database("shop").Collection("c"), 10)
	addUser(t, root, "shop", "alice", bson.A{"read"})
	addUser(t, root, "shop", "bob", bson.A{"read"})
	alice1, alice2, bob := ts.dial(), ts.dial(), ts.dial()
	rawLogin(t, alice1, "alice", "pw", "shop")
	rawLogin(t, alice2, "alice", "pw", "shop")
	rawLogin(t, bob, "bob", "pw", "shop")
	find := bson.D{{Key: "find", Value: "c"}, {Key: "batchSize", Value: 1}, {Key: "$db", Value: "shop"}}
	s, other := newRawSession(t), newRawSession(t)

	plain := openRawCursor(t, alice1, find)
	wantBatchOf(t, raw(t, alice2, getMoreCmd(plain, "c", "shop", bson.E{Key: "batchSize", Value: 1})), 1)
	inSession := openRawCursor(t, alice1, s.in(find))
	more := getMoreCmd(inSession, "c", "shop", bson.E{Key: "batchSize", Value: 1})
	wantBatchOf(t, raw(t, alice2, s.in(more)), 1)

	mismatch := "Cursor session id (%s) is not the same as the operation context's session id (%s)"
	wantRawError(t, raw(t, alice2, other.in(more)), 13, fmt.Sprintf(mismatch, s.text("alice@shop"), other.text("alice@shop")))
	wantRawError(t, raw(t, alice2, more), 13, fmt.Sprintf(mismatch, s.text("alice@shop"), "none"))
	wantRawError(t, raw(t, alice2, s.in(getMoreCmd(plain, "c", "shop"))), 13, fmt.Sprintf(mismatch, "none", s.text("alice@shop")))
	wantRawError(t, raw(t, bob, s.in(more)), 13, fmt.Sprintf(mismatch, s.text("alice@shop"), s.text("bob@shop")))
	wantRawError(t, raw(t, bob, getMoreCmd(plain, "c", "shop")), 13, fmt.Sprintf("cursor id %d was not created by the authenticated user", plain))

	kill := raw(t, bob, bson.D{{Key: "killCursors", Value: "c"}, {Key: "cursors", Value: bson.A{int64(12345), plain}}, {Key: "$db", Value: "shop"}})
	if msg, _ := kill["errmsg"].(string); kill["code"] != int32(13) || !strings.HasPrefix(msg, "not authorized on shop to execute command { killCursors: ") {
		t.Fatalf("bob's killCursors of alice's cursor: %v", kill)
	}
	wantBatchOf(t, raw(t, alice2, getMoreCmd(plain, "c", "shop", bson.E{Key: "batchSize", Value: 1})), 1)
	kill = raw(t, alice2, other.in(bson.D{{Key: "killCursors", Value: "elsewhere"}, {Key: "cursors", Value: bson.A{plain, inSession}}, {Key: "$db", Value: "shop"}}))
	if killed, _ := kill["cursorsKilled"].(bson.A); len(killed) != 2 {
		t.Fatalf("alice's killCursors of her cursors: %v", kill)
	}
}

// TestChangeStreamCursorsKilledByTheirNamespace: the cursor of a change
// stream on a database or the cluster reports the namespace
// <db>.$cmd.aggregate, and killCursors on $cmd.aggregate kills it, as
// the driver sends when it closes the stream; a stream resumed from the
// closed one's token goes on.
func TestChangeStreamCursorsKilledByTheirNamespace(t *testing.T) {
	ts := startServer(t)
	client := ts.client()
	admin, app := client.Database("admin"), client.Database("app")
	for _, tc := range []struct {
		name  string
		on    *mongo.Database // where the stream's cursor is
		watch func(...options.Lister[options.ChangeStreamOptions]) (*mongo.ChangeStream, error)
	}{
		{"database", app, func(o ...options.Lister[options.ChangeStreamOptions]) (*mongo.ChangeStream, error) {
			return app.Watch(ctx, mongo.Pipeline{}, o...)
		}},
		{"cluster", admin, func(o ...options.Lister[options.ChangeStreamOptions]) (*mongo.ChangeStream, error) {
			return client.Watch(ctx, mongo.Pipeline{}, o...)
		}},
	} {
		cs := watchUntil(t, tc.watch, app.Collection("c"), tc.name+"1")
		token := cs.ResumeToken()
		open := openCursors(t, admin)
		res := mustRun(t, tc.on, bson.D{{Key: "killCursors", Value: "$cmd.aggregate"}, {Key: "cursors", Value: bson.A{cs.ID()}}})
		if killed, _ := res["cursorsKilled"].(bson.A); len(killed) != 1 || killed[0] != cs.ID() || openCursors(t, admin) != open-1 {
			t.Fatalf("%s: killCursors on $cmd.aggregate: %v, %d cursors open of %d", tc.name, res, openCursors(t, admin), open)
		}
		cs.Close(ctx)

		resumed := watchUntil(t, tc.watch, app.Collection("c"), tc.name+"2", options.ChangeStream().SetResumeAfter(token))
		open = openCursors(t, admin)
		if err := resumed.Close(ctx); err != nil || openCursors(t, admin) != open-1 {
			t.Fatalf("%s: closing the resumed stream: %v, %d cursors open of %d", tc.name, err, openCursors(t, admin), open)
		}
	}
}

// watchUntil opens a change stream, inserts a document with _id id into
// coll and reads the stream up to its insert.
func watchUntil(t *testing.T, watch func(...options.Lister[options.ChangeStreamOptions]) (*mongo.ChangeStream, error),
	coll *mongo.Collection, id string, opts ...options.Lister[options.ChangeStreamOptions]) *mongo.ChangeStream {
	t.Helper()
	cs, err := watch(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(ctx) })
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: id}}); err != nil {
		t.Fatal(err)
	}
	for cs.Next(ctx) {
		if key, _ := cs.Current.Lookup("documentKey", "_id").StringValueOK(); key == id {
			return cs
		}
	}
	t.Fatalf("the stream ended before the insert of %s: %v", id, cs.Err())
	return nil
}
