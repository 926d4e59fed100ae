package storage

import (
	"context"
	"errors"
	"fmt"
	"io"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Bulk loads (docs/design/bulk-load.md): many documents inserted into
// one collection without the write-ahead log. The branch's writers wait;
// the documents go into the branch's state as edits, sorted by key as
// they arrive; one checkpoint then folds them into the collection's and
// its indexes' trees in a single ordered pass (the chunker writes each
// tree's nodes level by level as they fill, never rewriting one) and
// makes the result the branch's durable working root in one step. A
// crash before that step leaves the branch as it was; after it, the
// load is there. A bulk load emits no change events.

// BulkResult is what a bulk load did: the documents inserted and those
// refused, each with its place in the input (0-based) and why.
type BulkResult struct {
	Inserted int64
	Refused  []BulkRefusal
}

// BulkRefusal is a document a bulk load did not insert: its place, why,
// and its _id when it has one.
type BulkRefusal struct {
	Index int64
	Err   error
	ID    bsoncore.Value
}

// ErrBulkTarget: a bulk load into a view, a time-series or a capped
// collection, whose documents it does not write.
var ErrBulkTarget = errors.New("a bulk load fills only an ordinary collection")

// RefusedDocument is what a bulk load's source returns for a document it
// read but will not have loaded (a failed validation): the load goes on
// as for a document that cannot be inserted. Any other error ends the
// load, loading nothing.
type RefusedDocument struct{ Err error }

func (r RefusedDocument) Error() string { return r.Err.Error() }
func (r RefusedDocument) Unwrap() error { return r.Err }

// BulkLoad inserts the documents next yields (io.EOF ends them) into
// collection coll of branch, made with options when it does not exist.
// A document that cannot be inserted (a duplicate key, a key too long)
// is refused and the rest loaded; with stopOnError the load stops there,
// keeping what came before.
func (d *Database) BulkLoad(ctx context.Context, branchName, coll string, options bsoncore.Document,
	next func() (bsoncore.Document, error), stopOnError bool) (BulkResult, error) {
	ctx, leave, err := d.enterGate(ctx)
	if err != nil {
		return BulkResult{}, err
	}
	defer leave()
	var res BulkResult
	if err := d.hold(ctx); err != nil {
		return res, err
	}
	defer d.release()
	err = d.lockedBranch(ctx, branchName, func(b *branch) error {
		if err := d.writable(b); err != nil {
			return err
		}
		cur := b.state.Load() // checkpointed by lockedBranch
		l := &bulkTx{d: d, lsn: cur.lsn, guard: b.holds.refuseHeld, foldAt: d.engine.opts.CacheBytes / 2}
		l.begin(cur)
		defer l.release()
		if err := bulkInsert(ctx, l, coll, options, next, stopOnError, &res); err != nil || res.Inserted == 0 {
			return err
		}
		folded, err := l.fold(ctx)
		if err != nil {
			return err
		}
		if err := d.persist(ctx, b, folded.root, cur.lsn); err != nil {
			return err
		}
		b.setDurable(folded)
		return nil
	})
	return res, err
}

// bulkTx is a bulk load's transaction, folded into trees whenever the
// loaded collection's edits pass foldAt bytes and begun again on the
// result, so that a load holds at most about half the edit budget in
// memory whatever its size. The trees of a fold are in the store but no
// ref reaches them until the load's last fold is persisted.
type bulkTx struct {
	d      *Database
	tx     *Tx
	lsn    uint64 // the branch's, which the load leaves as it is
	guard  func(ctx context.Context, coll string, key, old, new []byte) error
	foldAt int64
}

// begin starts the load's transaction on st.
func (l *bulkTx) begin(st *rootState) {
	tx := l.d.newTx(st)
	tx.plain, tx.capture, tx.unlogged = true, false, true
	tx.guard = l.guard
	l.tx = tx
}

// fold folds the transaction's edits into trees and returns the state
// they make; the transaction is used up.
func (l *bulkTx) fold(ctx context.Context) (*rootState, error) {
	st := l.tx.publish(l.lsn)
	l.release()
	return l.d.foldState(ctx, st)
}

// foldIfFull folds the edits of coll once they pass foldAt and begins
// again on the fold.
func (l *bulkTx) foldIfFull(ctx context.Context, coll string) error {
	c := l.tx.overlay[coll]
	if c == nil || c.editBytes < l.foldAt {
		return nil
	}
	l.d.engine.panics.at("bulk.fold")
	st, err := l.fold(ctx)
	if err != nil {
		return err
	}
	l.begin(st)
	return nil
}

func (l *bulkTx) release() {
	if l.tx != nil {
		l.tx.release()
		l.tx = nil
	}
}

// bulkInsert inserts next's documents into l's collection coll.
func bulkInsert(ctx context.Context, l *bulkTx, coll string, options bsoncore.Document,
	next func() (bsoncore.Document, error), stopOnError bool, res *BulkResult) error {
	if l.tx.view(coll) == nil {
		if _, err := l.tx.CreateCollection(ctx, coll, options); err != nil {
			return err
		}
	} else if info, _ := l.tx.Collection(coll); info.IsView() || info.Capped() {
		return fmt.Errorf("%w: %s is a view, a time-series or a capped collection", ErrBulkTarget, coll)
	}
	for i := int64(0); ; i++ {
		if i%1024 == 0 {
			if err := ctx.Err(); err != nil { // maxTimeMS, killOp, a client gone
				return err
			}
			if err := l.foldIfFull(ctx, coll); err != nil {
				return err
			}
		}
		doc, err := next()
		var refused RefusedDocument
		switch {
		case errors.Is(err, io.EOF):
			return nil
		case errors.As(err, &refused):
		case err != nil:
			return err
		default:
			err = l.tx.Insert(ctx, coll, doc)
		}
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			ref := BulkRefusal{Index: i, Err: err}
			if doc != nil {
				ref.ID = doc.Lookup("_id")
			}
			res.Refused = append(res.Refused, ref)
			if stopOnError {
				return nil
			}
			continue
		}
		res.Inserted++
	}
}
