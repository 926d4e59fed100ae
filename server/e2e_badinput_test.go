package server_test

import (
	"bufio"
	"encoding/binary"
	"io"
	"testing"
	"time"

	"github.com/dumbodb/dumbodb/wire"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

func header(length, opcode int32) []byte {
	h := make([]byte, 16)
	binary.LittleEndian.PutUint32(h[0:], uint32(length))
	binary.LittleEndian.PutUint32(h[4:], 1)
	binary.LittleEndian.PutUint32(h[12:], uint32(opcode))
	return h
}

// TestMalformedMessagesCloseOnlyThatConnection sends broken messages on raw
// connections and checks that each is closed while a driver client on
// another connection keeps being served.
func TestMalformedMessagesCloseOnlyThatConnection(t *testing.T) {
	ts := startServer(t)
	good := ts.client()
	body := bsoncore.NewDocumentBuilder().AppendInt32("ping", 1).AppendString("$db", "admin").Build()
	badBSON := append([]byte(nil), body...)
	badBSON[4] = 0x7f // an unknown element type
	msgWith := func(doc []byte) []byte {
		payload := append([]byte{0, 0, 0, 0, 0}, doc...)
		return append(header(int32(16+len(payload)), 2013), payload...)
	}
	cases := map[string][]byte{
		"truncated":      header(100, 2013)[:10],
		"short body":     append(header(100, 2013), 1, 2, 3),
		"oversized":      header(60_000_000, 2013),
		"negative":       header(-5, 2013),
		"unknown opcode": append(header(21, 9999), 0, 0, 0, 0, 0),
		"invalid bson":   msgWith(badBSON),
		"bad section":    append(header(int32(16+5+len(body)), 2013), append([]byte{0, 0, 0, 0, 7}, body...)...),
		"old op_insert":  append(header(21, 2002), 0, 0, 0, 0, 0),
	}
	for name, raw := range cases {
		nc := ts.dial()
		nc.SetDeadline(time.Now().Add(10 * time.Second))
		nc.Write(raw)
		if name == "truncated" || name == "short body" {
			nc.(interface{ CloseWrite() error }).CloseWrite()
		}
		if _, err := io.ReadAll(nc); err != nil {
			t.Errorf("%s: connection not closed cleanly: %v", name, err)
		}
		if err := good.Ping(ctx, nil); err != nil {
			t.Fatalf("after %s the server stopped serving: %v", name, err)
		}
	}
}

func TestCommandErrorsKeepConnectionOpen(t *testing.T) {
	ts := startServer(t)
	nc := ts.dial()
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(nc)
	send := func(doc bsoncore.Document) bsoncore.Document {
		t.Helper()
		if err := wire.Write(nc, 1, 0, &wire.Msg{Body: doc}, wire.CompressorNoop); err != nil {
			t.Fatal(err)
		}
		_, msg, _, err := wire.Read(r)
		if err != nil {
			t.Fatal(err)
		}
		return msg.(*wire.Msg).Body
	}
	noDB := send(bsoncore.NewDocumentBuilder().AppendInt32("ping", 1).Build())
	if noDB.Lookup("ok").Double() != 0 || noDB.Lookup("code").Int32() != 40571 {
		t.Fatalf("missing $db: %v", noDB)
	}
	empty := send(bsoncore.NewDocumentBuilder().AppendString("$db", "x").Build())
	if empty.Lookup("ok").Double() != 0 {
		t.Fatalf("command without a name: %v", empty)
	}
	reply := send(bsoncore.NewDocumentBuilder().AppendInt32("ping", 1).AppendString("$db", "admin").Build())
	if reply.Lookup("ok").Double() != 1 {
		t.Fatalf("ping after errors: %v", reply)
	}
	// moreToCome: no reply, and the next command is still answered.
	w := bsoncore.NewDocumentBuilder().AppendString("insert", "c").AppendString("$db", "test").
		AppendArray("documents", bsoncore.NewArrayBuilder().AppendDocument(bsoncore.NewDocumentBuilder().AppendInt32("_id", 1).Build()).Build()).Build()
	if err := wire.Write(nc, 2, 0, &wire.Msg{Flags: wire.FlagMoreToCome, Body: w}, wire.CompressorNoop); err != nil {
		t.Fatal(err)
	}
	count := send(bsoncore.NewDocumentBuilder().AppendString("count", "c").AppendString("$db", "test").Build())
	if n, _ := count.Lookup("n").AsInt64OK(); n != 1 {
		t.Fatalf("count after unacknowledged insert: %v", count)
	}
}

func TestLegacyOpQueryHello(t *testing.T) {
	ts := startServer(t)
	nc := ts.dial()
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	q := &wire.Query{FullCollectionName: "admin.$cmd", NumberToReturn: -1,
		Query: bsoncore.NewDocumentBuilder().AppendInt32("isMaster", 1).Build()}
	if err := wire.Write(nc, 7, 0, q, wire.CompressorNoop); err != nil {
		t.Fatal(err)
	}
	hdr, msg, _, err := wire.Read(bufio.NewReader(nc))
	if err != nil {
		t.Fatal(err)
	}
	reply, ok := msg.(*wire.Reply)
	if !ok || hdr.ResponseTo != 7 || len(reply.Documents) != 1 {
		t.Fatalf("reply %T %+v", msg, hdr)
	}
	doc := reply.Documents[0]
	if !doc.Lookup("ismaster").Boolean() || doc.Lookup("maxWireVersion").Int32() != 25 {
		t.Fatalf("isMaster over OP_QUERY: %v", doc)
	}
}
