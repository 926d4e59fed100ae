package server

import (
	"cmp"
	"context"
	"errors"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/plan"
	"github.com/dumbodb/dumbodb/query"
	"github.com/dumbodb/dumbodb/storage"
	"github.com/dumbodb/dumbodb/value"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// request is one command being run on a connection.
type request struct {
	c   *conn
	ctx context.Context
	cmd bsoncore.Document
	// generic are cmd's generic fields, found as the request is made.
	generic genericArgs
	name    string // the command name as sent (first key)
	db      string // $db without its "@revision" part
	rev     string // the "@revision" part of $db ("" when absent)
	// awaited: the command waited for news on purpose (an awaitable
	// hello, a getMore of a tailable or change-stream cursor), which is
	// no slowness to log.
	awaited bool
	spec    *command
	// retry is set for a retryable write (lsid and txnNumber).
	retry *retryableWrite
	// readLevel is the readConcern level named ("" when none); readAt
	// the time a snapshot read reads at (zero: the current state), and
	// afterTime whether afterClusterTime was given.
	readLevel   string
	readAt      clusterTime
	readAtGiven bool // readAt is the command's atClusterTime
	afterTime   bool
	// txn is the transaction the command runs in (nil: none), and
	// endTxnStatement lets the session's next statement run.
	txn             *transaction
	endTxnStatement func()
	// session is the command's logical session (nil: none).
	session *storage.SessionKey
	// opTime is the cluster time of the command's write (zero: none).
	opTime clusterTime
	// createUUID is the UUID a create makes its collection with (nil: a
	// new one), given by applyOps.
	createUUID *[16]byte
	// wcError is the writeConcernError the reply carries when the
	// command succeeds (nil: its write concern is satisfied).
	wcError bsoncore.Document
	// wrote are the branches the command changed, which automatic
	// commits commit, and note describes its writes for them
	// (autocommit.go).
	wrote []writtenBranch
	note  *storage.WriteNote
	// timeLimited: the command has a time limit (a positive maxTimeMS).
	timeLimited bool
	// labelsOverride are the error labels a failCommand fail point that
	// failed the command named (nil: errorLabels decides them).
	labelsOverride bsoncore.Array
	// primaryWrites follows a retryable write through the
	// onPrimaryTransactionalWrite fail point (nil: the fail point is off).
	primaryWrites *primaryWrites
}

func newRequest(c *conn, cmd bsoncore.Document) (*request, error) {
	first, err := cmd.IndexErr(0)
	if err != nil {
		return nil, mongoerr.New(mongoerr.FailedToParse, "Command document is empty")
	}
	r := &request{c: c, ctx: c.ctx, cmd: cmd, name: first.Key()}
	r.generic.collect(cmd)
	dbv, err := r.argErr("$db")
	if err != nil {
		return nil, mongoerr.New(mongoerr.Location40571, "OP_MSG requests require a $db argument")
	}
	db, ok := dbv.StringValueOK()
	if !ok {
		return nil, typeMismatch(r.name, "$db", dbv, "string")
	}
	r.db, r.rev = splitDBName(db)
	r.spec = lookupCommand(r.name)
	if r.spec == nil {
		return nil, mongoerr.New(mongoerr.CommandNotFound, "no such command: '%s'", r.name)
	}
	return r, nil
}

// run runs the command, its error or write concern error labelled as
// mongod labels them.
func (r *request) run() (bsoncore.Document, error) {
	reply, err := r.execute()
	if reply == nil && err == nil {
		return nil, nil // the connection closes without a reply
	}
	return r.labelled(reply, err)
}

func (r *request) execute() (bsoncore.Document, error) {
	if t := clientClusterTime(r.arg("$clusterTime")); !t.isZero() && r.c.s.topo.replicaSet() {
		r.c.s.clock.advance(t)
	}
	if err := validateDBName(r.db); err != nil {
		return nil, err
	}
	if err := r.applyAPIVersion(); err != nil {
		return nil, err
	}
	if err := r.authorize(); err != nil {
		r.abortRefusedStatement()
		return nil, err
	}
	if err := r.refuseOnReplica(r.spec.need.action); err != nil {
		return nil, err
	}
	if r.spec.access == adminOnly && r.db != "admin" {
		return nil, mongoerr.New(mongoerr.Unauthorized, "%s may only be run against the admin database.", r.name)
	}
	if err := r.applyWriteConcern(); err != nil {
		return nil, err
	}
	cancel, err := r.applyMaxTime()
	if err != nil {
		return nil, err
	}
	defer cancel()
	f, fired := r.c.s.failCommand.trigger(canonicalCommand(r.name), r.appName())
	if fired {
		if done, err := r.failBeforeRunning(f); done {
			return nil, err
		}
	}
	if err := r.sessionFields(); err != nil {
		return nil, err
	}
	if r.endTxnStatement != nil {
		defer r.endTxnStatement()
	}
	if err := r.applyReadConcern(); err != nil {
		return nil, err
	}
	return r.runUnderFailPoints(f, fired)
}

// failBeforeRunning is what a failCommand fail point that fired does
// before the command takes its session, as on mongod: a transaction's
// statement it fails neither starts nor ends the transaction. done says
// the command goes no further: it failed with err, or (err nil) its
// connection closes without a reply.
func (r *request) failBeforeRunning(f failure) (done bool, err error) {
	if err := f.wait(r.ctx); err != nil {
		return true, err
	}
	if f.closeConn {
		return true, nil
	}
	if f.err != nil || f.wcError != nil {
		r.labelsOverride = f.labels
	}
	return f.err != nil, f.err
}

// runUnderFailPoints runs the command as the test fail points that are
// on have it, once a failCommand that fired has done what it does before
// (failBeforeRunning): maxTimeAlwaysTimeOut (mongod's first check for
// interruption, before the command runs), then the command, a retryable
// write under onPrimaryTransactionalWrite, then failCommand's write
// concern error.
func (r *request) runUnderFailPoints(f failure, fired bool) (bsoncore.Document, error) {
	if r.timeLimited {
		if err := r.c.s.maxTimeFailPoint.expired(); err != nil {
			return nil, err
		}
	}
	if r.retry != nil && r.txn == nil {
		r.primaryWrites = r.c.s.retryFailPoint.watch()
	}
	reply, err := r.runHandler()
	if r.primaryWrites.closesConnection() {
		return nil, nil // written (or not), but the client never hears of it
	}
	if err == nil && r.note != nil { // a write noted for automatic commits (commandNote)
		reply = r.commitWrites(reply)
	}
	if err == nil && fired && f.wcError != nil {
		reply = withWriteConcernError(reply, f.wcError)
	}
	if err == nil && r.wcError != nil {
		reply = withWriteConcernError(reply, r.wcError)
	}
	err = r.endStatement(reply, err)
	if err != nil && r.wcError != nil {
		err = failedWithWriteConcernError(err, r.wcError)
	}
	return reply, err
}

// Restarting a transaction's first statement (runHandler): how often, and
// how long it waits each time for the transaction that holds its document.
const (
	maxStatementRestarts = 100
	maxRestartWait       = time.Second
)

// runHandler runs the command. A transaction's first statement that meets
// a write conflict has read nothing the transaction would see differently
// on a newer state, so instead of failing it starts the transaction over:
// it drops what it holds (so that waiters never wait on each other), waits
// for the holder of the document to end, and runs again at the current
// time. mongod answers WriteConflict at once; this turns a contended
// document's conflicts into queueing (TPC-C's warehouse row).
func (r *request) runHandler() (bsoncore.Document, error) {
	if h, ok := r.virtualCollectionHandler(); ok {
		return h(r)
	}
	for attempt := 0; ; attempt++ {
		reply, err := r.spec.handler(r)
		var ce *storage.ConflictError
		if r.txn == nil || !errors.As(err, &ce) || !r.txn.restartable() || r.readAtGiven || attempt == maxStatementRestarts {
			return reply, err
		}
		r.txn.release()
		r.txn.readAt, r.readAt = clusterTime{}, clusterTime{}
		if ce.Holder != nil {
			timer := time.NewTimer(maxRestartWait)
			select {
			case <-ce.Holder:
			case <-timer.C:
				return reply, err
			case <-r.ctx.Done():
				timer.Stop()
				return reply, err
			}
			timer.Stop()
		}
	}
}

// maxTimeLimit is the largest maxTimeMS mongod accepts.
const maxTimeLimit = math.MaxInt32

// applyMaxTime bounds every command by its maxTimeMS (0 or absent: no
// bound), parsed as mongod parses it: a whole number in [0, 2^31-1].
func (r *request) applyMaxTime() (context.CancelFunc, error) {
	v, err := r.argErr("maxTimeMS")
	if err != nil {
		return func() {}, nil
	}
	switch {
	case value.IsNumber(v):
	case v.Type == bsoncore.TypeNull || (r.name != "aggregate" && r.name != "getMore"):
		// mongod's generic argument reader; aggregate's and getMore's own
		// typed field lets only a null through to it.
		return nil, mongoerr.New(mongoerr.BadValue, "maxTimeMS must be a number")
	default:
		return nil, typesMismatch(r.name, "maxTimeMS", v, numberTypes)
	}
	// mongod reads the number as a 64-bit integer, saturating what does
	// not fit, and reports that integer. aggregate's own parser checks
	// the sign first, with the IDL's bound error.
	n := saturatedInt64(v)
	if n < 0 && r.name == "aggregate" {
		return nil, mongoerr.New(mongoerr.Location51024, "BSON field 'maxTimeMS' value must be >= 0, actual value '%d'", n)
	}
	if n < 0 || n > maxTimeLimit {
		return nil, mongoerr.New(mongoerr.BadValue, "%d value for maxTimeMS is out of range [0, %d]", n, maxTimeLimit)
	}
	if v.Type == bsoncore.TypeDouble && v.Double() != math.Trunc(v.Double()) {
		return nil, mongoerr.New(mongoerr.BadValue, "maxTimeMS has non-integral value")
	}
	if n == 0 {
		return func() {}, nil
	}
	// A getMore's maxTimeMS is how long an awaitData cursor waits for
	// news, which mongod does not count as the operation's time limit.
	r.timeLimited = r.name != "getMore"
	ctx, cancel := context.WithTimeout(r.ctx, time.Duration(n)*time.Millisecond)
	r.ctx = ctx
	return cancel, nil
}

// saturatedInt64 is a number as mongod's safeNumberLong reads it: a double
// truncated, clamped to the int64 range (NaN is 0); a decimal rounded to
// the nearest integer.
func saturatedInt64(v bsoncore.Value) int64 {
	switch v.Type {
	case bsoncore.TypeInt32:
		return int64(v.Int32())
	case bsoncore.TypeInt64:
		return v.Int64()
	}
	f := value.ToFloat(v)
	if v.Type == bsoncore.TypeDecimal128 {
		f = math.RoundToEven(f)
	}
	switch {
	case f != f:
		return 0
	case f >= 1<<63:
		return math.MaxInt64
	case f < -(1 << 63):
		return math.MinInt64
	}
	return int64(f)
}

// refuseTransactions answers as a standalone mongod does (--standalone):
// transaction and retryable-write fields need a replica set. Refusing them
// up front means no write made "inside a transaction" is applied outside
// one.
func refuseTransactions(cmd bsoncore.Document) error {
	for _, f := range []string{"txnNumber", "startTransaction", "autocommit"} {
		if _, err := cmd.LookupErr(f); err == nil {
			return mongoerr.New(mongoerr.IllegalOperation, "Transaction numbers are only allowed on a replica set member or mongos")
		}
	}
	return nil
}

// collectionArg reads the collection name from the command's first field.
func (r *request) collectionArg() (string, error) {
	return r.collectionArgCode(mongoerr.InvalidNamespace)
}

// idlCollectionArg reads the collection name of a command whose namespace
// mongod's IDL parser reads (createIndexes, dropIndexes): a name that is
// not a string is BadValue there, not InvalidNamespace.
func (r *request) idlCollectionArg() (string, error) {
	return r.collectionArgCode(mongoerr.BadValue)
}

func (r *request) collectionArgCode(notString mongoerr.Code) (string, error) {
	name, err := r.collectionName(notString)
	if err != nil {
		return "", err
	}
	if err := validateCollectionName(r.db, name); err != nil {
		return "", err
	}
	return name, nil
}

// collectionName reads the command's first field, a collection's name,
// unchecked.
func (r *request) collectionName(notString mongoerr.Code) (string, error) {
	v := r.cmd.Index(0).Value()
	name, ok := v.StringValueOK()
	if !ok {
		return "", badNamespaceType(canonicalCommand(r.name), notString, v)
	}
	return name, nil
}

// namespaceOrUUID are the commands whose first field mongod reads as a
// collection's name or UUID, and words its error on anything else so.
var namespaceOrUUID = map[string]bool{"find": true, "count": true, "distinct": true, "listIndexes": true}

// badNamespaceType is mongod's error for a collection named by something
// other than a string.
func badNamespaceType(cmd string, code mongoerr.Code, v bsoncore.Value) error {
	if namespaceOrUUID[cmd] {
		return mongoerr.New(mongoerr.InvalidNamespace, "Failed to parse namespace element")
	}
	return mongoerr.New(code, "collection name has invalid type %s", value.TypeName(v.Type))
}

func (r *request) ns(coll string) string { return r.db + "." + coll }

// cursorPlace is where a cursor on ns ("db.coll") opened by r reads.
func (r *request) cursorPlace(ns string) cursorPlace {
	return cursorPlace{db: r.db, rev: cmp.Or(r.rev, r.currentBranch()), coll: strings.TrimPrefix(ns, r.db+".")}
}

func isCmdNamespace(ns string) bool { return strings.HasSuffix(ns, ".$cmd") && len(ns) > len(".$cmd") }

// unwrapQuery takes the command out of a legacy {$query: {...}} wrapper.
func unwrapQuery(q bsoncore.Document) bsoncore.Document {
	if inner, ok := q.Lookup("$query").DocumentOK(); ok {
		return inner
	}
	return q
}

// withDB returns cmd with a $db field appended.
func withDB(cmd bsoncore.Document, db string) bsoncore.Document {
	els, _ := cmd.Elements()
	b := bsoncore.NewDocumentBuilder()
	for _, el := range els {
		if el.Key() != "$db" {
			b.AppendValue(el.Key(), el.Value())
		}
	}
	return b.AppendString("$db", db).Build()
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// collEnv is queryEnv for a command on collection coll: without a
// collation of its own it takes the collection's default (mongod's rule).
func (r *request) collEnv(coll string, collation, let bsoncore.Document) (*query.Env, error) {
	if collation == nil {
		collation = r.defaultCollation(coll)
	}
	return r.queryEnv(collation, let)
}

// defaultCollation is the collation coll was created with (nil: simple,
// or no such collection).
func (r *request) defaultCollation(coll string) bsoncore.Document {
	snap, err := r.snapshot()
	if err != nil {
		return nil
	}
	ci, ok := snap.Collection(coll)
	return createdCollation(ci, ok)
}

// createdCollation is defaultCollation of a collection already looked up
// (ok false: none such).
func createdCollation(ci storage.CollectionInfo, ok bool) bsoncore.Document {
	if !ok || ci.Options == nil {
		return nil
	}
	d, _ := ci.Options.Lookup("collation").DocumentOK()
	return d
}

// queryEnv builds the query environment of a command from its collation
// and let documents (either may be nil), with the server's JavaScript;
// let's expressions stop with the command (maxTimeMS, killOp).
func (r *request) queryEnv(collation, let bsoncore.Document) (*query.Env, error) {
	var coll *value.Collation
	if collation != nil {
		var err error
		if coll, err = value.ParseCollation(collation); err != nil {
			return nil, err
		}
	}
	return query.NewCommandEnv(r.ctx, coll, let, r.c.s.js, r.jsScope())
}

// jsScope is the scope of the request's JavaScript runtimes: its
// database and its user, as mongod pools its scopes.
func (r *request) jsScope() string {
	if !r.c.s.cfg.Auth {
		return r.db // no users: one scope per database
	}
	scope := r.db
	if u := r.c.currentAuth().user; u != nil {
		scope += "\x00" + u.DB + "\x00" + u.Name
	}
	return scope
}

// checkHint validates a write or aggregate command's hint against the
// indexes of the collection it names.
func (r *request) checkHint(hint bsoncore.Value) error {
	if hint.Type == 0 {
		return nil
	}
	coll, err := r.collectionArg()
	if err != nil {
		return err
	}
	snap, err := r.snapshot()
	if err != nil {
		return err
	}
	if info, ok := snap.Collection(coll); ok && isTimeseries(info) {
		// Its indexes are its buckets', hinted in the measurements' terms.
		o, _ := timeseriesOf(info)
		hint, coll = timeseriesHint([]bsoncore.Document{o.unpackStage()}, hint), bucketsPrefix+coll
	}
	return plan.CheckHint(snap, coll, hint)
}
