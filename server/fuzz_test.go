package server_test

import (
	"bufio"
	"hash/fnv"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/dumbodb/dumbodb/internal/fuzzbson"
	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/wire"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// The command fuzz targets send arbitrary command documents of one family
// to a real server over a raw connection and check that every reply is
// in MongoDB's shape, that no error is InternalError (a recovered panic
// or an unmapped error: a server bug either way) and that the server
// still answers ping. The server lives as long as the fuzz worker, so
// commands see what earlier ones left; a failure that does not reproduce
// alone depends on that history.

var (
	d = fuzzbson.D
	a = func(vs ...any) bson.A { return vs }
)

const fuzzDB = "test"

// rawConn is a connection that sends wire messages as they are, for what
// the driver would not send.
type rawConn struct {
	nc    net.Conn
	r     *bufio.Reader
	reqID int32
}

// roundTrip sends msg and returns the reply body.
func (c *rawConn) roundTrip(t testing.TB, msg *wire.Msg) bsoncore.Document {
	t.Helper()
	c.reqID++
	c.nc.SetDeadline(time.Now().Add(30 * time.Second))
	if err := wire.Write(c.nc, c.reqID, 0, msg, wire.CompressorNoop); err != nil {
		t.Fatalf("sending %v: %v", bson.Raw(msg.Body), err)
	}
	_, reply, _, err := wire.Read(c.r)
	if err != nil {
		t.Fatalf("no reply to %v: %v", bson.Raw(msg.Body), err)
	}
	m, ok := reply.(*wire.Msg)
	if !ok {
		t.Fatalf("reply to %v is a %T", bson.Raw(msg.Body), reply)
	}
	return m.Body
}

func dialRaw(ts *testServer) *rawConn {
	nc := ts.dial()
	return &rawConn{nc: nc, r: bufio.NewReader(nc)}
}

// mustRun runs a setup command that must succeed.
func (c *rawConn) mustRun(t testing.TB, cmd bson.D) {
	t.Helper()
	if reply := c.roundTrip(t, &wire.Msg{Body: commandFor(fuzzDB, cmd)}); !replyOK(reply) {
		t.Fatalf("%v: %v", cmd, bson.Raw(reply))
	}
}

// commandFor is cmd run on database db.
func commandFor(db string, cmd bson.D) bsoncore.Document {
	b, err := bson.Marshal(append(cmd, bson.E{Key: "$db", Value: db}))
	if err != nil {
		panic(err)
	}
	return b
}

func replyOK(reply bsoncore.Document) bool {
	ok, _ := reply.Lookup("ok").AsFloat64OK()
	return ok == 1
}

// startFuzzServer starts a server holding a little of everything the
// commands act on: documents, an index, a commit, a tag and a branch.
func startFuzzServer(f *testing.F) *rawConn {
	c := dialRaw(startServer(f))
	c.mustRun(f, d("insert", "c", "documents", a(
		d("_id", 1, "a", 5, "b", "abc"),
		d("_id", 2, "a", a(1, d("b", 2)), "c", nil),
		d("_id", "x", "a", d("b", 1.5), "e", a(d("x", 1))),
	)))
	c.mustRun(f, d("createIndexes", "c", "indexes", a(d("key", d("a", 1), "name", "a_1"))))
	c.mustRun(f, d("create", "ts", "timeseries", d("timeField", "t", "metaField", "m")))
	c.mustRun(f, d("insert", "ts", "documents", a(d("t", bson.DateTime(0), "m", 1, "v", 1), d("t", bson.DateTime(-1000), "m", a(2)))))
	c.mustRun(f, d("dumboCommit", 1, "message", "seed"))
	c.mustRun(f, d("dumboTag", "v1"))
	c.mustRun(f, d("dumboBranch", "feature"))
	return c
}

// fuzzCommands is the body of every command fuzz target: family lists
// its command names, seeds are whole commands. The fuzz input is a
// command (fuzzbson) whose first key is mapped onto the family, and
// whether its array arguments travel as OP_MSG document sequences, as
// drivers send them.
func fuzzCommands(f *testing.F, family []string, seeds ...bson.D) {
	for _, s := range seeds {
		f.Add(false, fuzzbson.Encode(s))
		if firstKeyIs(s, "insert", "update", "delete") {
			f.Add(true, fuzzbson.Encode(s))
		}
	}
	c := startFuzzServer(f)
	f.Fuzz(func(t *testing.T, sequences bool, data []byte) {
		msg := commandMsg(family, fuzzbson.Document(data), sequences)
		checkReply(t, msg, c.roundTrip(t, msg))
		if ping := c.roundTrip(t, &wire.Msg{Body: commandFor(fuzzDB, d("ping", 1))}); !replyOK(ping) {
			t.Fatalf("ping after %v: %v", bson.Raw(msg.Body), bson.Raw(ping))
		}
	})
}

func firstKeyIs(cmd bson.D, names ...string) bool {
	return len(cmd) > 0 && slices.Contains(names, cmd[0].Key)
}

// commandMsg builds the message for fuzzed command doc: its first key
// becomes a command of the family (itself if it is one), $db defaults
// to fuzzDB, writeConcern to {j: false}, and with sequences the arrays of documents a driver sends
// as document sequences are sent so.
func commandMsg(family []string, doc bsoncore.Document, sequences bool) *wire.Msg {
	elems, _ := doc.Elements()
	b := bsoncore.NewDocumentBuilder()
	if len(elems) == 0 {
		b.AppendInt32(familyMember(family, ""), 1)
	}
	msg := &wire.Msg{}
	hasDB, hasWC := false, false
	for i, e := range elems {
		key, v := e.Key(), e.Value()
		switch {
		case i == 0:
			key = familyMember(family, key)
		case key == "$db":
			hasDB = true
		case key == "writeConcern":
			hasWC = true
		case sequences && slices.Contains([]string{"documents", "updates", "deletes"}, key):
			if seq, ok := asSequence(key, v); ok {
				msg.Sequences = append(msg.Sequences, seq)
				continue
			}
		}
		b.AppendValue(key, v)
	}
	if !hasDB {
		b.AppendString("$db", fuzzDB)
	}
	if !hasWC { // spare the disk a sync per write
		b.AppendDocument("writeConcern", bsoncore.NewDocumentBuilder().AppendBoolean("j", false).Build())
	}
	msg.Body = b.Build()
	return msg
}

func familyMember(family []string, key string) string {
	if slices.Contains(family, key) {
		return key
	}
	h := fnv.New32a()
	h.Write([]byte(key))
	return family[int(h.Sum32()%uint32(len(family)))]
}

// asSequence is an array of documents as a document sequence; ok is false
// when v holds anything else, which a sequence cannot carry.
func asSequence(id string, v bsoncore.Value) (wire.Sequence, bool) {
	arr, ok := v.ArrayOK()
	if !ok {
		return wire.Sequence{}, false
	}
	vals, _ := arr.Values()
	seq := wire.Sequence{Identifier: id, Documents: []bsoncore.Document{}}
	for _, v := range vals {
		doc, ok := v.DocumentOK()
		if !ok {
			return wire.Sequence{}, false
		}
		seq.Documents = append(seq.Documents, doc)
	}
	return seq, true
}

// checkReply checks a reply's shape: ok is a number, and an error (the
// reply's own or one of its write errors) has a numeric code other than
// InternalError and a string errmsg, and a top-level error its codeName.
func checkReply(t *testing.T, msg *wire.Msg, reply bsoncore.Document) {
	t.Helper()
	ok, isNum := reply.Lookup("ok").AsFloat64OK()
	if !isNum {
		t.Fatalf("%v: reply without a numeric ok: %v", bson.Raw(msg.Body), bson.Raw(reply))
	}
	if ok == 0 {
		checkError(t, msg, reply, true)
	}
	writeErrors, _ := reply.Lookup("writeErrors").ArrayOK()
	vals, _ := writeErrors.Values()
	for _, v := range vals {
		we, _ := v.DocumentOK()
		checkError(t, msg, we, false)
	}
}

func checkError(t *testing.T, msg *wire.Msg, e bsoncore.Document, named bool) {
	t.Helper()
	code, codeOK := e.Lookup("code").Int32OK()
	_, msgOK := e.Lookup("errmsg").StringValueOK()
	name, nameOK := e.Lookup("codeName").StringValueOK()
	switch {
	case !codeOK || !msgOK || (named && !nameOK):
		t.Fatalf("%v: error not in MongoDB's shape: %v", bson.Raw(msg.Body), bson.Raw(e))
	case mongoerr.Code(code) == mongoerr.InternalError || name == mongoerr.InternalError.Name():
		t.Fatalf("%v (sequences %v): InternalError: %v", bson.Raw(msg.Body), sequenceIDs(msg), bson.Raw(e))
	case named && name != mongoerr.Code(code).Name():
		t.Fatalf("%v: code %d named %q", bson.Raw(msg.Body), code, name)
	}
}

func sequenceIDs(msg *wire.Msg) []string {
	var ids []string
	for _, s := range msg.Sequences {
		ids = append(ids, s.Identifier)
	}
	return ids
}
