package bench

import (
	"encoding/binary"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// TestFrameInsert frames a two-document insert, patches the _ids and
// reads the message back section by section as a server would.
func TestFrameInsert(t *testing.T) {
	doc, idAt := rawDoc(padFor(size100B.bytes))
	if len(doc) != size100B.bytes {
		t.Fatalf("raw document is %d bytes, want %d", len(doc), size100B.bytes)
	}
	body := command("db", func(d []byte) []byte { return bsoncore.AppendStringElement(d, "insert", "c") })
	msg, at := frame(body, "documents", [][]byte{doc, doc})
	for i := range at {
		setInt64(msg, at[i]+idAt, int64(40+i))
	}
	le := binary.LittleEndian
	if n := le.Uint32(msg[0:]); int(n) != len(msg) {
		t.Errorf("messageLength %d, message is %d bytes", n, len(msg))
	}
	if op := le.Uint32(msg[12:]); op != opMsg {
		t.Errorf("opcode %d, want %d", op, opMsg)
	}
	if msg[bodyAt-1] != kindBody {
		t.Fatalf("first section kind %d, want a body", msg[bodyAt-1])
	}
	gotBody, rest, ok := bsoncore.ReadDocument(msg[bodyAt:])
	if !ok || gotBody.Lookup("insert").StringValue() != "c" || gotBody.Lookup("$db").StringValue() != "db" {
		t.Fatalf("body %v (ok %v), want {insert: c, $db: db}", gotBody, ok)
	}
	if rest[0] != kindSeq {
		t.Fatalf("second section kind %d, want a document sequence", rest[0])
	}
	size := int(le.Uint32(rest[1:]))
	if size != len(rest)-1 {
		t.Errorf("sequence size %d, want the %d bytes to the message's end", size, len(rest)-1)
	}
	seq := rest[5:]
	if id, _, _ := strings.Cut(string(seq), "\x00"); id != "documents" {
		t.Errorf("sequence identifier %q, want documents", id)
	}
	seq = seq[len("documents")+1:]
	for i := range 2 {
		d, more, ok := bsoncore.ReadDocument(seq)
		if !ok || d.Validate() != nil {
			t.Fatalf("document %d of the sequence is not valid BSON", i)
		}
		if id := d.Lookup("_id").Int64(); id != int64(40+i) {
			t.Errorf("document %d has _id %d, want %d", i, id, 40+i)
		}
		seq = more
	}
	if len(seq) != 0 {
		t.Errorf("%d bytes after the sequence's documents", len(seq))
	}
}

// reply is the payload (after the header) of an OP_MSG reply with body.
func reply(flags uint32, body []byte) []byte {
	p := binary.LittleEndian.AppendUint32(nil, flags)
	p = append(append(p, kindBody), body...)
	if flags&checksumBit != 0 {
		p = append(p, 1, 2, 3, 4)
	}
	return p
}

func doc(add func([]byte) []byte) []byte {
	i, d := bsoncore.AppendDocumentStart(nil)
	d, _ = bsoncore.AppendDocumentEnd(add(d), i)
	return d
}

func TestReplyBody(t *testing.T) {
	written := doc(func(d []byte) []byte {
		return bsoncore.AppendDoubleElement(bsoncore.AppendInt32Element(d, "n", 3), "ok", 1)
	})
	for _, flags := range []uint32{0, checksumBit} {
		body, err := replyBody(reply(flags, written))
		if err != nil {
			t.Fatalf("flags %d: %v", flags, err)
		}
		if err := checkOK(body); err != nil {
			t.Errorf("flags %d: checkOK: %v", flags, err)
		}
		if err := checkWritten(body, 3); err != nil {
			t.Errorf("flags %d: checkWritten(3): %v", flags, err)
		}
		if err := checkWritten(body, 4); err == nil {
			t.Errorf("flags %d: checkWritten(4) accepted n: 3", flags)
		}
	}
	seqFirst := append(binary.LittleEndian.AppendUint32(nil, 0), kindSeq)
	for name, p := range map[string][]byte{"sequence first": seqFirst, "truncated body": reply(0, written)[:10]} {
		if _, err := replyBody(p); err == nil {
			t.Errorf("%s: replyBody accepted it", name)
		}
	}
}

func TestCheckOKCarriesTheServersError(t *testing.T) {
	failed := doc(func(d []byte) []byte {
		d = bsoncore.AppendDoubleElement(d, "ok", 0)
		d = bsoncore.AppendStringElement(d, "errmsg", "no such command: 'bogus'")
		return bsoncore.AppendInt32Element(d, "code", 59)
	})
	err := checkOK(failed)
	if _, unsupported := err.(errUnsupported); !unsupported || err.Error() != "(59) no such command: 'bogus'" {
		t.Errorf("checkOK = %#v, want errUnsupported (59) no such command", err)
	}
	writeErr := doc(func(d []byte) []byte {
		d = bsoncore.AppendInt32Element(d, "n", 0)
		a, d := bsoncore.AppendArrayElementStart(d, "writeErrors")
		d, _ = bsoncore.AppendArrayEnd(d, a)
		return bsoncore.AppendDoubleElement(d, "ok", 1)
	})
	if err := checkWritten(writeErr, 0); err == nil || !strings.Contains(err.Error(), "write errors") {
		t.Errorf("checkWritten with writeErrors = %v, want an error naming them", err)
	}
}

func TestRawAddr(t *testing.T) {
	if addr, err := rawAddr("mongodb://127.0.0.1:27017/?directConnection=true"); err != nil || addr != "127.0.0.1:27017" {
		t.Errorf("rawAddr = %q, %v; want 127.0.0.1:27017", addr, err)
	}
	for _, url := range []string{"mongodb://a:1,b:2/", "mongodb://u:p@h:1/", "mongodb://h:1/?tls=true", "mongodb://h:1/?compressors=zstd"} {
		if _, err := rawAddr(url); err == nil {
			t.Errorf("rawAddr(%s) accepted", url)
		}
	}
}
