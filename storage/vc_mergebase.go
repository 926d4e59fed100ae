package storage

import (
	"context"
	"fmt"

	"github.com/dolthub/dolt/go/store/datas"
	"github.com/dolthub/dolt/go/store/hash"
)

// The sides of a walk of two commit sets (see walkSides) a commit is
// reachable from.
const (
	reachLeft uint8 = 1 << iota
	reachRight
	belowBase // an ancestor of a common ancestor: no best one

	reachBoth = reachLeft | reachRight
)

// walkSides walks the history of two sets of commits, highest first, down
// to their best common ancestors: the common ancestors that are no
// ancestor of another one. visit sees each commit reachable from one set
// only (sides reachLeft or reachRight) and each best common ancestor
// (reachBoth), nothing below them.
//
// A commit is higher than its parents, so it is taken from the queue after
// all its children in the walk: its sides are final then, and a common
// ancestor found then is a best one unless a higher one marked it below.
// The walk ends when only commits below a best one are left.
func (d *Database) walkSides(ctx context.Context, left, right []*datas.Commit, visit func(*datas.Commit, uint8) error) error {
	sides := map[hash.Hash]uint8{}
	q := &commitQueue{}
	mark := func(c *datas.Commit, s uint8) {
		if sides[c.Addr()] == 0 {
			q.add(queuedCommit{addr: c.Addr(), height: c.Height(), c: c}) // merge bases must not depend on clocks
		}
		sides[c.Addr()] |= s
	}
	for _, c := range left {
		mark(c, reachLeft)
	}
	for _, c := range right {
		mark(c, reachRight)
	}
	for !allBelowBase(*q, sides) {
		c := q.next().c
		s := sides[c.Addr()]
		if s&belowBase == 0 {
			if err := visit(c, s); err != nil {
				return err
			}
		}
		if s == reachBoth {
			s |= belowBase
		}
		parents, err := datas.GetCommitParents(ctx, d.vs, c.NomsValue())
		if err != nil {
			return err
		}
		for _, p := range parents {
			mark(p, s)
		}
	}
	return nil
}

func allBelowBase(q commitQueue, sides map[hash.Hash]uint8) bool {
	for _, e := range q {
		if sides[e.addr]&belowBase == 0 {
			return false
		}
	}
	return true
}

// mergeBases are the best common ancestors of two sets of commits, highest
// first (Git's merge-base --all). Two commits have several after
// criss-cross merges, each branch having merged the other.
func (d *Database) mergeBases(ctx context.Context, left, right []*datas.Commit) ([]*datas.Commit, error) {
	var bases []*datas.Commit
	err := d.walkSides(ctx, left, right, func(c *datas.Commit, s uint8) error {
		if s == reachBoth {
			bases = append(bases, c)
		}
		return nil
	})
	return bases, err
}

// onlyBase reports whether bases is c alone.
func onlyBase(bases []*datas.Commit, c *datas.Commit) bool {
	return len(bases) == 1 && bases[0].Addr() == c.Addr()
}

// mergeBaseState is the state a merge compares both sides with, given
// their merge bases. With several (criss-cross merges) it merges them into
// a virtual base, as Git's recursive and ort strategies do: each base in
// turn is merged into the merge of those before it, over their own merge
// bases, recursively. A document the bases cannot merge keeps the version
// of their own base there (Git leaves conflict markers; see
// virtualBaseVersion), so a branch that settled that conflict differs from
// the virtual base, and the outer merge reports it unless both sides
// settled it alike.
func (d *Database) mergeBaseState(ctx context.Context, bases []*datas.Commit) (*rootState, error) {
	if len(bases) == 0 {
		return &rootState{}, nil // unrelated histories
	}
	merged, err := d.commitState(ctx, bases[0])
	if err != nil {
		return nil, err
	}
	for i, next := range bases[1:] {
		innerBases, err := d.mergeBases(ctx, bases[:i+1], []*datas.Commit{next})
		if err != nil {
			return nil, err
		}
		inner, err := d.mergeBaseState(ctx, innerBases)
		if err != nil {
			return nil, err
		}
		nextState, err := d.commitState(ctx, next)
		if err != nil {
			return nil, err
		}
		if merged, err = d.threeWay(ctx, inner, merged, nextState, keepBaseVersion); err != nil {
			return nil, fmt.Errorf("virtual merge base with %s: %w", next.Addr(), err)
		}
	}
	return merged, nil
}
