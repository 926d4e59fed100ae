package bench

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver/connstring"
)

// The raw-wire client: plain TCP connections that send pre-framed OP_MSG
// messages and read replies just far enough to check them. The driver
// spends tens of µs per request on the client (server selection, pooling,
// BSON marshalling, a session); this client spends a few, so its rows
// measure the server. It is the one place bench speaks the wire protocol
// itself (docs/design/layout.md), and it frames messages by hand rather
// than import the server's wire package, so that bench stays independent
// of the code it measures.

const (
	opMsg       = 2013
	headerLen   = 16
	flagsLen    = 4
	kindBody    = 0 // an OP_MSG section holding one document
	kindSeq     = 1 // an OP_MSG section holding a document sequence
	checksumBit = 1 // OP_MSG flag: a CRC-32C follows the sections
	// bodyAt is where the body document of a message framed here starts.
	bodyAt = headerLen + flagsLen + 1
	// maxReply is MongoDB's maxMessageSizeBytes: a longer length is a
	// broken stream, not a reply to allocate for.
	maxReply = 48_000_000
	// dialTimeout bounds the connection and its hello; later round trips
	// are bounded by the run's context, which closes the connections.
	dialTimeout = 15 * time.Second
)

// rawAddr returns the host:port a raw client dials for the target at url,
// or why it cannot: the raw client speaks neither TLS nor authentication
// and talks to one server.
func rawAddr(url string) (string, error) {
	cs, err := connstring.ParseAndValidate(url)
	switch {
	case err != nil:
		return "", err
	case cs.Scheme != connstring.SchemeMongoDB || len(cs.Hosts) != 1:
		return "", errors.New("the raw-wire client needs a single-host mongodb:// URL")
	case cs.SSL || cs.HasAuthParameters() || len(cs.Compressors) > 0:
		return "", errors.New("the raw-wire client speaks no TLS, authentication or compression")
	}
	return cs.Hosts[0], nil
}

// frame returns an OP_MSG with body and, if seqID is set, a document
// sequence section of docs under that identifier (how drivers send an
// insert's documents), and where in it each of docs starts. The request
// id is left 0 for the round trip to set.
func frame(body []byte, seqID string, docs [][]byte) ([]byte, []int) {
	msg := make([]byte, headerLen+flagsLen, bodyAt+len(body))
	msg = append(msg, kindBody)
	msg = append(msg, body...)
	var at []int
	if seqID != "" {
		msg = append(msg, kindSeq)
		sizeAt := len(msg)
		msg = binary.LittleEndian.AppendUint32(msg, 0)
		msg = append(append(msg, seqID...), 0)
		for _, d := range docs {
			at = append(at, len(msg))
			msg = append(msg, d...)
		}
		binary.LittleEndian.PutUint32(msg[sizeAt:], uint32(len(msg)-sizeAt))
	}
	binary.LittleEndian.PutUint32(msg[0:], uint32(len(msg)))
	binary.LittleEndian.PutUint32(msg[12:], opMsg)
	return msg, at
}

// appendPatchable appends an int64 element and returns where its value
// lies in dst, for a request to overwrite with setInt64.
func appendPatchable(dst []byte, key string) ([]byte, int) {
	at := len(dst) + 1 + len(key) + 1 // type byte, key, NUL
	return bsoncore.AppendInt64Element(dst, key, 0), at
}

func setInt64(msg []byte, at int, v int64) {
	binary.LittleEndian.PutUint64(msg[at:], uint64(v))
}

// command builds a command body: the elements add appends, then $db.
func command(db string, add func([]byte) []byte) []byte {
	i, doc := bsoncore.AppendDocumentStart(nil)
	doc = add(doc)
	doc = bsoncore.AppendStringElement(doc, "$db", db)
	doc, _ = bsoncore.AppendDocumentEnd(doc, i)
	return doc
}

// simpleCommand frames {name: 1, $db: db}.
func simpleCommand(db, name string) []byte {
	msg, _ := frame(command(db, func(d []byte) []byte { return bsoncore.AppendInt32Element(d, name, 1) }), "", nil)
	return msg
}

// rawConn is one connection of the raw client. It is not safe for
// concurrent use: each client of a benchmark has its own.
type rawConn struct {
	nc    net.Conn
	r     *bufio.Reader
	reply []byte // the last reply's payload, reused
	reqID uint32
}

// dialRaw connects and says hello once, as every client must before its
// first command.
func dialRaw(ctx context.Context, addr string) (*rawConn, error) {
	d := net.Dialer{Timeout: dialTimeout}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	c := &rawConn{nc: nc, r: bufio.NewReaderSize(nc, 64<<10)}
	nc.SetDeadline(time.Now().Add(dialTimeout))
	if _, err := c.command(simpleCommand("admin", "hello")); err != nil {
		nc.Close()
		return nil, fmt.Errorf("hello: %w", err)
	}
	nc.SetDeadline(time.Time{})
	return c, nil
}

func (c *rawConn) close() { c.nc.Close() }

// command sends msg and returns the reply's body once it says ok: 1. The
// body is valid until the next call.
func (c *rawConn) command(msg []byte) (bsoncore.Document, error) {
	body, err := c.roundTrip(msg)
	if err != nil {
		return nil, err
	}
	return body, checkOK(body)
}

// roundTrip sends msg under a fresh request id and reads the reply's body.
func (c *rawConn) roundTrip(msg []byte) (bsoncore.Document, error) {
	c.reqID++
	binary.LittleEndian.PutUint32(msg[4:], c.reqID)
	if _, err := c.nc.Write(msg); err != nil {
		return nil, err
	}
	var hdr [headerLen]byte
	if _, err := io.ReadFull(c.r, hdr[:]); err != nil {
		return nil, err
	}
	size := int(binary.LittleEndian.Uint32(hdr[0:]))
	if to, op := binary.LittleEndian.Uint32(hdr[8:]), binary.LittleEndian.Uint32(hdr[12:]); to != c.reqID || op != opMsg {
		return nil, fmt.Errorf("reply to request %d with opcode %d, want a reply to %d with %d", to, op, c.reqID, opMsg)
	}
	if size < headerLen+flagsLen+1 || size > maxReply {
		return nil, fmt.Errorf("reply of %d bytes", size)
	}
	if cap(c.reply) < size-headerLen {
		c.reply = make([]byte, size-headerLen)
	}
	c.reply = c.reply[:size-headerLen]
	if _, err := io.ReadFull(c.r, c.reply); err != nil {
		return nil, err
	}
	return replyBody(c.reply)
}

// replyBody returns the body section of an OP_MSG reply's payload (the
// bytes after the header): the flags, then the body, which a server's
// reply puts first.
func replyBody(p []byte) (bsoncore.Document, error) {
	flags := binary.LittleEndian.Uint32(p)
	p = p[flagsLen:]
	if flags&checksumBit != 0 {
		p = p[:max(len(p)-4, 0)]
	}
	if len(p) == 0 || p[0] != kindBody {
		return nil, errors.New("reply does not start with a body section")
	}
	body, _, ok := bsoncore.ReadDocument(p[1:])
	if !ok {
		return nil, errors.New("reply's body is not a BSON document")
	}
	return body, nil
}

// checkOK turns a reply without ok: 1 into an error carrying the server's
// code and message: like a driver's server error, it marks the benchmark
// unsupported when setup or warm-up meets it.
func checkOK(body bsoncore.Document) error {
	if ok, _ := body.Lookup("ok").AsFloat64OK(); ok == 1 {
		return nil
	}
	code, _ := body.Lookup("code").AsInt64OK()
	msg, _ := body.Lookup("errmsg").StringValueOK()
	return errUnsupported{fmt.Errorf("(%d) %s", code, msg)}
}

// checkWritten checks an insert's reply: n documents written, no write
// errors.
func checkWritten(body bsoncore.Document, n int) error {
	if we, err := body.LookupErr("writeErrors"); err == nil {
		return fmt.Errorf("insert: write errors %s", we)
	}
	if got, _ := body.Lookup("n").AsInt64OK(); got != int64(n) {
		return fmt.Errorf("insert wrote %d documents, want %d", got, n)
	}
	return nil
}

// firstBatchLen is the number of documents in a find reply's first batch.
func firstBatchLen(body bsoncore.Document) (int, error) {
	arr, ok := body.Lookup("cursor", "firstBatch").ArrayOK()
	if !ok {
		return 0, errors.New("find reply has no cursor.firstBatch")
	}
	vals, err := arr.Values()
	return len(vals), err
}
