package server

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dumbodb/dumbodb/interrupt"
	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/plan"
	"github.com/dumbodb/dumbodb/storage"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// cursorIdleTimeout is mongod's cursorTimeoutMillis default: idle cursors
// are killed after 10 minutes.
const cursorIdleTimeout = 10 * time.Minute

// Batch limits: the first batch of find holds 101 documents by default, and
// no batch is bigger than the largest reply (16 MiB of documents).
const (
	defaultFirstBatch = 101
	maxBatchBytes     = 16 * 1024 * 1024
)

// docSource yields documents one at a time; Next returns io.EOF at the end.
type docSource interface {
	Next(ctx context.Context) (bsoncore.Document, error)
}

// Cursor limits: how many open cursors one connection and the whole server
// may hold. Each holds a snapshot and at most one batch of read-ahead (a
// sorted result is bounded by the blocking-stage memory limit).
const (
	maxCursorsPerConn   = 1000
	maxCursorsPerServer = 20000
)

// noOwner is the owner of a cursor whose connection closed (connection
// ids start at 1).
const noOwner int64 = 0

// cursor is a server-side cursor: the rest of a result after a batch.
type cursor struct {
	id        int64
	where     cursorPlace
	ns        string
	noTimeout bool
	// timeLimited: the command that opened it had a time limit
	// (maxTimeMS), which mongod carries over to its getMores.
	timeLimited bool

	reader atomic.Pointer[opRef] // the getMore reading it now, if any

	mu       sync.Mutex  // one getMore at a time; guards the fields below
	src      *peekSource // nil once killed
	killed   error       // why it was killed, for the next getMore
	lastUsed time.Time
	owner    int64 // the connection that last used it (noOwner: it closed)
	// session is the logical session it was opened in (nil: none); ending
	// the session kills it.
	session *storage.SessionKey
	// user is who opened it ("name@db"; "": nobody logged in): with
	// access control, only that user may read or kill it.
	user string
	// dead is set once it is killed: a killed cursor stays registered
	// only to tell its next getMore why, and no longer counts as open.
	dead atomic.Bool
	// stream is the change stream it reads (nil: an ordinary cursor).
	stream *changeStream
	// tail is the tailable find it reads (nil: none; capped_tail.go).
	tail *tailSource
}

// cursorPlace is what a cursor reads: a database, the branch or revision
// it was opened on, and a collection.
type cursorPlace struct{ db, rev, coll string }

type cursorRegistry struct {
	mu      sync.Mutex
	cursors map[int64]*cursor
	perConn map[int64]int // open cursors by owner
}

func newCursorRegistry() *cursorRegistry {
	return &cursorRegistry{cursors: map[int64]*cursor{}, perConn: map[int64]int{}}
}

// add registers a cursor owned by connection owner, within the limits.
func (r *cursorRegistry) add(where cursorPlace, ns string, src *peekSource, noTimeout bool, owner int64,
	session *storage.SessionKey, user string) (*cursor, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.cursors) >= maxCursorsPerServer {
		return nil, mongoerr.New(mongoerr.ExceededMemoryLimit, "too many open cursors on this server (at most %d); close some or let them finish", maxCursorsPerServer)
	}
	if r.perConn[owner] >= maxCursorsPerConn {
		return nil, mongoerr.New(mongoerr.ExceededMemoryLimit, "too many open cursors on this connection (at most %d); close some or let them finish", maxCursorsPerConn)
	}
	c := &cursor{where: where, ns: ns, src: src, noTimeout: noTimeout, lastUsed: time.Now(), owner: owner, session: session, user: user}
	if cs, ok := src.src.(*changeStream); ok {
		c.stream = cs
	}
	c.tail, _ = src.src.(*tailSource)
	for c.id == 0 || r.cursors[c.id] != nil {
		var b [8]byte
		rand.Read(b[:])
		c.id = int64(binary.LittleEndian.Uint64(b[:]) &^ (1 << 63))
	}
	r.cursors[c.id] = c
	r.perConn[owner]++
	return c, nil
}

// countStreams counts the open change stream cursors.
func (r *cursorRegistry) countStreams() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, c := range r.cursors {
		if c.stream != nil {
			n++
		}
	}
	return n
}

// pollsWithoutWaiting reports whether cursor id is tailable without
// awaitData: its getMore answers at once, even with nothing new.
func (r *cursorRegistry) pollsWithoutWaiting(id int64) bool {
	c := r.get(id)
	return c != nil && c.tail != nil && !c.tail.await
}

func (r *cursorRegistry) get(id int64) *cursor {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cursors[id]
}

// remove unregisters and closes a cursor; it reports whether one was there.
func (r *cursorRegistry) remove(id int64) bool {
	r.mu.Lock()
	c, ok := r.cursors[id]
	if ok {
		r.unregisterLocked(c)
	}
	r.mu.Unlock()
	if ok {
		c.kill(nil)
	}
	return ok
}

func (r *cursorRegistry) unregisterLocked(c *cursor) {
	delete(r.cursors, c.id)
	r.disownLocked(c)
}

// disownLocked takes a cursor off its owner's count.
func (r *cursorRegistry) disownLocked(c *cursor) {
	if c.owner == noOwner {
		return
	}
	if r.perConn[c.owner]--; r.perConn[c.owner] <= 0 {
		delete(r.perConn, c.owner)
	}
	c.owner = noOwner
}

// moveOwner makes conn the owner of a cursor it just used.
func (r *cursorRegistry) moveOwner(c *cursor, conn int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cursors[c.id] != c || c.owner == conn {
		return
	}
	r.disownLocked(c)
	c.owner = conn
	r.perConn[conn]++
}

// count counts the open cursors: those not killed.
func (r *cursorRegistry) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, c := range r.cursors {
		if !c.dead.Load() {
			n++
		}
	}
	return n
}

// removeWhere unregisters and closes the cursors for which match holds; a
// cursor in a getMore is closed when that getMore ends. With a reason, the
// cursor stays registered, killed, so that its next getMore says why.
func (r *cursorRegistry) removeWhere(match func(c *cursor) bool, reason error) {
	r.mu.Lock()
	var hit []*cursor
	for _, c := range r.cursors {
		if match(c) {
			hit = append(hit, c)
			if reason == nil {
				r.unregisterLocked(c)
			}
		}
	}
	r.mu.Unlock()
	for _, c := range hit {
		c.kill(reason)
	}
}

// reapIdle closes cursors unused for longer than idle (not noTimeout ones),
// and killed ones nobody came back for.
func (r *cursorRegistry) reapIdle(idle time.Duration) {
	now := time.Now()
	r.removeWhere(func(c *cursor) bool {
		if !c.mu.TryLock() {
			return false // in a getMore: in use
		}
		defer c.mu.Unlock()
		return (!c.noTimeout || c.killed != nil) && now.Sub(c.lastUsed) > idle
	}, nil)
}

// orphan lets the cursors of a closed connection live on without an
// owner: as on mongod, a cursor is not the connection's, and another
// connection (of the same user, in the same session) may go on reading
// it, until it is killed, read to its end or idle past the cursor
// timeout.
func (r *cursorRegistry) orphan(conn int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.perConn[conn] == 0 {
		return
	}
	for _, c := range r.cursors {
		if c.owner == conn {
			r.disownLocked(c)
		}
	}
}

// killNamespace kills the cursors reading a dropped or renamed collection
// of a branch (coll "" and rev "": every cursor of a dropped database).
func (r *cursorRegistry) killNamespace(db, rev, coll string, reason error) {
	r.removeWhere(func(c *cursor) bool {
		// A change stream outlives what it watches: it reports the drop.
		return c.stream == nil && c.where.db == db && (rev == "" || c.where.rev == rev) && (coll == "" || c.where.coll == coll)
	}, reason)
}

// killCursorsOn kills the cursors reading coll on the request's branch.
func (r *request) killCursorsOn(coll, why string) {
	r.c.s.cursors.killNamespace(r.db, cmp.Or(r.rev, r.currentBranch()), coll, cursorKilledError(why))
}

// cursorKilledError is what the next getMore of a cursor whose collection
// went away answers, as mongod's QueryPlanKilled.
func cursorKilledError(why string) error {
	return mongoerr.New(mongoerr.QueryPlanKilled, "cursor killed: %s", why)
}

// opRef names one operation of one connection.
type opRef struct {
	c    *conn
	opid int64
}

// kill releases what the cursor holds (its snapshot and any spill files),
// interrupting a getMore in progress, and records why for the next getMore.
func (c *cursor) kill(reason error) {
	c.dead.Store(true)
	if ref := c.reader.Load(); ref != nil {
		ref.c.kill(ref.opid, errKilled)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.src != nil {
		closeSource(c.src.src)
		c.src = nil
	}
	if c.killed == nil {
		c.killed = reason
	}
}

// closeSource releases a source that holds resources beyond memory.
func closeSource(src docSource) {
	if cl, ok := src.(io.Closer); ok {
		cl.Close()
	}
}

// peekSource is a cursor's rest of a result: a document a batch had no
// room for waits in pending for the next. pipeline marks an aggregation's
// result, whose end mongod learns only by reading past it (below).
type peekSource struct {
	src      docSource
	pending  bsoncore.Document
	done     bool
	pipeline bool
}

func (p *peekSource) next(ctx context.Context) (bsoncore.Document, error) {
	if p.pending != nil {
		d := p.pending
		p.pending = nil
		return d, nil
	}
	if p.done {
		return nil, io.EOF
	}
	d, err := p.src.Next(ctx)
	if errors.Is(err, io.EOF) {
		p.done = true
	}
	return d, err
}

// atEnd reports whether the result is known to be exhausted without
// reading on: mongod closes a cursor whose batch took the last document
// only when it read past it or its plan knows (plan/known_end.go). An
// aggregation never knows (its executor learns the end by reading), so
// its cursor stays open until a getMore finds nothing.
func (p *peekSource) atEnd() bool {
	switch {
	case p.pending != nil:
		return false
	case p.done:
		return true
	case p.pipeline:
		return false
	}
	return plan.AtEnd(p.src)
}

// fillBatch takes up to n documents (n <= 0: no count limit) and at most
// maxBatchBytes, but always at least one, and reports whether the result
// is known to be exhausted afterwards: it was read to its end, or it can
// tell (atEnd). A batch that takes exactly the remaining documents of a
// result that cannot tell leaves the cursor open, as on mongod.
func fillBatch(ctx context.Context, p *peekSource, n int) ([]bsoncore.Document, bool, error) {
	var docs []bsoncore.Document
	size := 0
	for n <= 0 || len(docs) < n {
		d, err := p.next(ctx)
		if errors.Is(err, io.EOF) {
			return docs, true, nil
		}
		if errors.Is(err, errTailEnd) {
			return docs, false, nil // a tailable cursor stays open at the end
		}
		if err != nil {
			return nil, false, err
		}
		if len(docs) > 0 && size+len(d) > maxBatchBytes {
			p.pending = d
			return docs, false, nil
		}
		docs = append(docs, d)
		size += len(d)
		if err := interrupt.Err(ctx); err != nil {
			return nil, false, err
		}
	}
	return docs, p.atEnd(), nil
}

// pipelineSource marks an aggregation's result for its cursor (peekSource
// pipeline): its batches end as mongod's aggregate ends them.
type pipelineSource struct{ docSource }

func (s pipelineSource) Close() error {
	closeSource(s.docSource)
	return nil
}

// cursorReply builds {cursor: {id, ns, <batchKey>: [...]}, ok: 1}; a
// snapshot read's first batch also names the time it read at
// (cursor.atClusterTime; zero at: none).
func cursorReply(id int64, ns, batchKey string, docs []bsoncore.Document, at clusterTime) bsoncore.Document {
	size := 256 + clusterTimeRoom
	for _, d := range docs {
		size += len(d) + 8 // the array index and element type
	}
	dst := make([]byte, 0, size)
	idx, dst := bsoncore.AppendDocumentStart(dst)
	cidx, dst := bsoncore.AppendDocumentElementStart(dst, "cursor")
	dst = bsoncore.AppendInt64Element(dst, "id", id)
	dst = bsoncore.AppendStringElement(dst, "ns", ns)
	dst = appendDocArray(dst, batchKey, docs)
	if !at.isZero() {
		dst = bsoncore.AppendTimestampElement(dst, "atClusterTime", at.t, at.i)
	}
	dst, _ = bsoncore.AppendDocumentEnd(dst, cidx)
	dst = bsoncore.AppendDoubleElement(dst, "ok", 1)
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return dst
}

// batchSizeAbsent is a first batch's size when the command names none: the
// default, where an explicit batchSize: 0 asks for an empty first batch.
const batchSizeAbsent = -1

// startCursor sends the first batch of src and registers a cursor for the
// rest, if any. singleBatch closes the cursor after the first batch.
func (r *request) startCursor(ns string, src docSource, batchSize int, singleBatch, noTimeout bool) (bsoncore.Document, error) {
	switch {
	case batchSize == batchSizeAbsent && singleBatch:
		batchSize = 0 // one batch of everything
	case batchSize == batchSizeAbsent:
		batchSize = defaultFirstBatch
	}
	p := &peekSource{src: src}
	if ps, ok := src.(pipelineSource); ok {
		p.src, p.pipeline = ps.docSource, true
	}
	var docs []bsoncore.Document
	var done bool
	var err error
	if batchSize == 0 && !singleBatch {
		done = p.atEnd() // batchSize: 0 asks for an empty first batch, reading nothing
	} else {
		docs, done, err = fillBatch(r.ctx, p, batchSize)
	}
	if t, ok := p.src.(*tailSource); ok && err == nil {
		// mongod keeps a tailable cursor unless the collection is empty.
		done, err = t.empty(r.ctx)
	}
	if err != nil {
		closeSource(src)
		return nil, err
	}
	if done || singleBatch {
		closeSource(src)
		return cursorReply(0, ns, "firstBatch", docs, r.snapshotReadTime()), nil
	}
	cur, err := r.c.s.cursors.add(r.cursorPlace(ns), ns, p, noTimeout, r.c.id, r.session, r.cursorUser())
	if err != nil {
		closeSource(src)
		return nil, err
	}
	cur.timeLimited = r.timeLimited
	return cursorReply(cur.id, ns, "firstBatch", docs, r.snapshotReadTime()), nil
}

// sliceSource serves a materialised result; it knows when it has nothing
// left, as mongod's queued results (listCollections, listIndexes,
// bulkWrite) do.
type sliceSource struct{ docs []bsoncore.Document }

func (s *sliceSource) AtEnd() bool { return len(s.docs) == 0 }

func (s *sliceSource) Next(context.Context) (bsoncore.Document, error) {
	if len(s.docs) == 0 {
		return nil, io.EOF
	}
	d := s.docs[0]
	s.docs = s.docs[1:]
	return d, nil
}

// cursorUser names the connection's user as cursors record it ("name@db";
// "": nobody logged in, or no access control).
func (r *request) cursorUser() string { return r.c.userName() }

// userName names the connection's user as "name@db" ("": nobody logged
// in, or no access control).
func (c *conn) userName() string {
	if !c.s.cfg.Auth {
		return ""
	}
	if u := c.currentAuth().user; u != nil {
		return u.Name + "@" + u.DB
	}
	return ""
}

// checkCursorOwner refuses a getMore of a cursor opened in another
// session or by another user, with mongod's checks in mongod's order:
// the session first, then the user.
func (r *request) checkCursorOwner(cur *cursor) error {
	if err := r.checkCursorSession(cur); err != nil {
		return err
	}
	if !r.opened(cur) {
		return mongoerr.New(mongoerr.Unauthorized, "cursor id %d was not created by the authenticated user", cur.id)
	}
	return nil
}

// opened reports whether the request's user opened cur: mongod lets a
// user read and kill the cursors it opened, from any connection.
func (r *request) opened(cur *cursor) bool { return cur.user == r.cursorUser() }

// checkCursorSession refuses a getMore whose session is not the one its
// cursor was opened in, having none where the cursor has one and the
// reverse included. Under access control mongod answers Unauthorized
// for a logged-in user (a session's uid names its user, so another
// user's session always differs); without, its codes tell which side
// lacks a session.
func (r *request) checkCursorSession(cur *cursor) error {
	mine, theirs := r.session, cur.session
	switch {
	case sameSession(mine, theirs):
		return nil
	case r.cursorUser() != "":
		return mongoerr.New(mongoerr.Unauthorized, "Cursor session id (%s) is not the same as the operation context's session id (%s)",
			sessionText(theirs), sessionText(mine))
	case theirs == nil:
		return mongoerr.New(mongoerr.Location50736, "Cannot run getMore on cursor %d, which was not created in a session, in session %s",
			cur.id, sessionText(mine))
	case mine == nil:
		return mongoerr.New(mongoerr.Location50737, "Cannot run getMore on cursor %d, which was created in session %s, without an lsid",
			cur.id, sessionText(theirs))
	}
	return mongoerr.New(mongoerr.Location50738, "Cannot run getMore on cursor %d, which was created in session %s, in session %s",
		cur.id, sessionText(theirs), sessionText(mine))
}

// describeIdle is $currentOp's entries for the open cursors no command
// is reading (idleCursors), of the users mine accepts.
func (r *cursorRegistry) describeIdle(mine func(user string) bool) []bsoncore.Document {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []bsoncore.Document
	for _, c := range r.cursors {
		if c.dead.Load() || !mine(c.user) || !c.mu.TryLock() { // locked: a getMore reads it, not idle
			continue
		}
		lastUsed := c.lastUsed
		c.mu.Unlock()
		cur := bsoncore.NewDocumentBuilder().AppendInt64("cursorId", c.id).
			AppendDateTime("lastAccessDate", lastUsed.UnixMilli()).
			AppendBoolean("noCursorTimeout", c.noTimeout).Build()
		out = append(out, bsoncore.NewDocumentBuilder().AppendString("type", "idleCursor").
			AppendString("ns", c.ns).AppendDocument("cursor", cur).Build())
	}
	return out
}
