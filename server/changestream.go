package server

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/query"
	"github.com/dumbodb/dumbodb/storage"
	"github.com/dumbodb/dumbodb/value"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Change streams (docs/design/change-streams.md): an aggregate whose
// first stage is $changeStream opens a cursor on the change log that never
// ends by itself; each getMore returns the events logged since, waiting
// up to maxTimeMS (the driver's maxAwaitTimeMS) for the first.

// changeStreamArgs are the $changeStream stage's fields.
type changeStreamArgs struct {
	fullDocument  string // default, updateLookup, whenAvailable, required
	beforeChange  string // off, whenAvailable, required
	resumeAfter   *resumeToken
	startAfter    *resumeToken
	startAt       clusterTime
	allForCluster bool
	expanded      bool // showExpandedEvents
	versionEvents bool // showVersionEvents: DumboDB's version-control events
}

func parseChangeStreamArgs(spec bsoncore.Value) (changeStreamArgs, error) {
	a := changeStreamArgs{fullDocument: "default", beforeChange: "off"}
	d, ok := spec.DocumentOK()
	if !ok {
		return a, mongoerr.New(mongoerr.Location6188500, "$changeStream must take a nested object but found: $changeStream: %s", value.Format(spec))
	}
	els, _ := d.Elements()
	for _, el := range els {
		if err := a.set(el.Key(), el.Value()); err != nil {
			return a, err
		}
	}
	if a.resumeAfter != nil && a.startAfter != nil {
		return a, mongoerr.New(mongoerr.Location50865, "Do not specify both 'resumeAfter' and 'startAfter' in a $changeStream stage")
	}
	set := 0
	for _, on := range []bool{a.resumeAfter != nil, a.startAfter != nil, !a.startAt.isZero()} {
		if on {
			set++
		}
	}
	if set > 1 {
		return a, mongoerr.New(mongoerr.Location40674, "Only one type of resume option is allowed, but multiple were found")
	}
	return a, nil
}

func (a *changeStreamArgs) set(key string, v bsoncore.Value) error {
	str := func(dst *string, allowed ...string) error {
		s, ok := v.StringValueOK()
		if !ok {
			return typeMismatch("$changeStream", key, v, "string")
		}
		for _, ok := range allowed {
			if s == ok {
				*dst = s
				return nil
			}
		}
		return mongoerr.New(mongoerr.BadValue, "Enumeration value '%s' for field '$changeStream.%s' is not a valid value.", s, key)
	}
	flag := func(dst *bool) error {
		b, ok := v.BooleanOK()
		if !ok {
			return typeMismatch("$changeStream", key, v, "bool")
		}
		*dst = b
		return nil
	}
	token := func(dst **resumeToken) error {
		t, err := parseResumeToken(key, v)
		*dst = &t
		return err
	}
	switch key {
	case "fullDocument":
		return str(&a.fullDocument, "default", "updateLookup", "whenAvailable", "required")
	case "fullDocumentBeforeChange":
		return str(&a.beforeChange, "off", "whenAvailable", "required")
	case "resumeAfter":
		return token(&a.resumeAfter)
	case "startAfter":
		return token(&a.startAfter)
	case "startAtOperationTime":
		t, i, ok := v.TimestampOK()
		if !ok {
			return typeMismatch("$changeStream", key, v, "timestamp")
		}
		a.startAt = clusterTime{t: t, i: i}
		return nil
	case "allChangesForCluster":
		return flag(&a.allForCluster)
	case "showExpandedEvents":
		return flag(&a.expanded)
	case "showVersionEvents":
		return flag(&a.versionEvents)
	case "showSystemEvents", "showRawUpdateDescription", "allowToRunOnConfigDB", "allowToRunOnSystemNS":
		if b, ok := v.BooleanOK(); ok && !b {
			return nil
		}
		return mongoerr.New(mongoerr.NotImplemented, "$changeStream option '%s' is not supported by DumboDB", key)
	}
	return unknownField("$changeStream", key)
}

// streamScope is what a stream watches: the whole deployment (main
// branches), one database's branch, or one collection of it.
type streamScope struct {
	cluster bool
	db      string // the database (cluster: "")
	branch  string
	coll    string // "": the whole database
	nsDB    string // the database as events name it: db, or db@branch
}

// internalDatabase: databases a cluster-wide stream does not report.
func internalDatabase(db string) bool { return db == "admin" || db == "config" || db == "local" }

// changeStream is an open change stream: a cursor's source.
type changeStream struct {
	s      *Server
	scope  streamScope
	args   changeStreamArgs
	post   *query.Pipeline // the stages after $changeStream (nil: none)
	reader *storage.ChangeReader
	// skipSeq and skipIdx: a resume within an entry skips its events up
	// to and including skipIdx; skipKind is the kind of token it resumed
	// from.
	skipSeq  uint64
	skipIdx  int64
	skipKind byte
	// split: the pipeline ends with $changeStreamSplitLargeEvent.
	// skipFragments: resumed from a fragment's token, the fragments of
	// the event after skipIdx already returned.
	split         bool
	skipFragments uint32
	ready         []streamEvent // events produced but not yet returned
	last          bsoncore.Document
	// invalidated: the stream produced its invalidate event; nothing
	// comes after it.
	invalidated bool
	snaps       map[string]lookupSnapshot // updateLookup, per database, for one batch
	mu          sync.Mutex
}

// lookupSnapshot is a database's state for updateLookup, with the log's
// next sequence number when it was taken: it holds the writes of every
// entry below that, and is too old for the entries from there on.
type lookupSnapshot struct {
	snap    *storage.Snapshot
	logNext uint64
}

type streamEvent struct {
	doc   bsoncore.Document
	token bsoncore.Document
	seq   uint64 // its entry's sequence number
}

// Next satisfies docSource for the cursor registry; batches are read by
// nextEvents, never through it.
func (cs *changeStream) Next(context.Context) (bsoncore.Document, error) { return nil, io.EOF }

// Close releases nothing: a stream holds only a position in the log.
func (cs *changeStream) Close() error { return nil }

// startChangeStream opens the stream of an aggregate whose first stage is
// $changeStream and returns its first batch.
func startChangeStream(r *request, a *aggregateArgs, stages []bsoncore.Document, batchSize int) (bsoncore.Document, error) {
	if r.txn != nil {
		return nil, mongoerr.New(mongoerr.OperationNotSupportedInTransaction, "Operation not permitted in transaction :: caused by :: $changeStream cannot run in a transaction")
	}
	if !r.c.s.topo.replicaSet() {
		return nil, mongoerr.New(mongoerr.Location40573, "The $changeStream stage is only supported on replica sets")
	}
	args, err := parseChangeStreamArgs(stages[0].Index(0).Value())
	if err != nil {
		return nil, err
	}
	if err := r.refuseTimeseriesStream(a.coll); err != nil {
		return nil, err
	}
	scope, err := r.streamScope(a, args)
	if err != nil {
		return nil, err
	}
	rest, split, err := splitStageOf(stages[1:])
	if err != nil {
		return nil, err
	}
	if err := args.checkSplitResume(split); err != nil {
		return nil, err
	}
	post, err := compileStreamStages(r, rest)
	if err != nil {
		return nil, err
	}
	cs := &changeStream{s: r.c.s, scope: scope, args: args, post: post, skipIdx: -1, split: split}
	if err := cs.open(); err != nil {
		return nil, err
	}
	ns := r.aggregateNS(a)
	docs, err := cs.firstBatch(r, batchSize)
	if err != nil {
		return nil, labelStreamError(prefixed("Executor error during aggregate command on namespace: "+ns+" :: caused by :: ", err))
	}
	id := int64(0)
	if !cs.invalidated {
		cur, err := r.c.s.cursors.add(r.cursorPlace(ns), ns, &peekSource{src: cs}, false, r.c.id, r.session, r.cursorUser())
		if err != nil {
			return nil, err
		}
		id = cur.id
	}
	return streamReply(id, ns, "firstBatch", docs, cs.last), nil
}

// firstBatch is the aggregate's batch: the events logged so far, or with
// batchSize 0 none, positioned where the stream starts.
func (cs *changeStream) firstBatch(r *request, batchSize int) ([]bsoncore.Document, error) {
	switch batchSize {
	case 0:
		cs.last = resumeToken{at: r.c.s.clock.now(), seq: cs.reader.Seq(), kind: tokenHighWater}.doc()
		if cs.skipSeq != 0 {
			cs.last = cs.startToken()
		}
		return nil, nil
	case batchSizeAbsent:
		batchSize = defaultFirstBatch
	}
	return cs.nextEvents(r.ctx, batchSize)
}

// streamScope reads what the aggregate watches.
func (r *request) streamScope(a *aggregateArgs, args changeStreamArgs) (streamScope, error) {
	if args.allForCluster {
		if r.db != "admin" || !a.collectionless {
			return streamScope{}, mongoerr.New(mongoerr.InvalidOptions, "A $changeStream with 'allChangesForCluster:true' may only be opened on the 'admin' database, and with no collection name; found %s", r.aggregateNS(a))
		}
		return streamScope{cluster: true, branch: storage.DefaultBranch}, nil
	}
	if internalDatabase(r.db) {
		return streamScope{}, mongoerr.New(mongoerr.InvalidNamespace, "$changeStream may not be opened on the internal %s database", r.db)
	}
	if strings.HasPrefix(a.coll, "system.") {
		return streamScope{}, mongoerr.New(mongoerr.InvalidNamespace, "$changeStream may not be opened on the internal %s collection", r.ns(a.coll))
	}
	sc := streamScope{db: r.db, branch: r.currentBranch(), coll: a.coll, nsDB: r.db}
	if r.rev != "" {
		d, err := r.database(false)
		if err != nil {
			return sc, err
		}
		if d != nil {
			rev, err := r.revision(d)
			if err != nil {
				return sc, err
			}
			if rev.ReadOnly() {
				return sc, mongoerr.New(mongoerr.InvalidOptions, "a change stream watches a branch; %q is a tag or a commit, which never changes", r.rev)
			}
			sc.branch = rev.Branch
		} else {
			sc.branch = r.rev
		}
		sc.nsDB = r.db + "@" + r.rev
	}
	return sc, nil
}

func compileStreamStages(r *request, stages []bsoncore.Document) (*query.Pipeline, error) {
	if len(stages) == 0 {
		return nil, nil
	}
	arr := bsoncore.NewArrayBuilder()
	for _, st := range stages {
		name := value.FirstKey(st)
		if name == "$changeStream" {
			return nil, mongoerr.New(mongoerr.Location40602, "$changeStream is only valid as the first stage in a pipeline")
		}
		if !query.StageAfterChangeStream(name) {
			if _, err := query.CompilePipeline(bsoncore.NewArrayBuilder().AppendDocument(st).Build()); err != nil &&
				mongoerr.As(err).Code == mongoerr.Location40324 {
				return nil, err // not a stage at all
			}
			return nil, mongoerr.New(mongoerr.IllegalOperation, "%s is not permitted in a $changeStream pipeline", name)
		}
		arr.AppendDocument(st)
	}
	env, err := r.queryEnv(nil, nil)
	if err != nil {
		return nil, err
	}
	return query.CompilePipelineOpts(arr.Build(), query.PipelineOptions{Env: env, DB: r.db})
}

// open positions the stream's reader.
func (cs *changeStream) open() error {
	l := cs.s.engine.Changes()
	var start uint64
	switch {
	case cs.args.resumeAfter != nil:
		t := cs.args.resumeAfter
		if t.kind == tokenInvalidate {
			return mongoerr.New(mongoerr.InvalidResumeToken, "Attempting to resume a change stream using 'resumeAfter' is not allowed from an invalidate notification")
		}
		start = cs.resumeAt(*t)
	case cs.args.startAfter != nil:
		start = cs.resumeAt(*cs.args.startAfter)
	case !cs.args.startAt.isZero():
		seq, err := l.SeqAt(cs.args.startAt.stamp())
		if err != nil {
			return historyLost(err)
		}
		if st := l.Stats(); st.FirstAt > cs.args.startAt.stamp() && st.First > 1 {
			return historyLost(storage.ErrChangeHistoryLost)
		}
		start = seq
	}
	r, err := l.Reader(start)
	if err != nil {
		return historyLost(err)
	}
	cs.reader = r
	return nil
}

// startToken is the token a stream resumed from an event starts at: that
// event's, which resumes after it again.
func (cs *changeStream) startToken() bsoncore.Document {
	if cs.args.startAfter != nil {
		return cs.args.startAfter.doc()
	}
	return cs.args.resumeAfter.doc()
}

// resumeAt is where a token says to go on.
func (cs *changeStream) resumeAt(t resumeToken) uint64 {
	if t.kind != tokenHighWater {
		cs.skipSeq, cs.skipIdx, cs.skipKind = t.seq, int64(t.idx), t.kind
	}
	if t.split { // the event comes again, less the fragments returned
		cs.skipIdx, cs.skipFragments = int64(t.idx)-1, t.fragment+1
	}
	return t.seq
}

func historyLost(err error) error {
	if errors.Is(err, storage.ErrChangeHistoryLost) {
		return mongoerr.New(mongoerr.ChangeStreamHistoryLost, "Resume of change stream was not possible, as the resume point may no longer be in the oplog.")
	}
	return err
}

// nextEvents returns up to n events (n <= 0: no count limit) of those
// logged so far, and sets cs.last to the batch's postBatchResumeToken.
func (cs *changeStream) nextEvents(ctx context.Context, n int) ([]bsoncore.Document, error) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	defer func() { cs.snaps = nil }()
	var docs []bsoncore.Document
	size := 0
	var lastSeq uint64
	for !cs.invalidated || len(cs.ready) > 0 {
		if len(cs.ready) == 0 {
			more, err := cs.fill(ctx)
			if err != nil {
				return nil, err
			}
			if !more {
				break
			}
			continue
		}
		ev := cs.ready[0]
		if (n > 0 && len(docs) >= n) || (len(docs) > 0 && size+len(ev.doc) > maxBatchBytes) {
			return docs, nil
		}
		cs.ready = cs.ready[1:]
		docs = append(docs, ev.doc)
		size += len(ev.doc)
		cs.last, lastSeq = ev.token, ev.seq
	}
	// After a batch whose last event is of the newest entry read, the
	// token is that event's, as mongod's is when the event is the newest
	// in its oplog; else the position reached.
	if !cs.invalidated && (len(docs) == 0 || cs.reader.Seq() != lastSeq+1) {
		cs.last = resumeToken{at: highWaterTime(cs.s.clock.now(), time.Now()), seq: cs.reader.Seq(), kind: tokenHighWater}.doc()
	}
	return docs, nil
}

// highWaterTime is the time of a postBatchResumeToken at the end of the
// log: the cluster time, or the wall clock's second when that is later,
// so that an idle stream's token moves on as mongod's does with the
// periodic no-op writes of an idle replica set. A write in that second
// still gets a later time (increment 1 and up).
func highWaterTime(now clusterTime, wall time.Time) clusterTime {
	if s := uint32(wall.Unix()); s > now.t {
		return clusterTime{t: s}
	}
	return now
}

// fill reads the next entry into cs.ready; false at the end of the log.
func (cs *changeStream) fill(ctx context.Context) (bool, error) {
	e, ok, err := cs.reader.Next()
	if err != nil {
		return false, historyLost(err)
	}
	if !ok {
		return false, nil
	}
	if !cs.watches(e) {
		return true, nil
	}
	for i, ev := range e.Events {
		if e.Seq == cs.skipSeq && int64(i) <= cs.skipIdx {
			if int64(i) == cs.skipIdx && cs.skipKind == tokenEvent && cs.skipFragments == 0 && cs.shows(ev) && cs.invalidates(ev) {
				// Resumed after the invalidating event itself: its
				// invalidate is still to come, as mongod's is.
				cs.queueInvalidate(e, i)
				break
			}
			continue
		}
		if err := cs.produce(ctx, e, i, ev); err != nil {
			return false, err
		}
		if cs.invalidated {
			break
		}
	}
	return true, nil
}

// watches reports whether an entry is within the stream's scope.
func (cs *changeStream) watches(e storage.ChangeEntry) bool {
	if e.Branch != cs.scope.branch && e.Branch != "" { // "": a database's ref events
		return false
	}
	if cs.scope.cluster {
		return !internalDatabase(e.DB)
	}
	return e.DB == cs.scope.db
}

// produce turns one stored event into what the stream returns: nothing,
// the event, or the event and an invalidate.
func (cs *changeStream) produce(ctx context.Context, e storage.ChangeEntry, i int, ev storage.ChangeEvent) error {
	if !cs.shows(ev) {
		return nil
	}
	token := resumeToken{at: stampTime(e.At), seq: e.Seq, idx: uint32(i)}
	doc, err := cs.eventDoc(ctx, e, ev, token)
	if err != nil {
		return err
	}
	if err := cs.emit(doc, token, e.Seq); err != nil {
		return err
	}
	if cs.invalidates(ev) {
		if cs.args.startAfter != nil && cs.args.startAfter.kind == tokenInvalidate && cs.args.startAfter.seq == e.Seq &&
			cs.args.startAfter.idx == uint32(i) {
			return nil // started after this very invalidate
		}
		cs.queueInvalidate(e, i)
	}
	return nil
}

// queueInvalidate queues the invalidate that event i of e causes.
func (cs *changeStream) queueInvalidate(e storage.ChangeEntry, i int) {
	token := resumeToken{at: stampTime(e.At), seq: e.Seq, idx: uint32(i), kind: tokenInvalidate}
	cs.ready = append(cs.ready, streamEvent{doc: invalidateDoc(token, e), token: token.doc(), seq: e.Seq})
	cs.invalidated = true
}

// emit runs the stream's own stages on an event.
func (cs *changeStream) emit(doc bsoncore.Document, t resumeToken, seq uint64) error {
	if cs.post == nil {
		return cs.deliver(doc, t, seq)
	}
	token := t.doc()
	out, err := query.Drain(context.Background(), cs.post.Run(query.NewSliceStream([]bsoncore.Document{doc})))
	if err != nil {
		return err
	}
	for _, d := range out {
		id, err := d.LookupErr("_id")
		if err != nil || id.Type != bsoncore.TypeEmbeddedDocument || !bytes.Equal(id.Data, token) {
			found := bsoncore.NewDocumentBuilder()
			if err == nil {
				found.AppendValue("_id", id)
			}
			return mongoerr.New(mongoerr.ChangeStreamFatalError, "Encountered an event whose _id field, which contains the resume token, was modified by the pipeline. Modifying the _id field of an event makes it impossible to resume the stream from that point. Only transformations that retain the unmodified _id field are allowed. Expected: %s but found: %s",
				value.Format(value.DocValue(bsoncore.NewDocumentBuilder().AppendDocument("_id", token).Build())), value.Format(value.DocValue(found.Build())))
		}
		if err := cs.deliver(d, t, seq); err != nil {
			return err
		}
	}
	return nil
}

// shows reports whether the stream reports an event of its scope.
func (cs *changeStream) shows(ev storage.ChangeEvent) bool {
	switch ev.Op {
	case "create", "createIndexes", "dropIndexes", "modify":
		if !cs.args.expanded {
			return false
		}
	case "dropDatabase":
		return cs.scope.coll == ""
	}
	if strings.HasPrefix(ev.Op, "dumbo") {
		return cs.args.versionEvents
	}
	if ev.Coll == "" {
		return true
	}
	if cs.scope.coll != "" {
		return ev.Coll == cs.scope.coll || (ev.Op == "rename" && ev.To == cs.scope.coll)
	}
	return !strings.HasPrefix(ev.Coll, "system.")
}

// invalidates reports whether an event ends the stream: the watched
// collection dropped or renamed, the watched database dropped.
func (cs *changeStream) invalidates(ev storage.ChangeEvent) bool {
	switch {
	case cs.scope.cluster:
		return false
	case cs.scope.coll != "":
		return ev.Op == "drop" || ev.Op == "rename"
	default:
		return ev.Op == "dropDatabase"
	}
}

// await waits until the log grows or ctx ends; false when ctx ended.
func (cs *changeStream) await(ctx context.Context, wait <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-wait:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	return false
}

// defaultAwait is how long a getMore on a change stream waits for events
// without a maxTimeMS, as mongod's awaitData cursors do.
const defaultAwait = time.Second

// streamGetMoreReply answers a getMore on a change stream cursor: the
// events logged since the last batch, waiting for the first up to
// maxTimeMS. After an invalidate the cursor is closed (id 0).
func (r *request) streamGetMoreReply(cur *cursor, batchSize int) (bsoncore.Document, error) {
	docs, err := r.streamBatch(cur, batchSize)
	id := cur.id
	if err != nil || cur.stream.done() {
		r.c.s.cursors.remove(cur.id) // takes cur.mu: after streamBatch
		id = 0
	}
	if err != nil {
		return nil, labelStreamError(prefixed("Executor error during getMore :: caused by :: ", err))
	}
	return streamReply(id, cur.ns, "nextBatch", docs, cur.stream.last), nil
}

// streamBatch reads a change stream cursor's next batch, or says why it
// was killed.
func (r *request) streamBatch(cur *cursor, batchSize int) ([]bsoncore.Document, error) {
	cur.mu.Lock()
	defer cur.mu.Unlock()
	if cur.killed != nil || cur.src == nil {
		return nil, cmp.Or(cur.killed, error(mongoerr.New(mongoerr.CursorNotFound, "cursor id %d not found", cur.id)))
	}
	r.c.s.cursors.moveOwner(cur, r.c.id)
	cur.lastUsed = time.Now()
	cur.reader.Store(&opRef{c: r.c, opid: r.c.currentOpID()})
	defer cur.reader.Store(nil)
	return r.streamGetMore(cur.stream, batchSize)
}

// prefixed is err with mongod's context prefix on its message.
func prefixed(prefix string, err error) error {
	me := mongoerr.As(err)
	if me.Code != mongoerr.ChangeStreamFatalError {
		return err
	}
	out := *me
	out.Msg = prefix + me.Msg
	return &out
}

// done reports whether the stream has returned everything it ever will.
func (cs *changeStream) done() bool {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.invalidated && len(cs.ready) == 0
}

// streamGetMore reads a getMore's batch, waiting for the first event.
func (r *request) streamGetMore(cs *changeStream, batchSize int) ([]bsoncore.Document, error) {
	deadline := time.Now().Add(defaultAwait)
	if d, ok := r.ctx.Deadline(); ok {
		deadline = d.Add(-time.Millisecond) // answer before the command's own deadline
	}
	ctx := context.WithoutCancel(r.ctx)
	for {
		wait := r.c.s.engine.Changes().Wait()
		docs, err := cs.nextEvents(ctx, batchSize)
		if err != nil || len(docs) > 0 || cs.done() {
			return docs, err
		}
		left := time.Until(deadline)
		r.awaited = true
		if left <= 0 || !cs.await(r.ctx, wait, left) {
			return docs, nil
		}
	}
}

// labelStreamError adds the change-stream error label a driver decides
// on: NonResumableChangeStreamError for the codes of that category, and
// ResumableChangeStreamError for resumable ones.
func labelStreamError(err error) error {
	me := mongoerr.As(err)
	switch {
	case me.Code.In(mongoerr.NonResumableChangeStreamError):
		return withErrorLabel(me, "NonResumableChangeStreamError")
	case resumableStreamError(me.Code):
		return withErrorLabel(me, "ResumableChangeStreamError")
	}
	return err
}

// resumableStreamError reports the codes mongod labels
// ResumableChangeStreamError on a change stream's getMore, after which a
// driver resumes the stream: those of the retriable, network and
// retargetting categories, RetryChangeStream and
// FailedToSatisfyReadPreference.
func resumableStreamError(c mongoerr.Code) bool {
	return c.In(mongoerr.RetriableError|mongoerr.NetworkError|mongoerr.NeedRetargettingError) ||
		c == mongoerr.RetryChangeStream || c == mongoerr.FailedToSatisfyReadPreference
}

// streamReply is a cursor reply with the batch's postBatchResumeToken.
func streamReply(id int64, ns, batchKey string, docs []bsoncore.Document, pbrt bsoncore.Document) bsoncore.Document {
	size := 256 + clusterTimeRoom + len(pbrt)
	for _, d := range docs {
		size += len(d) + 8
	}
	dst := make([]byte, 0, size)
	idx, dst := bsoncore.AppendDocumentStart(dst)
	cidx, dst := bsoncore.AppendDocumentElementStart(dst, "cursor")
	dst = appendDocArray(dst, batchKey, docs)
	dst = bsoncore.AppendDocumentElement(dst, "postBatchResumeToken", pbrt)
	dst = bsoncore.AppendInt64Element(dst, "id", id)
	dst = bsoncore.AppendStringElement(dst, "ns", ns)
	dst, _ = bsoncore.AppendDocumentEnd(dst, cidx)
	dst = bsoncore.AppendDoubleElement(dst, "ok", 1)
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return dst
}
