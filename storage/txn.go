package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dolthub/dolt/go/store/prolly/tree"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/value"
)

// Txn is a multi-statement transaction on one branch
// (docs/design/transactions.md): its statements run on a private Tx over
// the branch's state when it began, so it reads that snapshot and its own
// writes; each document it writes is held until it ends, first writer
// wins; Commit checks that nothing it wrote changed since its snapshot and
// logs all its changes as one record. A Txn is not safe for concurrent
// use: the server runs one statement of a session at a time.
type Txn struct {
	d     *Database
	b     *branch
	snap  *Snapshot // the state it began on, pinned for as long as it lives
	tx    *Tx
	held  []string // its keys in b.holds
	done  bool
	ended chan struct{} // closed when it ends, for those waiting on its documents
	at    uint64        // the cluster time its commit was logged at (0: none)
	note  *WriteNote    // describes its writes for a commit (Note)
}

// ConflictError is a transaction's write conflict (it wraps
// ErrWriteConflict). Holder, when not nil, is closed when the transaction
// holding the document ends: a caller that can start its transaction over
// (it has read nothing it would then see differently) may wait for it and
// begin again on the newer state instead of failing.
type ConflictError struct {
	Reason string
	Holder <-chan struct{}
}

func (e *ConflictError) Error() string { return ErrWriteConflict.Error() + ": " + e.Reason }

func (e *ConflictError) Unwrap() error { return ErrWriteConflict }

// holdTable maps the documents open transactions have written (collection
// and _id key) to the transactions holding each and the top-level fields
// each changed: first writer wins field by field, so transactions that
// change different fields of one document both go on, and the later
// committer merges (Txn.rebase).
type holdTable struct {
	mu    sync.Mutex
	byKey map[string]map[*Txn]fieldSet
	n     atomic.Int64 // len(byKey), read without the lock by plain writes
}

// fieldSet is the top-level fields a write changed; nil is the whole
// document (an insert or a delete).
type fieldSet map[string]bool

// changedFields are the top-level fields that differ between two versions
// of a document (nil old or new: the whole document).
func changedFields(old, new []byte) fieldSet {
	if old == nil || new == nil {
		return nil
	}
	out := fieldSet{}
	for _, pair := range [][2]bsoncore.Document{{old, new}, {new, old}} {
		els, _ := pair[0].Elements()
		for _, el := range els {
			if !value.Same(el.Value(), pair[1].Lookup(el.Key())) {
				out[el.Key()] = true
			}
		}
	}
	return out
}

// union adds b's fields to a (nil, the whole document, absorbs).
func (a fieldSet) union(b fieldSet) fieldSet {
	if a == nil || b == nil {
		return nil
	}
	for k := range b {
		a[k] = true
	}
	return a
}

// overlaps reports whether two writes changed a field in common.
func (a fieldSet) overlaps(b fieldSet) bool {
	if a == nil || b == nil {
		return true
	}
	for k := range a {
		if b[k] {
			return true
		}
	}
	return false
}

func holdKey(coll string, key []byte) string { return coll + "\x00" + string(key) }

// refuseHeld is a plain write's guard: a document an open transaction
// holds cannot be changed until it ends.
func (h *holdTable) refuseHeld(_ context.Context, coll string, key, _, _ []byte) error {
	if h.n.Load() == 0 {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, held := h.byKey[holdKey(coll, key)]; held {
		return fmt.Errorf("%w: a transaction holds the document", ErrWriteConflict)
	}
	return nil
}

// BeginTxn starts a transaction on a branch's current state. The database
// stays open until the transaction ends (Commit or Abort).
func (d *Database) BeginTxn(ctx context.Context, branchName string) (*Txn, error) {
	return d.BeginTxnAt(ctx, branchName, 0)
}

// BeginTxnAt starts a transaction on the branch's state at time at of the
// engine's clock (history.go; 0: the current state), so that the
// participants of one transaction on several databases read one point in
// time. ErrSnapshotTooOld when that state is no longer kept.
func (d *Database) BeginTxnAt(ctx context.Context, branchName string, at uint64) (*Txn, error) {
	if err := d.hold(ctx); err != nil {
		return nil, err
	}
	b, err := d.branch(ctx, branchName)
	if err != nil {
		d.release()
		return nil, err
	}
	st := b.state.Load()
	if at != 0 {
		if st, err = d.stateAt(ctx, b, at); err != nil {
			d.release()
			return nil, err
		}
	}
	t := &Txn{d: d, b: b, snap: d.newSnapshot(st), tx: d.newTx(st), ended: make(chan struct{})}
	t.tx.retries = d.retries
	t.tx.guard = t.claim
	t.tx.inTxn = true
	return t, nil
}

// Branch is the branch the transaction runs on.
func (t *Txn) Branch() string { return t.b.name }

// Note describes the transaction's writes for the next commit of its
// branch that asks for notes (Tx.Note).
func (t *Txn) Note(n WriteNote) { t.note = &n }

// ExistedAtStart reports whether a collection was in the snapshot the
// transaction began on (DDL in a transaction may touch only new ones).
func (t *Txn) ExistedAtStart(coll string) bool {
	_, ok := t.snap.Collection(coll)
	return ok
}

// Tx is the transaction's write view, for one statement at a time.
func (t *Txn) Tx() *Tx { return t.tx }

// Snapshot is a read view of the snapshot with the transaction's writes so
// far; later statements do not change it (a cursor keeps what it saw).
func (t *Txn) Snapshot() *Snapshot { return t.d.newSnapshot(t.tx.frozenState()) }

// claim holds a document for t as it changes from old to new (nil: absent),
// or refuses with a ConflictError when another open transaction changed
// one of the same fields, or a write committed since t's snapshot did.
func (t *Txn) claim(ctx context.Context, coll string, key, old, new []byte) error {
	h := &t.b.holds
	k := holdKey(coll, key)
	fields := changedFields(old, new)
	h.mu.Lock()
	defer h.mu.Unlock()
	holders := h.byKey[k]
	for owner, theirs := range holders {
		if owner != t && theirs.overlaps(fields) {
			return &ConflictError{Reason: "another transaction changed the same field of the document", Holder: owner.ended}
		}
	}
	overlaps, err := t.changedSince(ctx, t.b.state.Load(), coll, key, fields)
	if err != nil {
		return err
	}
	if overlaps {
		return &ConflictError{Reason: "the document changed since the transaction began"}
	}
	if mine, ok := holders[t]; ok {
		holders[t] = mine.union(fields)
		return nil
	}
	if holders == nil {
		if h.byKey == nil {
			h.byKey = map[string]map[*Txn]fieldSet{}
		}
		holders = map[*Txn]fieldSet{}
		h.byKey[k] = holders
		h.n.Add(1)
	}
	holders[t] = fields
	t.held = append(t.held, k)
	return nil
}

// changedSince reports whether a document changed between t's snapshot
// and cur in a way a change of fields would conflict with: the document
// appeared or went, or one of fields changed (nil fields: any change).
func (t *Txn) changedSince(ctx context.Context, cur *rootState, coll string, key []byte, fields fieldSet) (bool, error) {
	if cur == t.snap.st {
		return false, nil
	}
	was, err := docAt(ctx, t.d.ns, t.snap.st, coll, key)
	if err != nil {
		return false, err
	}
	now, err := docAt(ctx, t.d.ns, cur, coll, key)
	if err != nil || bytes.Equal(was, now) {
		return false, err
	}
	return changedFields(was, now).overlaps(fields), nil
}

// docAt is the stored bytes of a document in a state (nil: none).
func docAt(ctx context.Context, ns tree.NodeStore, st *rootState, coll string, key []byte) ([]byte, error) {
	c := st.colls.get(coll)
	if c == nil {
		return nil, nil
	}
	v, ok, err := lookup(ctx, ns, c.base, c.edits, key)
	if !ok {
		return nil, err
	}
	return v, err
}

// Commit makes the transaction's writes visible and durable as one unit,
// or fails with ErrWriteConflict (nothing applied) when another write got
// to one of its documents first. The transaction ends either way.
func (t *Txn) Commit(ctx context.Context) error {
	defer t.end()
	ctx, leave, err := t.d.enterGate(ctx)
	if err != nil {
		return err
	}
	defer leave()
	t.d.awaitBudget(ctx)
	lsn, err := t.commitLocked(ctx)
	return t.d.awaitWrite(ctx, lsn, err)
}

// commitLocked logs and publishes the transaction under the branch's
// writer lock. On a branch that moved since the snapshot it checks every
// document written and replays the changes onto the current state (index
// entries and unique keys are checked again there).
func (t *Txn) commitLocked(ctx context.Context) (uint64, error) {
	d, b := t.d, t.b
	d.engine.lockWriter(b)
	defer b.writeMu.Unlock()
	if err := d.writable(b); err != nil {
		return 0, err
	}
	if !t.tx.dirty() {
		return 0, nil // read-only: nothing to log
	}
	cur := b.state.Load()
	tx := t.tx
	if cur != t.snap.st {
		var err error
		if tx, err = t.rebase(ctx, cur); err != nil {
			return 0, err
		}
	}
	tx.note = t.note
	lsn, err := d.logAndPublish(ctx, b, cur, tx)
	t.at = tx.at
	return lsn, err
}

// CommitTime is the cluster time its commit was logged at, its change
// events' clusterTime (0: it wrote nothing or did not commit).
func (t *Txn) CommitTime() uint64 { return t.at }

// rebase replays the transaction's changes onto cur after checking that
// none of its documents changed since the snapshot in a field it changed
// too; a document another write changed in other fields is merged field
// by field (the change of each side kept).
func (t *Txn) rebase(ctx context.Context, cur *rootState) (*Tx, error) {
	merged := map[string][]byte{}
	seen := map[string]bool{}
	for _, o := range t.tx.ops {
		k := holdKey(o.coll, o.key)
		if seen[k] {
			continue
		}
		seen[k] = true
		if o.op == opPut || o.op == opDelete {
			doc, err := t.mergeOnto(ctx, cur, o)
			if err != nil {
				return nil, err
			}
			if doc != nil {
				merged[k] = doc
			}
			continue
		}
		changed, err := t.opChangedSince(ctx, cur, o)
		if err != nil {
			return nil, err
		}
		if changed {
			return nil, fmt.Errorf("%w: %s on %s: another write changed it before the transaction committed", ErrWriteConflict, o.op, o.coll)
		}
	}
	tx := t.d.newTx(cur)
	tx.retries, tx.retry = t.d.retries, t.tx.retry
	if err := tx.redo(ctx, withMerged(t.tx.ops, merged)); err != nil {
		var dup *DuplicateKeyError
		if errors.As(err, &dup) || errors.Is(err, ErrDuplicateKey) || errors.Is(err, ErrNamespaceExists) {
			return nil, fmt.Errorf("%w: %v", ErrWriteConflict, err)
		}
		return nil, err
	}
	return tx, nil
}

// mergeOnto checks the document a put or delete wrote against cur: nil
// when it did not change since the snapshot (the transaction's version
// stands), the merged version when another write changed other fields of
// it, ErrWriteConflict when both changed a field or it appeared or went.
func (t *Txn) mergeOnto(ctx context.Context, cur *rootState, o walOp) ([]byte, error) {
	was, err := docAt(ctx, t.d.ns, t.snap.st, o.coll, o.key)
	if err != nil {
		return nil, err
	}
	now, err := docAt(ctx, t.d.ns, cur, o.coll, o.key)
	if err != nil || bytes.Equal(was, now) {
		return nil, err
	}
	ours := t.finalVersion(o.coll, o.key)
	if was != nil && now != nil && ours != nil {
		if doc, ok := mergeDocs(was, ours, now); ok {
			return doc, nil
		}
	}
	return nil, fmt.Errorf("%w: %s on %s: another write changed the document before the transaction committed", ErrWriteConflict, o.op, o.coll)
}

// finalVersion is the transaction's last write of a document (nil: it
// deleted it).
func (t *Txn) finalVersion(coll string, key []byte) []byte {
	for i := len(t.tx.ops) - 1; i >= 0; i-- {
		o := t.tx.ops[i]
		if (o.op == opPut || o.op == opDelete) && o.coll == coll && bytes.Equal(o.key, key) {
			return o.value
		}
	}
	return nil
}

// withMerged is ops with every document in merged written once, as its
// merged version, where the transaction last wrote it.
func withMerged(ops []walOp, merged map[string][]byte) []walOp {
	if len(merged) == 0 {
		return ops
	}
	last := map[string]int{}
	for i, o := range ops {
		if o.op == opPut || o.op == opDelete {
			last[holdKey(o.coll, o.key)] = i
		}
	}
	out := make([]walOp, 0, len(ops))
	for i, o := range ops {
		k := holdKey(o.coll, o.key)
		doc, ok := merged[k]
		switch {
		case !ok || (o.op != opPut && o.op != opDelete):
			out = append(out, o)
		case last[k] == i:
			out = append(out, walOp{op: opPut, coll: o.coll, key: o.key, value: doc})
		}
	}
	return out
}

// opChangedSince reports whether what a logged change touched differs
// between the snapshot and cur: the document of a put or delete, the
// collection of a create (made by another write meanwhile, which a replay
// would overwrite) or of a catalog change.
func (t *Txn) opChangedSince(ctx context.Context, cur *rootState, o walOp) (bool, error) {
	switch o.op {
	case opCreate:
		return cur.colls.get(o.coll) != nil, nil
	}
	was, now := t.snap.st.colls.get(o.coll), cur.colls.get(o.coll)
	if was == nil || now == nil {
		return was != now, nil
	}
	return !bytes.Equal(was.info.encode(), now.info.encode()), nil
}

// TxnCommitStmt is the statement id under which a transaction's commit is
// kept with the session's retry outcomes (docs/format/wal.md), so that a
// commitTransaction retried after a restart finds it.
const TxnCommitStmt = -1

var committedOutcome = bsoncore.NewDocumentBuilder().AppendBoolean("c", true).Build()

// RecordCommit makes the commit record say that the session's
// transaction txnNumber committed.
func (t *Txn) RecordCommit(s SessionKey, txnNumber int64) {
	t.tx.retry = &retryLog{session: s, txn: txnNumber, at: time.Now(),
		stmts: []int32{TxnCommitStmt}, outcomes: []bsoncore.Document{committedOutcome}}
}

// TransactionCommitted reports whether some database recorded that the
// session's transaction txnNumber committed: what a commitTransaction the
// server no longer knows of (after a restart) answers from. It opens every
// database, so it is for that rare case only.
func (e *Engine) TransactionCommitted(ctx context.Context, s SessionKey, txnNumber int64) (bool, error) {
	names, err := e.DatabaseNames()
	if err != nil {
		return false, err
	}
	found := false
	for _, name := range names {
		err := e.Visit(ctx, name, func(d *Database) error {
			if err := d.hold(ctx); err != nil {
				return err
			}
			defer d.release()
			_, ok, _ := d.retries.lookup(s, txnNumber, TxnCommitStmt)
			found = found || ok
			return nil
		})
		if err != nil || found {
			return found, err
		}
	}
	return false, nil
}

// Abort drops the transaction's writes.
func (t *Txn) Abort() { t.end() }

// end releases what the transaction holds: its documents and the database.
func (t *Txn) end() {
	if t.done {
		return
	}
	t.done = true
	h := &t.b.holds
	h.mu.Lock()
	for _, k := range t.held {
		holders := h.byKey[k]
		delete(holders, t)
		if len(holders) == 0 {
			delete(h.byKey, k)
			h.n.Add(-1)
		}
	}
	h.mu.Unlock()
	t.held, t.tx = nil, nil
	close(t.ended)
	t.d.release()
}

// frozenState is the state the transaction's writes so far lead to, with
// edit sets of its own, so that later statements do not change it.
func (tx *Tx) frozenState() *rootState {
	changes := make(map[string]*collection, len(tx.overlay))
	for n, c := range tx.overlay {
		if c == nil {
			changes[n] = nil
			continue
		}
		frozen := *c
		if c.edits != nil {
			frozen.edits = c.edits.Clone()
		}
		frozen.indexes = cloneIndexes(c.indexes)
		frozen.capped = c.capped.clone()
		changes[n] = &frozen
	}
	return &rootState{colls: tx.base.colls.with(changes), lsn: tx.base.lsn,
		ckptLSN: tx.base.ckptLSN, merge: tx.base.merge, conflicts: tx.base.conflicts}
}
