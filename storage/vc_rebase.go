package storage

import (
	"context"
	"fmt"

	"github.com/dolthub/dolt/go/store/datas"
	"github.com/dolthub/dolt/go/store/hash"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// KindRebase marks a rebase stopped at a conflict.
const KindRebase = "rebase"

// Rebase replays the branch's own commits (first-parent, since the fork
// point; merge commits are dropped as Git does) on top of onto. A conflict
// stops it like a merge: resolve, then MergeContinue goes on with the
// remaining commits; MergeAbort puts the branch back where it was.
func (d *Database) Rebase(ctx context.Context, branchName string, onto Revision) (MergeResult, error) {
	ctx, leave, err := d.enterGate(ctx)
	if err != nil {
		return MergeResult{}, err
	}
	defer leave()
	return d.onMergeableBranch(ctx, branchName, onto, func(b *branch, head, ontoC *datas.Commit, res *MergeResult) error {
		picks, err := d.commitsSince(ctx, head, ontoC)
		if err != nil {
			return err
		}
		if err := d.moveHead(ctx, b, ontoC); err != nil {
			return err
		}
		return d.replay(ctx, b, picks, head.Addr(), res)
	})
}

// commitsSince lists head's first-parent commits that onto lacks, oldest
// first, leaving out merge commits.
func (d *Database) commitsSince(ctx context.Context, head, onto *datas.Commit) ([]*datas.Commit, error) {
	headOnly := map[hash.Hash]bool{}
	err := d.walkSides(ctx, []*datas.Commit{head}, []*datas.Commit{onto}, func(c *datas.Commit, s uint8) error {
		if s == reachLeft {
			headOnly[c.Addr()] = true
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var picks []*datas.Commit
	for c := head; c != nil && headOnly[c.Addr()]; {
		parents, err := datas.GetCommitParents(ctx, d.vs, c.NomsValue())
		if err != nil {
			return nil, err
		}
		if len(parents) == 1 {
			picks = append([]*datas.Commit{c}, picks...)
		}
		c = nil
		if len(parents) > 0 {
			c = parents[0]
		}
	}
	return picks, nil
}

// moveHead points a locked branch and its working state at c.
func (d *Database) moveHead(ctx context.Context, b *branch, c *datas.Commit) error {
	head, err := d.refDataset(ctx, refHeads, b.name)
	if err != nil {
		return err
	}
	if _, err := d.db.SetHead(ctx, head, c.Addr(), ""); err != nil {
		return err
	}
	d.engine.panics.at("vc.ref")
	return d.resetWorkingSet(ctx, b, c)
}

// replay cherry-picks commits onto a locked branch, stopping at the first
// conflict with a rebase state that remembers the rest.
func (d *Database) replay(ctx context.Context, b *branch, picks []*datas.Commit, orig hash.Hash, res *MergeResult) error {
	for i, c := range picks {
		parents, err := datas.GetCommitParents(ctx, d.vs, c.NomsValue())
		if err != nil {
			return err
		}
		meta, err := datas.GetCommitMeta(ctx, c.NomsValue())
		if err != nil {
			return err
		}
		base, err := d.commitState(ctx, parents[0])
		if err != nil {
			return err
		}
		opts := CommitOptions{Message: meta.Description, Author: formatAuthor(meta.Name, meta.Email)}
		err = d.applyThreeWay(ctx, b, base, c, KindRebase, opts, nil, res)
		if err == ErrMergeConflicts {
			return d.rememberRebase(ctx, b, picks[i+1:], orig)
		}
		if err != nil {
			return fmt.Errorf("rebase at %s: %w", c.Addr(), err)
		}
	}
	return nil
}

// rememberRebase adds the remaining commits and the original head to the
// stopped rebase's merge state, and returns ErrMergeConflicts.
func (d *Database) rememberRebase(ctx context.Context, b *branch, rest []*datas.Commit, orig hash.Hash) error {
	st := b.state.Load()
	remaining := bsoncore.NewArrayBuilder()
	for _, c := range rest {
		remaining.AppendString(c.Addr().String())
	}
	next := *st
	els, _ := st.merge.Elements()
	mb := bsoncore.NewDocumentBuilder()
	for _, el := range els {
		mb.AppendValue(el.Key(), el.Value())
	}
	next.merge = mb.AppendArray("remaining", remaining.Build()).AppendString("orig", orig.String()).Build()
	if err := d.storeWorking(ctx, b, &next); err != nil {
		return err
	}
	return ErrMergeConflicts
}

// continueRebase resumes a rebase after its conflicts were resolved and the
// stopped commit was committed.
func (d *Database) continueRebase(ctx context.Context, b *branch, state bsoncore.Document) error {
	var picks []*datas.Commit
	if arr, ok := state.Lookup("remaining").ArrayOK(); ok {
		vals, _ := arr.Values()
		for _, v := range vals {
			c, err := d.commitByHash(ctx, v.StringValue())
			if err != nil {
				return err
			}
			picks = append(picks, c)
		}
	}
	orig, _ := hash.MaybeParse(state.Lookup("orig").StringValue())
	var res MergeResult
	return d.replay(ctx, b, picks, orig, &res)
}
