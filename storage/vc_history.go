package storage

import (
	"bytes"
	"container/heap"
	"context"

	"github.com/dolthub/dolt/go/store/datas"
	"github.com/dolthub/dolt/go/store/hash"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// LogOptions select the commits Log returns.
type LogOptions struct {
	From       Revision
	Limit      int            // 0: all
	Collection string         // only commits that changed this collection
	ID         bsoncore.Value // with Collection: only commits that changed this document
}

// Log lists commits newest first, in topological order (a commit always
// before its parents; both parents of merges are followed).
func (d *Database) Log(ctx context.Context, opts LogOptions) ([]CommitInfo, error) {
	if err := d.hold(ctx); err != nil {
		return nil, err
	}
	defer d.release()
	start, err := d.revisionCommit(ctx, opts.From)
	if err != nil {
		return nil, err
	}
	refs, err := d.refsByCommit(ctx)
	if err != nil {
		return nil, err
	}
	var key []byte
	if opts.ID.Type != 0 {
		if key, err = encodeID(opts.ID); err != nil {
			return nil, err
		}
	}
	var out []CommitInfo
	q := &commitQueue{}
	q.add(start, commitTime(ctx, start))
	seen := map[hash.Hash]bool{start.Addr(): true}
	for q.Len() > 0 && (opts.Limit <= 0 || len(out) < opts.Limit) {
		c := q.next()
		parents, err := datas.GetCommitParents(ctx, d.vs, c.NomsValue())
		if err != nil {
			return nil, err
		}
		for _, p := range parents {
			if !seen[p.Addr()] {
				seen[p.Addr()] = true
				q.add(p, commitTime(ctx, p))
			}
		}
		if opts.Collection != "" {
			changed, err := d.changedIn(ctx, c, parents, opts.Collection, key)
			if err != nil {
				return nil, err
			}
			if !changed {
				continue
			}
		}
		info, err := d.describe(ctx, c, refs)
		if err != nil {
			return nil, err
		}
		out = append(out, info)
	}
	return out, nil
}

// changedIn reports whether commit c changed a collection (or, with key,
// one document of it) relative to its first parent.
func (d *Database) changedIn(ctx context.Context, c *datas.Commit, parents []*datas.Commit, coll string, key []byte) (bool, error) {
	cur, err := d.commitState(ctx, c)
	if err != nil {
		return false, err
	}
	prev := &rootState{}
	if len(parents) > 0 {
		if prev, err = d.commitState(ctx, parents[0]); err != nil {
			return false, err
		}
	}
	a, aok := prev.colls.lookup(coll)
	b, bok := cur.colls.lookup(coll)
	if !aok || !bok {
		return aok != bok, nil
	}
	if key == nil {
		return a.base.HashOf() != b.base.HashOf(), nil
	}
	av, _, err := lookup(ctx, d.ns, a.base, nil, key)
	if err != nil {
		return false, err
	}
	bv, _, err := lookup(ctx, d.ns, b.base, nil, key)
	return !bytes.Equal(av, bv), err
}

// commitQueue orders commits by height, highest first (a child is always
// higher than its parents), then newest first by commit time (what a log
// reader expects of commits on parallel branches), then by address, so
// walks are deterministic.
type commitQueue []queuedCommit

type queuedCommit struct {
	c  *datas.Commit
	at int64 // commit time, Unix milliseconds
}

// add queues c with its commit time at (0 where the order must not depend
// on clocks).
func (q *commitQueue) add(c *datas.Commit, at int64) { heap.Push(q, queuedCommit{c: c, at: at}) }

// commitTime is c's commit time in Unix milliseconds, 0 if unreadable.
func commitTime(ctx context.Context, c *datas.Commit) int64 {
	if meta, err := datas.GetCommitMeta(ctx, c.NomsValue()); err == nil {
		return meta.UserTimestamp
	}
	return 0
}

// next takes the first commit off the queue.
func (q *commitQueue) next() *datas.Commit { return heap.Pop(q).(queuedCommit).c }

func (q commitQueue) Len() int { return len(q) }
func (q commitQueue) Less(i, j int) bool {
	a, b := q[i], q[j]
	switch {
	case a.c.Height() != b.c.Height():
		return a.c.Height() > b.c.Height()
	case a.at != b.at:
		return a.at > b.at
	}
	return a.c.Addr().Less(b.c.Addr())
}
func (q commitQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *commitQueue) Push(x any)   { *q = append(*q, x.(queuedCommit)) }
func (q *commitQueue) Pop() any     { old := *q; c := old[len(old)-1]; *q = old[:len(old)-1]; return c }
