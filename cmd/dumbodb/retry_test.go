package main

import (
	"bufio"
	"fmt"
	"net"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/internal/dumboproc"
	"github.com/dumbodb/dumbodb/wire"
)

// rawCommand sends one command on its own connection, without the session
// fields a driver would add, and decodes the reply.
func rawCommand(t *testing.T, addr string, cmd bson.D) bson.M {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	body, err := bson.Marshal(cmd)
	if err != nil {
		t.Fatal(err)
	}
	if err := wire.Write(nc, 1, 0, &wire.Msg{Body: bsoncore.Document(body)}, wire.CompressorNoop); err != nil {
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
	var out bson.M
	if err := bson.Unmarshal(doc, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// rawCommandClosed sends one command and expects the server to close the
// connection instead of answering.
func rawCommandClosed(t *testing.T, addr string, cmd bson.D) {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	body, _ := bson.Marshal(cmd)
	if err := wire.Write(nc, 1, 0, &wire.Msg{Body: bsoncore.Document(body)}, wire.CompressorNoop); err != nil {
		t.Fatal(err)
	}
	if _, msg, _, err := wire.Read(bufio.NewReader(nc)); err == nil {
		t.Fatalf("the fail point did not close the connection: %v", msg)
	}
}

// TestRetryAfterKill9RunsOnce: a retryable write whose reply the client
// never saw (the onPrimaryTransactionalWrite fail point closes the
// connection after the write, then the server is killed with SIGKILL) is
// retried after the restart, and runs only once: the $inc applies once and
// the retry answers as the first try would have.
func TestRetryAfterKill9RunsOnce(t *testing.T) {
	dir := t.TempDir()
	p := dumboproc.StartT(t, dir, "--enableTestCommands")
	lsid := bson.D{{Key: "id", Value: bson.Binary{Subtype: 4, Data: []byte("0123456789abcdef")}}}
	rawCommand(t, p.Addr(), bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: 1}, {Key: "n", Value: 0}}}}, {Key: "$db", Value: "db"}})
	inc := bson.D{{Key: "update", Value: "c"}, {Key: "updates", Value: bson.A{
		bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: 1}}}, {Key: "u", Value: bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}}}}}},
		{Key: "lsid", Value: lsid}, {Key: "txnNumber", Value: int64(7)}, {Key: "$db", Value: "db"}}
	rawCommand(t, p.Addr(), bson.D{{Key: "configureFailPoint", Value: "onPrimaryTransactionalWrite"},
		{Key: "mode", Value: bson.D{{Key: "times", Value: 1}}}, {Key: "$db", Value: "admin"}})
	rawCommandClosed(t, p.Addr(), inc)
	count := bson.D{{Key: "count", Value: "c"}, {Key: "query", Value: bson.D{{Key: "n", Value: 1}}}, {Key: "$db", Value: "db"}}
	if r := rawCommand(t, p.Addr(), count); fmt.Sprint(r["n"]) != "1" {
		t.Fatalf("the write did not run before the fail point closed the connection: %v", r)
	}
	p.Kill()
	p = dumboproc.StartT(t, dir)
	if r := rawCommand(t, p.Addr(), inc); r["ok"] != 1.0 || r["n"] != int32(1) || r["nModified"] != int32(1) {
		t.Fatalf("retry after kill -9: %v", r)
	}
	if r := rawCommand(t, p.Addr(), count); fmt.Sprint(r["n"]) != "1" {
		t.Fatalf("documents with n: 1 after the retry: %v", r)
	}
}

// TestCommitRetriedAfterKill9: a commitTransaction whose reply the client
// never saw (SIGKILL right after) is retried after the restart and
// answers ok, for a transaction on one database (session a) and for one
// over two (session b); an older transaction of the session is too old,
// and one that never committed still answers NoSuchTransaction.
func TestCommitRetriedAfterKill9(t *testing.T) {
	dir := t.TempDir()
	p := dumboproc.StartT(t, dir)
	lsid := func(s string) bson.D {
		return bson.D{{Key: "id", Value: bson.Binary{Subtype: 4, Data: []byte(s + "123456789abcdef")}}}
	}
	insert := func(sess, db string, txn int64, id int, start bool) bson.D {
		cmd := bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: id}}}},
			{Key: "lsid", Value: lsid(sess)}, {Key: "txnNumber", Value: txn}, {Key: "autocommit", Value: false}}
		if start {
			cmd = append(cmd, bson.E{Key: "startTransaction", Value: true})
		}
		return append(cmd, bson.E{Key: "$db", Value: db})
	}
	commit := func(sess string, txn int64) bson.D {
		return bson.D{{Key: "commitTransaction", Value: 1}, {Key: "lsid", Value: lsid(sess)}, {Key: "txnNumber", Value: txn},
			{Key: "autocommit", Value: false}, {Key: "$db", Value: "admin"}}
	}
	mustOK := func(cmd bson.D) {
		t.Helper()
		if r := rawCommand(t, p.Addr(), cmd); r["ok"] != 1.0 {
			t.Fatalf("%v: %v", cmd[0].Key, r)
		}
	}
	mustOK(insert("a", "one", 1, 1, true))
	mustOK(commit("a", 1))
	mustOK(insert("a", "one", 2, 2, true))
	mustOK(commit("a", 2))
	mustOK(insert("b", "one", 1, 3, true))
	mustOK(insert("b", "two", 1, 3, false))
	mustOK(commit("b", 1))
	mustOK(insert("c", "one", 1, 4, true)) // never committed
	p.Kill()
	p = dumboproc.StartT(t, dir)
	for _, c := range []struct {
		sess string
		txn  int64
		want string
	}{{"a", 2, ""}, {"b", 1, ""}, {"a", 1, "TransactionTooOld"}, {"c", 1, "NoSuchTransaction"}} {
		r := rawCommand(t, p.Addr(), commit(c.sess, c.txn))
		if (c.want == "" && r["ok"] != 1.0) || (c.want != "" && r["codeName"] != c.want) {
			t.Fatalf("commit %s/%d retried after kill -9: %v, want %q\n%s", c.sess, c.txn, r, c.want, p.Output())
		}
	}
}
