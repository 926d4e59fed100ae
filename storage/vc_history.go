package storage

import (
	"bytes"
	"container/heap"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/dolthub/dolt/go/store/datas"
	"github.com/dolthub/dolt/go/store/hash"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// LogOptions select the commits Log returns.
type LogOptions struct {
	From  Revision
	All   bool // the history of every branch (From is not used)
	Limit int  // 0: all
	// After continues a listing: the commits after this one (its id) in
	// the walk's order, which is the same from call to call.
	After       string
	Collections []string         // only commits that changed one of these collections
	IDs         []bsoncore.Value // with Collections: only commits that changed one of these documents
	Since       time.Time        // zero: no bound
	Until       time.Time        // zero: no bound
	Author      string           // only commits whose author contains it (any case)
	// Keep, if set, decides last on each commit the others selected.
	Keep func(CommitInfo) (bool, error)
}

// Log lists commits newest first, in topological order (a commit always
// before its parents; both parents of merges are followed).
func (d *Database) Log(ctx context.Context, opts LogOptions) ([]CommitInfo, error) {
	out, _, err := d.LogPage(ctx, opts)
	return out, err
}

// LogPage is Log that also says whether more selected commits follow the
// Limit returned.
func (d *Database) LogPage(ctx context.Context, opts LogOptions) ([]CommitInfo, bool, error) {
	if err := d.hold(ctx); err != nil {
		return nil, false, err
	}
	defer d.release()
	defer d.flushHistoryIndex()
	w, err := d.newLogWalk(ctx, opts)
	if err != nil {
		return nil, false, err
	}
	var out []CommitInfo
	for {
		info, ok, err := w.next(ctx)
		if err != nil || !ok {
			return out, false, err
		}
		if opts.Limit > 0 && len(out) == opts.Limit {
			return out, true, nil
		}
		out = append(out, info)
	}
}

// logWalk is one pass of Log over the history.
type logWalk struct {
	d         *Database
	opts      LogOptions
	keys      [][]byte
	keyHashes []uint64
	refs      map[hash.Hash][]string
	q         *commitQueue
	seen      map[hash.Hash]bool
	skipping  bool // before opts.After
	// indexed: the walk selects by collection, so it goes over the
	// history index's summaries and reads only the commits they select.
	indexed bool
}

func (d *Database) newLogWalk(ctx context.Context, opts LogOptions) (*logWalk, error) {
	starts, err := d.logStarts(ctx, opts)
	if err != nil {
		return nil, err
	}
	refs, err := d.refsByCommit(ctx)
	if err != nil {
		return nil, err
	}
	w := &logWalk{d: d, opts: opts, refs: refs, q: &commitQueue{}, seen: map[hash.Hash]bool{},
		skipping: opts.After != "", indexed: len(opts.Collections) > 0}
	for _, id := range opts.IDs {
		key := encodeID(id)
		w.keys = append(w.keys, key)
		w.keyHashes = append(w.keyHashes, keyHash(key))
	}
	for _, c := range starts {
		if err := w.push(ctx, c.Addr(), c); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// logStarts is where the walk starts: a revision's commit, or every
// branch's head.
func (d *Database) logStarts(ctx context.Context, opts LogOptions) ([]*datas.Commit, error) {
	if !opts.All {
		c, err := d.revisionCommit(ctx, opts.From)
		return []*datas.Commit{c}, err
	}
	names, err := d.branchNames(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]*datas.Commit, 0, len(names))
	for _, name := range names {
		c, err := d.headCommit(ctx, name)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// push queues a commit not seen yet: with the index by its summary (c
// may be nil), else by c.
func (w *logWalk) push(ctx context.Context, addr hash.Hash, c *datas.Commit) error {
	if w.seen[addr] {
		return nil
	}
	w.seen[addr] = true
	if !w.indexed {
		w.q.add(queuedCommit{addr: addr, height: c.Height(), at: commitTime(ctx, c), c: c})
		return nil
	}
	s, err := w.d.summary(ctx, addr)
	if err == nil {
		w.q.add(queuedCommit{addr: addr, height: s.height, at: s.at, c: c, s: s})
	}
	return err
}

// next is the next commit the options select (ok false: none left).
func (w *logWalk) next(ctx context.Context) (CommitInfo, bool, error) {
	for w.q.Len() > 0 {
		if err := ctx.Err(); err != nil { // a history walk may visit every commit
			return CommitInfo{}, false, err
		}
		qc := w.q.next()
		sel, err := w.visit(ctx, qc)
		if err != nil {
			return CommitInfo{}, false, err
		}
		if w.skipping {
			w.skipping = qc.addr.String() != w.opts.After
			continue
		}
		info, ok, err := sel()
		if err != nil || ok {
			return info, ok, err
		}
	}
	if w.skipping {
		return CommitInfo{}, false, fmt.Errorf("%w: the listing to continue after %s is not in this history", ErrRevisionNotFound, w.opts.After)
	}
	return CommitInfo{}, false, nil
}

// visit queues a commit's parents and returns what selects it.
func (w *logWalk) visit(ctx context.Context, qc queuedCommit) (func() (CommitInfo, bool, error), error) {
	if s := qc.s; s != nil {
		for _, p := range s.parents {
			if err := w.push(ctx, p, nil); err != nil {
				return nil, err
			}
		}
		return func() (CommitInfo, bool, error) { return w.selectsIndexed(ctx, qc.addr, s) }, nil
	}
	parents, err := datas.GetCommitParents(ctx, w.d.vs, qc.c.NomsValue())
	if err != nil {
		return nil, err
	}
	for _, p := range parents {
		if err := w.push(ctx, p.Addr(), p); err != nil {
			return nil, err
		}
	}
	return func() (CommitInfo, bool, error) { return w.selects(ctx, qc.c) }, nil
}

// selectsIndexed applies the options to a commit by its summary,
// reading the commit only when the summary selects it (or, for a
// collection it changed whole, to look its documents up).
func (w *logWalk) selectsIndexed(ctx context.Context, addr hash.Hash, s *commitSummary) (CommitInfo, bool, error) {
	changed, lookUp := w.changedBySummary(s)
	if !changed {
		return CommitInfo{}, false, nil
	}
	c, err := datas.LoadCommitAddr(ctx, w.d.vs, addr)
	if err != nil {
		return CommitInfo{}, false, err
	}
	if len(lookUp) > 0 {
		parents, err := datas.GetCommitParents(ctx, w.d.vs, c.NomsValue())
		if err != nil {
			return CommitInfo{}, false, err
		}
		if changed, err = w.d.changedIn(ctx, c, parents, lookUp, w.keys); err != nil || !changed {
			return CommitInfo{}, false, err
		}
	}
	return w.selects(ctx, c)
}

// changedBySummary says whether a summary selects its commit; lookUp
// lists the collections it changed whole, where only a look-up of the
// documents asked for can tell (then changed is true only if one does).
func (w *logWalk) changedBySummary(s *commitSummary) (changed bool, lookUp []string) {
	for _, coll := range w.opts.Collections {
		cc, ok := s.colls[coll]
		switch {
		case !ok:
			continue
		case len(w.keyHashes) == 0:
			return true, nil
		case cc.whole:
			lookUp = append(lookUp, coll)
			continue
		}
		for _, kh := range w.keyHashes {
			if touched, _ := s.touches(coll, kh); touched {
				return true, nil
			}
		}
	}
	return len(lookUp) > 0, lookUp
}

// selects applies the options but the collections to one commit.
func (w *logWalk) selects(ctx context.Context, c *datas.Commit) (CommitInfo, bool, error) {
	info, err := w.d.describe(ctx, c, w.refs)
	if err != nil {
		return CommitInfo{}, false, err
	}
	o := w.opts
	switch {
	case !o.Since.IsZero() && info.Timestamp.Before(o.Since), !o.Until.IsZero() && info.Timestamp.After(o.Until):
		return CommitInfo{}, false, nil
	case o.Author != "" && !strings.Contains(strings.ToLower(info.Author), strings.ToLower(o.Author)):
		return CommitInfo{}, false, nil
	case o.Keep != nil:
		keep, err := o.Keep(info)
		return info, keep, err
	}
	return info, true, nil
}

// changedIn reports whether commit c changed one of the collections (or,
// with keys, one of those documents of them) relative to its first parent.
func (d *Database) changedIn(ctx context.Context, c *datas.Commit, parents []*datas.Commit, colls []string, keys [][]byte) (bool, error) {
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
	for _, coll := range colls {
		changed, err := d.collectionChanged(ctx, prev, cur, coll, keys)
		if err != nil || changed {
			return changed, err
		}
	}
	return false, nil
}

func (d *Database) collectionChanged(ctx context.Context, prev, cur *rootState, coll string, keys [][]byte) (bool, error) {
	a, aok := prev.colls.lookup(coll)
	b, bok := cur.colls.lookup(coll)
	switch {
	case len(keys) == 0 && (!aok || !bok):
		return aok != bok, nil
	case len(keys) == 0:
		return a.base.HashOf() != b.base.HashOf(), nil
	}
	for _, key := range keys {
		// A side without the collection has none of its documents: a
		// collection made or dropped changed only the documents it held.
		av, err := d.lookupIn(ctx, a, aok, key)
		if err != nil {
			return false, err
		}
		bv, err := d.lookupIn(ctx, b, bok, key)
		if err != nil || !bytes.Equal(av, bv) {
			return err == nil, err
		}
	}
	return false, nil
}

// lookupIn is a document of a committed collection (nil when the
// collection, present false, or the document is not there).
func (d *Database) lookupIn(ctx context.Context, c *collection, present bool, key []byte) ([]byte, error) {
	if !present {
		return nil, nil
	}
	v, _, err := lookup(ctx, d.ns, c.base, nil, key)
	return v, err
}

// commitQueue orders commits by height, highest first (a child is always
// higher than its parents), then newest first by commit time (what a log
// reader expects of commits on parallel branches), then by address, so
// walks are deterministic.
type commitQueue []queuedCommit

type queuedCommit struct {
	addr   hash.Hash
	height uint64
	at     int64          // commit time, Unix milliseconds (0 where the order must not depend on clocks)
	c      *datas.Commit  // nil: not read (a walk over summaries)
	s      *commitSummary // its summary, in a walk over summaries
}

func (q *commitQueue) add(qc queuedCommit) { heap.Push(q, qc) }

// commitTime is c's commit time in Unix milliseconds, 0 if unreadable.
func commitTime(ctx context.Context, c *datas.Commit) int64 {
	if meta, err := datas.GetCommitMeta(ctx, c.NomsValue()); err == nil {
		return meta.UserTimestamp
	}
	return 0
}

// next takes the first commit off the queue.
func (q *commitQueue) next() queuedCommit { return heap.Pop(q).(queuedCommit) }

func (q commitQueue) Len() int { return len(q) }
func (q commitQueue) Less(i, j int) bool {
	a, b := q[i], q[j]
	switch {
	case a.height != b.height:
		return a.height > b.height
	case a.at != b.at:
		return a.at > b.at
	}
	return a.addr.Less(b.addr)
}
func (q commitQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *commitQueue) Push(x any)   { *q = append(*q, x.(queuedCommit)) }
func (q *commitQueue) Pop() any     { old := *q; c := old[len(old)-1]; *q = old[:len(old)-1]; return c }
