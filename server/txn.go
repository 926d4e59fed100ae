package server

import (
	"cmp"
	"errors"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/storage"
	"github.com/dumbodb/dumbodb/value"
)

// Multi-document transactions (docs/design/transactions.md): a session's
// statements with autocommit: false run in one storage.Txn on one branch
// of one database, committed or aborted as a unit.

// DefaultTransactionLifetime is transactionLifetimeLimitSeconds: an open
// transaction older than this is aborted.
const DefaultTransactionLifetime = 60 * time.Second

type txnState int

const (
	txnActive txnState = iota
	txnCommitted
	txnAborted
)

// transaction is a session's transaction. Its mutex is held by the
// statement running in it, so a session's statements run one at a time.
type transaction struct {
	counts  *txnCounters // the server's, counting how it ends
	mu      sync.Mutex
	number  int64
	started time.Time
	state   txnState // guarded by mu
	// readAt is the time every part reads at, fixed when the first opens.
	readAt clusterTime
	parts  []*txnPart // one per database, in the order first used
	// statements counts the statements run so far, the current included.
	statements int
}

// restartable reports whether the transaction may start over: its only
// statement is the one running, so nothing it read would change. Called
// with mu held.
func (t *transaction) restartable() bool { return t.state == txnActive && t.statements == 1 }

// txnPart is the transaction's storage transaction on one database, begun
// by the first statement that reads or writes it.
type txnPart struct {
	db  string
	rev string // the "@revision" its first statement named
	st  *storage.Txn
}

// abort ends an active transaction, dropping its writes. Called with mu.
func (t *transaction) abort() {
	if t.state != txnActive {
		return
	}
	t.state = txnAborted
	t.counts.aborted.Add(1)
	t.release()
}

// release ends every part's storage transaction (without committing).
func (t *transaction) release() {
	for _, p := range t.parts {
		p.st.Abort()
	}
	t.parts = nil
}

// abortIfActive aborts from outside a statement (session end, expiry).
func (t *transaction) abortIfActive() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.abort()
}

// joinTransaction attaches a statement with autocommit: false to its
// session's transaction, starting it with startTransaction: true. The
// returned function ends the statement (unlocks the transaction).
func (r *request) joinTransaction(k storage.SessionKey, number int64) (func(), error) {
	if v, err := r.argErr("autocommit"); err == nil {
		if b, ok := v.BooleanOK(); !ok || b {
			return nil, mongoerr.New(mongoerr.InvalidOptions, "Specifying autocommit=true is not allowed.")
		}
	}
	start := false
	if v, err := r.argErr("startTransaction"); err == nil {
		if b, ok := v.BooleanOK(); !ok || !b {
			return nil, mongoerr.New(mongoerr.InvalidOptions, "Specifying startTransaction=false is not allowed.")
		}
		start = true
	}
	if !r.spec.inTransaction {
		return nil, mongoerr.New(mongoerr.OperationNotSupportedInTransaction, "Cannot run '%s' in a multi-document transaction.", r.name)
	}
	t, err := r.c.s.sessions.transaction(k, number, start)
	if err != nil && r.name == "commitTransaction" {
		t, err = r.committedBefore(k, number, err)
	}
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	if err := r.checkTransactionStatement(t, start); err != nil {
		t.mu.Unlock()
		return nil, err
	}
	t.statements++
	r.txn = t
	return t.mu.Unlock, nil
}

// transaction finds (or, with start, begins) a session's transaction.
func (tab *sessionTable) transaction(k storage.SessionKey, number int64, start bool) (*transaction, error) {
	tab.mu.Lock()
	defer tab.mu.Unlock()
	s := tab.m[k]
	if s == nil {
		s = &session{lastUse: time.Now()}
		tab.m[k] = s
	}
	switch {
	case number < s.txnNumber:
		return nil, mongoerr.New(mongoerr.TransactionTooOld, "txnNumber %d is less than last txnNumber %d seen in session", number, s.txnNumber)
	case start && s.txn != nil && number == s.txnNumber:
		return nil, mongoerr.New(mongoerr.ConflictingOperationInProgress,
			"Cannot start transaction %d on session because a newer transaction or the same transaction has already started", number)
	case start:
		if s.txn != nil {
			go s.txn.abortIfActive() // a newer transaction aborts the old one, as on mongod
		}
		s.txnNumber = number
		s.txn = &transaction{counts: &tab.txns, number: number, started: time.Now()}
		tab.txns.started.Add(1)
		return s.txn, nil
	case s.txn == nil || s.txn.number != number:
		return nil, noSuchTransaction("Given transaction number %d does not match any in-progress transactions.", number)
	}
	return s.txn, nil
}

// abortRefusedStatement aborts the transaction of a statement refused
// before it joined it (not authorized): a statement of a transaction that
// fails aborts it, whatever failed, as on mongod.
func (r *request) abortRefusedStatement() {
	if _, err := r.argErr("autocommit"); err != nil || !r.c.s.topo.replicaSet() {
		return
	}
	v, err := r.argErr("lsid")
	if err != nil {
		return
	}
	k, err := parseSessionID("lsid", v)
	number, ok, numErr := r.txnNumberArg()
	if err != nil || numErr != nil || !ok {
		return
	}
	k.UID = r.sessionUID()
	r.c.s.sessions.abortTransaction(k, number)
}

// abortTransaction aborts a session's transaction number, if it is the
// session's current one.
func (tab *sessionTable) abortTransaction(k storage.SessionKey, number int64) {
	tab.mu.Lock()
	var t *transaction
	if s := tab.m[k]; s != nil && s.txn != nil && s.txn.number == number {
		t = s.txn
	}
	tab.mu.Unlock()
	if t != nil {
		t.abortIfActive()
	}
}

// committedBefore answers a commitTransaction for a transaction the
// session table does not know (the server restarted since, or the session
// expired): if a database recorded its commit, the commit is acknowledged
// again; else the lookup's error stands.
func (r *request) committedBefore(k storage.SessionKey, number int64, lookupErr error) (*transaction, error) {
	var me *mongoerr.Error
	if !errors.As(lookupErr, &me) || me.Code != mongoerr.NoSuchTransaction {
		return nil, lookupErr
	}
	committed, err := r.c.s.engine.TransactionCommitted(r.ctx, k, number)
	if err != nil || !committed {
		return nil, lookupErr
	}
	return r.c.s.sessions.recordCommitted(k, number), nil
}

// recordCommitted makes transaction number of a session known as
// committed, unless the session has moved on to a later one.
func (tab *sessionTable) recordCommitted(k storage.SessionKey, number int64) *transaction {
	tab.mu.Lock()
	defer tab.mu.Unlock()
	t := &transaction{counts: &tab.txns, number: number, started: time.Now(), state: txnCommitted}
	if s := tab.m[k]; s != nil && s.txnNumber <= number {
		s.txnNumber, s.txn = number, t
	}
	return t
}

// checkTransactionStatement applies mongod's rules to a statement of t.
// Called with t.mu held.
func (r *request) checkTransactionStatement(t *transaction, start bool) error {
	switch {
	case t.state == txnAborted && r.name != "abortTransaction":
		return noSuchTransaction("Transaction %d has been aborted.", t.number)
	case t.state == txnCommitted && r.name != "commitTransaction":
		return mongoerr.New(mongoerr.TransactionCommitted, "Transaction %d has been committed.", t.number)
	}
	if _, err := r.argErr("readConcern"); err == nil && !start {
		return mongoerr.New(mongoerr.InvalidOptions, "Only the first command in a transaction may specify a readConcern")
	}
	if _, err := r.argErr("writeConcern"); err == nil && r.name != "commitTransaction" && r.name != "abortTransaction" {
		return mongoerr.New(mongoerr.InvalidOptions, "Cannot set write concern after starting a transaction.")
	}
	return nil
}

// noSuchTransaction is NoSuchTransaction, which drivers retry whole
// (errorLabels labels it TransientTransactionError).
func noSuchTransaction(format string, args ...any) *mongoerr.Error {
	return mongoerr.New(mongoerr.NoSuchTransaction, format, args...)
}

// participant is the transaction's storage transaction on the request's
// database, begun at the transaction's read time by the first statement
// that reads or writes it there; a transaction runs on one branch of each
// database. It is nil for a database that does not exist when create is
// false.
func (r *request) participant(create bool) (*storage.Txn, error) {
	t := r.txn
	for _, p := range t.parts {
		if p.db != r.db {
			continue
		}
		if r.rev != "" && r.rev != p.rev && r.rev != p.st.Branch() {
			return nil, mongoerr.New(mongoerr.OperationNotSupportedInTransaction,
				"a transaction runs on one branch of each database: it runs on %s@%s, not @%s", p.db, p.st.Branch(), r.rev)
		}
		return p.st, nil
	}
	d, err := r.database(create)
	if err != nil || d == nil {
		return nil, err
	}
	rev, err := r.revision(d)
	if err != nil {
		return nil, err
	}
	if rev.ReadOnly() {
		return nil, readOnlyError(r)
	}
	if t.readAt.isZero() {
		t.readAt = cmp.Or(r.readAt, r.c.s.clock.now())
	}
	st, err := d.BeginTxnAt(r.ctx, rev.Branch, t.readAt.stamp())
	if errors.Is(err, storage.ErrSnapshotTooOld) {
		return nil, mongoerr.New(mongoerr.SnapshotTooOld,
			"the transaction's snapshot (%s) of %s is no longer kept: %v", t.readAt, r.db, err)
	}
	if err != nil {
		return nil, err
	}
	t.parts = append(t.parts, &txnPart{db: r.db, rev: r.rev, st: st})
	return st, nil
}

// txnSnapshot is what a statement of the transaction reads.
func (r *request) txnSnapshot() (*storage.Snapshot, error) {
	p, err := r.participant(false)
	if err != nil || p == nil {
		return storage.EmptySnapshot(), err
	}
	return p.Snapshot(), nil
}

// txnWrite runs a statement's writes in the transaction.
func (r *request) txnWrite(create bool, fn func(tx *storage.Tx) error) error {
	p, err := r.participant(create)
	if err != nil || p == nil {
		return err
	}
	return fn(p.Tx())
}

// endStatement aborts the transaction when its statement failed (or
// reported a write error), as mongod does; a write conflict is returned
// in mongod's words.
func (r *request) endStatement(reply bsoncore.Document, err error) error {
	t := r.txn
	if t == nil || r.name == "commitTransaction" || r.name == "abortTransaction" {
		return err
	}
	if err == nil {
		if _, absent := reply.LookupErr("writeErrors"); absent != nil {
			return nil
		}
	}
	t.abort()
	if errors.Is(err, storage.ErrWriteConflict) {
		return mongoerr.New(mongoerr.WriteConflict,
			"Write conflict during plan execution and yielding is disabled. :: Please retry your operation or multi-document transaction.")
	}
	return err
}

func cmdCommitTransaction(r *request) (bsoncore.Document, error) {
	if err := r.parseArgs(transactionEndFields(r)); err != nil {
		return nil, err
	}
	t := r.txn
	if t == nil {
		return nil, mongoerr.New(mongoerr.InvalidOptions, "commitTransaction must be run within a transaction")
	}
	if t.state == txnCommitted || len(t.parts) == 0 {
		if t.state == txnActive {
			t.counts.committed.Add(1)
		}
		t.state = txnCommitted
		return okReply(), nil // idempotent; nothing was read or written
	}
	parts := t.parts
	sts := make([]*storage.Txn, len(t.parts))
	for i, p := range t.parts {
		if r.session != nil {
			p.st.RecordCommit(*r.session, t.number) // a retry after a restart finds it
		}
		if d, err := r.c.s.engine.Database(r.ctx, p.db, false); err == nil && d != nil {
			if note := r.commandNote(d); note != nil {
				p.st.Note(*note)
			}
		}
		sts[i] = p.st
	}
	t.parts = nil
	if err := storage.CommitTxns(r.ctx, sts); err != nil {
		t.state = txnAborted
		t.counts.aborted.Add(1)
		if errors.Is(err, storage.ErrWriteConflict) {
			return nil, mongoerr.New(mongoerr.WriteConflict, "%s", err.Error())
		}
		return nil, err
	}
	t.state = txnCommitted
	t.counts.committed.Add(1)
	r.noteTransactionWrites(parts)
	// operationTime is the commit's time, its events' clusterTime (the
	// latest of them when it spans databases, each logged at its own).
	var at uint64
	for _, st := range sts {
		at = max(at, st.CommitTime())
	}
	if at != 0 {
		r.opTime = stampTime(at)
	} else {
		r.opTime = r.c.s.clock.tickWrite()
	}
	return okReply(), nil
}

func cmdAbortTransaction(r *request) (bsoncore.Document, error) {
	if err := r.parseArgs(transactionEndFields(r)); err != nil {
		return nil, err
	}
	t := r.txn
	switch {
	case t == nil:
		return nil, mongoerr.New(mongoerr.InvalidOptions, "abortTransaction must be run within a transaction")
	case t.state == txnCommitted:
		return nil, mongoerr.New(mongoerr.TransactionCommitted, "Transaction %d has been committed.", t.number)
	case t.state == txnAborted:
		return nil, noSuchTransaction("Transaction %d has been aborted.", t.number)
	}
	t.abort()
	return okReply(), nil
}

// reapTransactions aborts transactions open for longer than the lifetime.
func (s *Server) reapTransactions(lifetime time.Duration) {
	s.sessions.mu.Lock()
	var old []*transaction
	for _, sess := range s.sessions.m {
		if sess.txn != nil && time.Since(sess.txn.started) > lifetime {
			old = append(old, sess.txn)
		}
	}
	s.sessions.mu.Unlock()
	for _, t := range old {
		if t.mu.TryLock() { // a running statement finishes first
			t.abort()
			t.mu.Unlock()
		}
	}
}

// refuseIndexOnExistingInTxn: a transaction may create indexes only on a
// collection it created, as on mongod.
func (r *request) refuseIndexOnExistingInTxn(coll string) error {
	if r.txn == nil {
		return nil
	}
	p, err := r.participant(true)
	if err != nil || !p.ExistedAtStart(coll) {
		return err
	}
	return mongoerr.New(mongoerr.OperationNotSupportedInTransaction,
		"Cannot create new indexes on existing collection %s in a multi-document transaction.", r.ns(coll))
}

// txnNumberArg reads txnNumber ("ok" false: absent).
func (r *request) txnNumberArg() (int64, bool, error) {
	v, err := r.argErr("txnNumber")
	if err != nil {
		return 0, false, nil
	}
	n, ok := value.AsInt64(v)
	if !ok || v.Type == bsoncore.TypeDouble && float64(n) != v.Double() {
		return 0, false, typeMismatch(r.name, "txnNumber", v, "long")
	}
	if n < 0 {
		return 0, false, mongoerr.New(mongoerr.BadValue, "TxnNumber cannot be negative")
	}
	return n, true, nil
}

// transactionEndFields are the fields commitTransaction and
// abortTransaction take besides the generic ones.
func transactionEndFields(r *request) map[string]fieldHandler {
	return map[string]fieldHandler{"recoveryToken": r.ignoredArg("recoveryToken", "object")}
}

// inProgress reports whether the transaction was neither committed nor
// aborted; one that a statement holds is.
func (t *transaction) inProgress() bool {
	if !t.mu.TryLock() {
		return true
	}
	defer t.mu.Unlock()
	return t.state == txnActive
}
