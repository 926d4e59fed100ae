package server_test

import (
	"bufio"
	"fmt"
	"net"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/dumbodb/dumbodb/internal/testload"
	"github.com/dumbodb/dumbodb/wire"
)

// Exhaust cursors (OP_MSG exhaustAllowed on a getMore): the server
// answers the getMore and, while the cursor stays open, goes on sending
// the next batches unasked, each reply with moreToCome set and
// responding to the one before; the last reply, which closes the cursor
// or fails, has no moreToCome. The Go driver never asks for exhaust, so
// these tests speak OP_MSG themselves.

// exhaustReply is one reply of a stream.
type exhaustReply struct {
	hdr  wire.Header
	more bool
	body bson.M
}

// exhaustStream sends cmd with the exhaustAllowed flag as request 7.
func exhaustStream(t *testing.T, nc net.Conn, cmd bson.D) *bufio.Reader {
	t.Helper()
	body, err := bson.Marshal(cmd)
	if err != nil {
		t.Fatal(err)
	}
	if err := wire.Write(nc, 7, 0, &wire.Msg{Flags: wire.FlagExhaustAllowed, Body: body}, wire.CompressorNoop); err != nil {
		t.Fatal(err)
	}
	nc.SetReadDeadline(time.Now().Add(testload.Timeout(30 * time.Second)))
	return bufio.NewReader(nc)
}

// nextReply reads the next reply of a stream.
func nextReply(t *testing.T, r *bufio.Reader) exhaustReply {
	t.Helper()
	hdr, msg, _, err := wire.Read(r)
	if err != nil {
		t.Fatal(err)
	}
	m := msg.(*wire.Msg)
	var body bson.M
	if err := bson.Unmarshal(m.Body, &body); err != nil {
		t.Fatal(err)
	}
	return exhaustReply{hdr: hdr, more: m.Flags&wire.FlagMoreToCome != 0, body: body}
}

// readStream reads replies up to the one without moreToCome, checking
// that each responds to the one before (the first, to request 7).
func readStream(t *testing.T, r *bufio.Reader) []exhaustReply {
	t.Helper()
	var out []exhaustReply
	responseTo := int32(7)
	for {
		rep := nextReply(t, r)
		if rep.hdr.ResponseTo != responseTo {
			t.Fatalf("reply %d responds to %d, want %d", len(out), rep.hdr.ResponseTo, responseTo)
		}
		out = append(out, rep)
		if !rep.more {
			return out
		}
		responseTo = rep.hdr.RequestID
	}
}

// batchIDs lists the _ids of a reply's nextBatch, and its cursor id.
func batchIDs(t *testing.T, rep exhaustReply) ([]string, int64) {
	t.Helper()
	batch, ok := get(rep.body, "cursor", "nextBatch").(bson.A)
	if !ok {
		t.Fatalf("not a getMore reply: %v", rep.body)
	}
	var ids []string
	for _, d := range batch {
		ids = append(ids, fmt.Sprint(get(d, "_id")))
	}
	return ids, get(rep.body, "cursor", "id").(int64)
}

// TestExhaustGetMoreStreamsEveryBatch: one getMore with exhaustAllowed
// brings every remaining batch, in order, the last closing the cursor;
// a batch that takes exactly the rest leaves it open, so the stream ends
// with an empty batch and id 0. The connection then answers commands
// again.
func TestExhaustGetMoreStreamsEveryBatch(t *testing.T) {
	ts := startServer(t)
	seed(t, ts.client().Database("ex").Collection("c"), 10)
	nc := ts.dial()
	for _, tc := range []struct {
		batch int32
		sizes []int
	}{{3, []int{3, 3, 2}}, {4, []int{4, 4, 0}}} {
		id := openRawCursor(t, nc, bson.D{{Key: "find", Value: "c"}, {Key: "batchSize", Value: 2}, {Key: "$db", Value: "ex"}})
		replies := readStream(t, exhaustStream(t, nc, getMoreCmd(id, "c", "ex", bson.E{Key: "batchSize", Value: tc.batch})))
		if len(replies) != len(tc.sizes) {
			t.Fatalf("batchSize %d: %d replies, want %d", tc.batch, len(replies), len(tc.sizes))
		}
		var all []string
		for i, rep := range replies {
			ids, next := batchIDs(t, rep)
			last := i == len(replies)-1
			if len(ids) != tc.sizes[i] || (next == 0) != last || rep.more == last {
				t.Fatalf("batchSize %d, reply %d: %d documents, id %d, moreToCome %v", tc.batch, i, len(ids), next, rep.more)
			}
			all = append(all, ids...)
		}
		if fmt.Sprint(all) != "[2 3 4 5 6 7 8 9]" {
			t.Fatalf("batchSize %d: streamed %v", tc.batch, all)
		}
		if r := raw(t, nc, bson.D{{Key: "ping", Value: 1}, {Key: "$db", Value: "admin"}}); r["ok"] != 1.0 {
			t.Fatalf("ping after the stream: %v", r)
		}
	}
}

// TestExhaustAnsweredOnce: a getMore that fails, one that closes its
// cursor at once, and any other command sent with exhaustAllowed get one
// reply without moreToCome.
func TestExhaustAnsweredOnce(t *testing.T) {
	ts := startServer(t)
	seed(t, ts.client().Database("ex").Collection("c"), 5)
	nc := ts.dial()
	id := openRawCursor(t, nc, bson.D{{Key: "find", Value: "c"}, {Key: "batchSize", Value: 2}, {Key: "$db", Value: "ex"}})
	for name, cmd := range map[string]bson.D{
		"getMore of an unknown cursor": getMoreCmd(12345, "c", "ex"),
		"getMore to the end":           getMoreCmd(id, "c", "ex"),
		"find":                         {{Key: "find", Value: "c"}, {Key: "batchSize", Value: 2}, {Key: "$db", Value: "ex"}},
	} {
		if replies := readStream(t, exhaustStream(t, nc, cmd)); len(replies) != 1 {
			t.Fatalf("%s: %d replies", name, len(replies))
		}
	}
}

// TestExhaustTailableCursors: an awaitData cursor streams for as long as
// it lives, an empty batch after each wait of maxTimeMS and a document
// as soon as one is inserted; killing it ends the stream with an error.
// A tailable cursor that does not await data ends its stream at its
// first empty batch, staying open.
func TestExhaustTailableCursors(t *testing.T) {
	ts := startServer(t)
	db := ts.client().Database("ex")
	mustRun(t, db, bson.D{{Key: "create", Value: "log"}, {Key: "capped", Value: true}, {Key: "size", Value: 4096}})
	insertIDs(t, db.Collection("log"), 1, 2)
	tail := func(nc net.Conn, await bool) int64 {
		return openRawCursor(t, nc, bson.D{{Key: "find", Value: "log"}, {Key: "tailable", Value: true},
			{Key: "awaitData", Value: await}, {Key: "batchSize", Value: 1}, {Key: "$db", Value: "ex"}})
	}

	nc := ts.dial()
	replies := readStream(t, exhaustStream(t, nc, getMoreCmd(tail(nc, false), "log", "ex")))
	if ids, id := batchIDs(t, replies[len(replies)-1]); len(replies) != 2 || len(ids) != 0 || id == 0 {
		t.Fatalf("tailable without awaitData: %d replies, the last %v", len(replies), replies[len(replies)-1].body)
	}

	nc = ts.dial()
	id := tail(nc, true)
	r := exhaustStream(t, nc, getMoreCmd(id, "log", "ex", bson.E{Key: "maxTimeMS", Value: int64(50)}))
	responseTo := int32(7)
	next := func() exhaustReply {
		rep := nextReply(t, r)
		if rep.hdr.ResponseTo != responseTo {
			t.Fatalf("reply responds to %d, want %d", rep.hdr.ResponseTo, responseTo)
		}
		responseTo = rep.hdr.RequestID
		return rep
	}
	if ids, _ := batchIDs(t, next()); fmt.Sprint(ids) != "[2]" {
		t.Fatalf("first streamed batch %v, want [2]", ids)
	}
	if ids, open := batchIDs(t, next()); len(ids) != 0 || open == 0 {
		t.Fatalf("awaitData stream after the last document: %v, id %d", ids, open)
	}
	insertIDs(t, db.Collection("log"), 3)
	for i := 0; ; i++ {
		rep := next()
		if ids, _ := batchIDs(t, rep); !rep.more || len(ids) > 1 || i == 10000 {
			t.Fatalf("awaitData stream: %v (moreToCome %v) after %d empty batches", rep.body, rep.more, i)
		} else if len(ids) == 1 {
			break // the new document
		}
	}
	kill := raw(t, ts.dial(), bson.D{{Key: "killCursors", Value: "log"}, {Key: "cursors", Value: bson.A{id}}, {Key: "$db", Value: "ex"}})
	if killed, _ := kill["cursorsKilled"].(bson.A); len(killed) != 1 {
		t.Fatalf("killCursors of the streaming cursor: %v", kill)
	}
	for i := 0; ; i++ {
		rep := next()
		if rep.body["ok"] == 0.0 && !rep.more {
			break // the kill ended the stream
		}
		if ids, _ := batchIDs(t, rep); !rep.more || len(ids) != 0 || i == 10000 {
			t.Fatalf("stream of a killed cursor: %v (moreToCome %v)", rep.body, rep.more)
		}
	}
}

// TestExhaustStreamEndsAtShutdown: at shutdown an awaitData cursor's
// stream ends with the batch in hand, the last reply without moreToCome,
// instead of holding the server up.
func TestExhaustStreamEndsAtShutdown(t *testing.T) {
	ts := startServer(t)
	nc := ts.dial() // no driver: one left connected would wait out its timeout once the server is gone
	raw(t, nc, bson.D{{Key: "create", Value: "log"}, {Key: "capped", Value: true}, {Key: "size", Value: 4096}, {Key: "$db", Value: "ex"}})
	raw(t, nc, bson.D{{Key: "insert", Value: "log"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: 1}}}}, {Key: "$db", Value: "ex"}})
	id := openRawCursor(t, nc, bson.D{{Key: "find", Value: "log"}, {Key: "tailable", Value: true},
		{Key: "awaitData", Value: true}, {Key: "$db", Value: "ex"}})
	r := exhaustStream(t, nc, getMoreCmd(id, "log", "ex", bson.E{Key: "maxTimeMS", Value: int64(50)}))
	if first := nextReply(t, r); !first.more {
		t.Fatalf("the stream ended at once: %v", first.body)
	}
	stopped := make(chan struct{})
	go func() { ts.stop(); close(stopped) }()
	defer func() { <-stopped }()
	for i := 0; ; i++ {
		rep := nextReply(t, r)
		if rep.more && i < 10000 {
			continue
		}
		if ids, open := batchIDs(t, rep); rep.more || len(ids) != 0 || open == 0 {
			t.Fatalf("the stream's last reply at shutdown: %v (moreToCome %v)", rep.body, rep.more)
		}
		break
	}
}
