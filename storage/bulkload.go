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
		tx := d.newTx(cur)
		tx.plain, tx.capture, tx.unlogged = true, false, true
		tx.guard = b.holds.refuseHeld
		defer tx.release()
		if err := bulkInsert(ctx, tx, coll, options, next, stopOnError, &res); err != nil || res.Inserted == 0 {
			return err
		}
		folded, err := d.foldState(ctx, tx.publish(cur.lsn))
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

// bulkInsert inserts next's documents into tx's collection coll.
func bulkInsert(ctx context.Context, tx *Tx, coll string, options bsoncore.Document,
	next func() (bsoncore.Document, error), stopOnError bool, res *BulkResult) error {
	if tx.view(coll) == nil {
		if _, err := tx.CreateCollection(ctx, coll, options); err != nil {
			return err
		}
	} else if info, _ := tx.Collection(coll); info.IsView() || info.Capped() {
		return fmt.Errorf("%w: %s is a view, a time-series or a capped collection", ErrBulkTarget, coll)
	}
	for i := int64(0); ; i++ {
		if i%1024 == 0 && ctx.Err() != nil { // maxTimeMS, killOp, a client gone
			return ctx.Err()
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
			err = tx.Insert(ctx, coll, doc)
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
