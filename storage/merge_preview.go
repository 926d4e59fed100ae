package storage

import (
	"context"
	"errors"
	"io"

	"github.com/dolthub/dolt/go/store/datas"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// ConflictPreview is one collection's conflicts in a merge not made yet:
// how many, and the _ids of the first of them in _id order.
type ConflictPreview struct {
	Count int
	IDs   []bsoncore.Value
}

// PreviewConflicts merges theirs into a branch as Merge's dry run does and
// returns, per collection with conflicts, their number and the _ids of the
// first limit of them in _id order, so that a preview can name the
// documents a merge would stop on. It changes nothing. A merge that is up
// to date or a fast-forward has none.
func (d *Database) PreviewConflicts(ctx context.Context, branchName string, theirs Revision, limit int) (map[string]ConflictPreview, error) {
	ctx, leave, err := d.enterGate(ctx)
	if err != nil {
		return nil, err
	}
	defer leave()
	out := map[string]ConflictPreview{}
	_, err = d.onMergeableBranch(ctx, branchName, theirs, func(b *branch, ours, theirC *datas.Commit, _ *MergeResult) error {
		bases, err := d.mergeBases(ctx, []*datas.Commit{ours}, []*datas.Commit{theirC})
		if err != nil {
			return err
		}
		// Up to date, or a fast-forward: theirs has all of ours, or ours
		// all of theirs, so no document changed on both sides.
		if onlyBase(bases, theirC) || onlyBase(bases, ours) {
			return nil
		}
		base, err := d.mergeBaseState(ctx, bases)
		if err != nil {
			return err
		}
		theirState, err := d.commitState(ctx, theirC)
		if err != nil {
			return err
		}
		merged, err := d.threeWay(ctx, base, b.state.Load(), theirState, recordConflicts)
		if err != nil {
			return err
		}
		for coll, m := range merged.conflicts {
			p := ConflictPreview{}
			if p.Count, err = m.Count(); err != nil {
				return err
			}
			it, err := m.IterAll(ctx)
			if err != nil {
				return err
			}
			for len(p.IDs) < limit {
				_, v, err := it.Next(ctx)
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					return err
				}
				raw, err := valueBytes(ctx, d.ns, v)
				if err != nil {
					return err
				}
				p.IDs = append(p.IDs, conflictOf(coll, bsoncore.Document(append([]byte(nil), raw...))).ID)
			}
			out[coll] = p
		}
		return nil
	})
	return out, err
}
