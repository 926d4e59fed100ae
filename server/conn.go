package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/storage"
	"github.com/dumbodb/dumbodb/value"
	"github.com/dumbodb/dumbodb/wire"

	"github.com/rs/zerolog"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// conn is one client connection. Commands on it run one at a time, in order.
type conn struct {
	s      *Server
	nc     net.Conn
	id     int64
	log    zerolog.Logger
	ctx    context.Context
	cancel context.CancelFunc

	r      *bufio.Reader
	w      *bufio.Writer
	poller busyPoller

	// compressors the client offered in hello that we also support, in the
	// client's order of preference.
	compressors []string
	nextReqID   int32

	op opState // the command in progress

	mu        sync.Mutex
	clientMD  bsoncore.Document
	helloSeen bool              // a hello ran on the connection (its handshake)
	branches  map[string]string // database -> default branch (dumboCheckout)
	auth      connAuth          // who is logged in (authz.go)
}

func (s *Server) newConn(nc net.Conn) *conn {
	id := s.nextConnID.Add(1)
	ctx, cancel := context.WithCancel(context.Background())
	c := &conn{
		s: s, nc: nc, id: id, ctx: ctx, cancel: cancel,
		log:    s.log.With().Str("ctx", connName(id)).Logger(),
		r:      bufio.NewReaderSize(nc, 64<<10),
		w:      bufio.NewWriterSize(sentBytes{nc, &s.stats.bytesOut}, 64<<10),
		poller: newBusyPoller(nc, s.cfg.BusyPoll),
	}
	s.connsMu.Lock()
	s.conns[c] = struct{}{}
	s.connsMu.Unlock()
	s.stats.connsCurrent.Add(1)
	s.stats.connsTotal.Add(1)
	return c
}

func connName(id int64) string { return "conn" + itoa(id) }

// closeRead makes the blocked Read of an idle connection return, so that
// shutdown does not wait for clients to hang up; a command in progress
// still finishes and its reply is still written.
func (c *conn) closeRead() {
	if tc, ok := c.nc.(*net.TCPConn); ok {
		tc.CloseRead()
		return
	}
	c.nc.SetReadDeadline(time.Now())
}

func (c *conn) serve() {
	defer c.finish()
	if !c.s.quiet.Load() {
		c.log.Info().Str("c", "NETWORK").Str("remote", c.nc.RemoteAddr().String()).
			Int64("connectionId", c.id).Msg("Connection accepted")
	}
	for {
		if c.r.Buffered() == 0 {
			c.poller.await(c.s)
		}
		hdr, msg, comp, held, err := c.readMessage()
		if err != nil {
			c.s.inFlight.Release(held)
			c.logReadError(err)
			return
		}
		c.s.stats.bytesIn.Add(int64(hdr.MessageLength))
		c.s.stats.numRequests.Add(1)
		c.s.running.Add(1)
		err = c.handle(hdr, msg, comp)
		c.s.running.Add(-1)
		c.s.inFlight.Release(held)
		if err != nil {
			c.log.Info().Str("c", "NETWORK").Err(err).Msg("closing connection")
			return
		}
	}
}

// sentBytes counts what a connection writes to its socket
// (serverStatus.network.bytesOut).
type sentBytes struct {
	io.Writer
	n *atomic.Int64
}

func (w sentBytes) Write(p []byte) (int, error) {
	n, err := w.Writer.Write(p)
	w.n.Add(int64(n))
	return n, err
}

// errNoReply closes a connection whose command answers nothing: the
// failCommand fail point's closeConnection, or shutdown.
var errNoReply = errors.New("the command answers by closing the connection")

// readMessage reads the next message within the server's in-flight budget.
// Between messages a connection may idle for ever (pooled connections do);
// once a message has begun, the rest must come within the stall timeout.
func (c *conn) readMessage() (wire.Header, wire.Message, wire.CompressorID, int, error) {
	if _, err := c.r.Peek(1); err != nil {
		return wire.Header{}, nil, wire.CompressorNoop, 0, err
	}
	if !c.wholeMessageBuffered() {
		c.nc.SetReadDeadline(time.Now().Add(c.s.cfg.messageStall()))
		defer c.clearReadDeadline()
	}
	return wire.ReadBudgeted(c.r, c.s.inFlight)
}

// wholeMessageBuffered reports whether the next message is already all in
// the read buffer, so that no deadline is needed (the common case).
func (c *conn) wholeMessageBuffered() bool {
	if c.r.Buffered() < 4 {
		return false // Peek(4) would wait for the rest
	}
	hdr, _ := c.r.Peek(4)
	return int(binary.LittleEndian.Uint32(hdr)) <= c.r.Buffered()
}

func (c *conn) clearReadDeadline() {
	c.nc.SetReadDeadline(time.Time{})
	if c.s.closing.Load() {
		c.closeRead() // shutdown may have set its deadline meanwhile
	}
}

func (c *conn) logReadError(err error) {
	if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || c.s.closing.Load() {
		return
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		c.log.Warn().Str("c", "NETWORK").Msg("message stalled past the stall timeout; closing connection")
		return
	}
	if errors.Is(err, wire.ErrOverBudget) {
		c.log.Warn().Str("c", "NETWORK").Int64("inFlightBytes", c.s.inFlight.Used()).
			Msg("messages in flight exceed the limit; closing connection")
		return
	}
	var pe *wire.ProtocolError
	if errors.As(err, &pe) {
		c.log.Warn().Str("c", "NETWORK").Err(err).Msg("malformed message; closing connection")
		return
	}
	c.log.Debug().Str("c", "NETWORK").Err(err).Msg("read failed")
}

func (c *conn) finish() {
	c.cancel()
	c.nc.Close()
	c.s.cursors.orphan(c.id)
	c.s.connsMu.Lock()
	delete(c.s.conns, c)
	c.s.connsMu.Unlock()
	c.s.stats.connsCurrent.Add(-1)
	if !c.s.quiet.Load() {
		c.log.Info().Str("c", "NETWORK").Msg("Connection ended")
	}
}

// handle answers one message. An error means the connection must close.
func (c *conn) handle(hdr wire.Header, msg wire.Message, comp wire.CompressorID) error {
	switch m := msg.(type) {
	case *wire.Msg:
		return c.handleMsg(hdr, m, comp)
	case *wire.Query:
		return c.handleQuery(hdr, m, comp)
	default:
		return errors.New("unexpected message from client")
	}
}

func (c *conn) handleMsg(hdr wire.Header, m *wire.Msg, comp wire.CompressorID) error {
	decode := func() (bsoncore.Document, error) { return m.Document() }
	reply := c.runCommand(m.Flags&wire.FlagMoreToCome != 0, decode)
	if reply == nil {
		return errNoReply
	}
	if m.Flags&wire.FlagMoreToCome != 0 {
		return nil // the client asked for no reply (w: 0)
	}
	if m.Flags&wire.FlagExhaustAllowed != 0 {
		if more := c.exhaustRule(m); more != nil {
			return c.stream(hdr, reply, decode, comp, more)
		}
	}
	return c.send(hdr, &wire.Msg{Body: reply}, comp)
}

// exhaustRule is how a command sent with exhaustAllowed is answered, as
// on mongod: nil for one answered once (any but an awaitable hello and
// getMore), else whether a reply is followed by the command run again.
// An awaitable hello streams while it succeeds; a getMore while its
// cursor stays open.
func (c *conn) exhaustRule(m *wire.Msg) func(reply bsoncore.Document) bool {
	cmd, err := m.Document()
	if err != nil {
		return nil
	}
	switch value.FirstKey(cmd) {
	case "hello", "isMaster", "ismaster":
		if awaitableHello(cmd) {
			return replyOK
		}
	case "getMore":
		return c.cursorGoesOn
	}
	return nil
}

// awaitableHello reports a hello with topologyVersion and maxAwaitTimeMS:
// the one a client that allows exhaust gets streamed.
func awaitableHello(cmd bsoncore.Document) bool {
	_, tvErr := cmd.LookupErr("topologyVersion")
	_, waitErr := cmd.LookupErr("maxAwaitTimeMS")
	return tvErr == nil && waitErr == nil
}

func replyOK(reply bsoncore.Document) bool {
	ok, _ := value.AsInt64(reply.Lookup("ok"))
	return ok == 1
}

// cursorGoesOn reports whether an exhaust getMore's reply is followed by
// the next batch: while the cursor stays open, as on mongod, an awaitData
// cursor's empty batches included (each comes after the wait for new
// data, maxTimeMS). A tailable cursor that does not await data would
// send its empty batches without pause, so its stream ends at the first
// empty one, the cursor left open for the client's next getMore. So does
// any stream at shutdown, which an awaitData cursor's would otherwise
// hold up for ever.
func (c *conn) cursorGoesOn(reply bsoncore.Document) bool {
	id, _ := reply.Lookup("cursor", "id").Int64OK()
	if !replyOK(reply) || id == 0 || c.s.closing.Load() {
		return false
	}
	batch, _ := reply.Lookup("cursor", "nextBatch").ArrayOK()
	return nonEmpty(bsoncore.Document(batch)) || !c.s.cursors.pollsWithoutWaiting(id)
}

// stream is the exhaust protocol: each reply has moreToCome set and the
// next one, the same command run again, follows without a request
// (responseTo: the previous reply), until more says a reply is the last
// (an error, the end of a cursor) or the client goes away. The awaitable
// hello of server monitoring streams for ever, as drivers dedicate its
// connection to monitoring.
func (c *conn) stream(hdr wire.Header, reply bsoncore.Document, decode func() (bsoncore.Document, error), comp wire.CompressorID,
	more func(bsoncore.Document) bool) error {
	for more(reply) {
		if err := c.send(hdr, &wire.Msg{Flags: wire.FlagMoreToCome, Body: reply}, comp); err != nil {
			return err
		}
		hdr = wire.Header{RequestID: c.nextReqID}
		if reply = c.runCommand(false, decode); reply == nil {
			return errNoReply
		}
	}
	return c.send(hdr, &wire.Msg{Body: reply}, comp)
}

// handleQuery serves legacy OP_QUERY, which drivers use only for the first
// hello/isMaster on "admin.$cmd"; anything else gets an error reply.
func (c *conn) handleQuery(hdr wire.Header, q *wire.Query, comp wire.CompressorID) error {
	var reply bsoncore.Document
	if !isCmdNamespace(q.FullCollectionName) {
		reply = errorReply(mongoerr.New(mongoerr.Location5739101, "OP_QUERY is no longer supported. The client driver may require an upgrade."))
	} else {
		name := value.FirstKey(q.Query)
		if name != "hello" && name != "isMaster" && name != "ismaster" {
			reply = errorReply(mongoerr.New(mongoerr.Location5739101, "OP_QUERY is no longer supported. The client driver may require an upgrade."))
		} else {
			db := q.FullCollectionName[:len(q.FullCollectionName)-len(".$cmd")]
			reply = c.runCommand(false, func() (bsoncore.Document, error) { return withDB(unwrapQuery(q.Query), db), nil })
		}
	}
	if reply == nil {
		return errNoReply
	}
	return c.send(hdr, &wire.Reply{Documents: []bsoncore.Document{reply}}, comp)
}

func (c *conn) send(hdr wire.Header, msg wire.Message, comp wire.CompressorID) error {
	c.nextReqID++
	if err := wire.Write(c.w, c.nextReqID, hdr.RequestID, msg, comp); err != nil {
		return err
	}
	return c.w.Flush()
}

// runCommand decodes, dispatches and times one command; it always returns
// a reply document, turning errors and panics into MongoDB error replies.
// unacknowledged is set for moreToCome messages, whose writes need not wait
// for the log sync.
func (c *conn) runCommand(unacknowledged bool, decode func() (bsoncore.Document, error)) (reply bsoncore.Document) {
	start := time.Now()
	c.s.stats.opCommand.Add(1)
	var cmd bsoncore.Document
	defer func() {
		if p := recover(); p != nil {
			c.commandLog(c.log.Error(), cmd).Interface("panic", p).Str("stack", string(debug.Stack())).Msg("command panicked")
			reply = errorReply(mongoerr.New(mongoerr.InternalError, "internal error: %v", p))
		}
	}()
	cmd, err := decode()
	if err != nil {
		return c.s.withClusterTime(c.failure(cmd, err), clusterTime{})
	}
	req, err := newRequest(c, cmd)
	if err != nil {
		return c.s.withClusterTime(c.failure(cmd, err), clusterTime{})
	}
	req.ctx = c.beginOp(req.name, req.db, cmd, start)
	defer c.endOp()
	if unacknowledged {
		req.ctx = storage.NoSync(req.ctx)
	}
	reply, err = req.run()
	if err != nil {
		reply = c.failure(cmd, err)
	}
	d := time.Since(start)
	c.s.metrics.observe(req.spec, d, err != nil)
	if coll := topCollection(req, cmd); coll != "" {
		c.s.top.record(req.ns(coll), req.spec, req.name, d)
	}
	if d > time.Duration(c.s.slowOp.Load()) && !req.awaited && c.s.sampledSlow() { // waiting on purpose is not slowness, as on mongod
		c.logSlow(req, cmd, d, err)
	}
	if !req.awaited {
		c.s.profiler.record(c, req, cmd, reply, d, err)
	}
	return c.s.withClusterTime(reply, req.opTime)
}

// clusterTimeRoom is what withClusterTime appends: $clusterTime and
// operationTime are 96 bytes.
const clusterTimeRoom = 128

// withClusterTime appends a replica set member's $clusterTime and
// operationTime to a reply: the write's time, or the latest for a read.
// A nil reply (the fail point or shutdown closing the connection) stays
// nil.
func (s *Server) withClusterTime(reply bsoncore.Document, opTime clusterTime) bsoncore.Document {
	if reply == nil || !s.topo.replicaSet() {
		return reply
	}
	now := s.clock.now()
	if opTime.isZero() {
		opTime = now
	}
	// Replies are built for this call alone, so a reply with room enough
	// (a cursor's batch, the bulk of the bytes) grows in place, uncopied.
	out := reply[:len(reply)-1]
	if cap(reply)-len(reply) < clusterTimeRoom {
		out = append(make([]byte, 0, len(reply)+clusterTimeRoom), out...)
	}
	out = appendClusterTime(out, now)
	out = bsoncore.AppendTimestampElement(out, "operationTime", opTime.t, opTime.i)
	out = append(out, 0)
	bsoncore.UpdateLength(out, 0, int32(len(out)))
	return out
}

// failure is the reply to a failed command. InternalError is kept for the
// server's own bugs, so it is logged as an error, with the command it
// broke; a client's mistakes are only worth a debug line.
func (c *conn) failure(cmd bsoncore.Document, err error) bsoncore.Document {
	me := toMongoErr(err)
	ev := c.log.Debug()
	if me.Code == mongoerr.InternalError {
		ev = c.log.Error()
	}
	c.commandLog(ev, cmd).Int32("code", int32(me.Code)).Str("errmsg", me.Msg).Msg("command failed")
	return errorReply(me)
}

// commandLog names cmd (nil when it could not be decoded) in ev.
func (c *conn) commandLog(ev *zerolog.Event, cmd bsoncore.Document) *zerolog.Event {
	db, _ := cmd.Lookup("$db").StringValueOK()
	return ev.Str("c", "COMMAND").Str("command", value.FirstKey(cmd)).Str("$db", db)
}

// maxLoggedCommand bounds the command a slow query's line shows whole;
// a larger one is shown by its name only.
const maxLoggedCommand = 10 << 10

// logSlow logs a slow command as mongod does: "Slow query" with its
// type, namespace (db.coll when the command names a collection), the
// command, how long it took, the client and its application.
func (c *conn) logSlow(req *request, cmd bsoncore.Document, d time.Duration, err error) {
	ns := req.db + ".$cmd" // a command on the database, as mongod names it
	if coll, ok := cmd.Index(0).Value().StringValueOK(); ok && coll != "" {
		ns = req.ns(coll)
	}
	ev := c.log.Info().Str("c", "COMMAND").Str("type", "command").Str("ns", ns)
	var compact bytes.Buffer
	truncated := len(cmd) > maxLoggedCommand
	if truncated { // its first field alone, as mongod keeps the leading ones
		cmd = bsoncore.NewDocumentBuilder().AppendValue(cmd.Index(0).Key(), cmd.Index(0).Value()).Build()
	}
	if json.Compact(&compact, []byte(bson.Raw(cmd).String())) == nil {
		ev = ev.RawJSON("command", compact.Bytes())
	}
	if truncated {
		ev = ev.Bool("truncated", true)
	}
	ev = ev.Dur("durationMillis", d).Str("remote", c.nc.RemoteAddr().String())
	if app := c.appName(); app != "" {
		ev = ev.Str("appName", app)
	}
	if err != nil {
		me := mongoerr.As(err)
		ev = ev.Str("errName", me.Code.String()).Int("errCode", int(me.Code))
	}
	ev.Msg("Slow query")
}
