package storage

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"github.com/dolthub/dolt/go/store/datas"
	"github.com/dolthub/dolt/go/store/prolly"
	"github.com/dolthub/dolt/go/store/prolly/message"
	"github.com/dolthub/dolt/go/store/prolly/tree"
	"github.com/dolthub/dolt/go/store/val"
	"golang.org/x/sync/errgroup"
)

// Checkpoint writes every branch's acknowledged edits into its prolly
// trees and makes that the durable working root, so that the log before it
// can be recycled.
func (d *Database) Checkpoint(ctx context.Context) error {
	if !d.holdIfOpen() {
		return nil // closed, and checkpointed as it closed
	}
	defer d.release()
	for _, b := range d.branchList() {
		err := d.withWriteLock(b, func() error {
			if d.closed.Load() {
				return ErrClosed
			}
			return d.checkpointLocked(ctx, b)
		})
		if err != nil {
			return diskFull(err)
		}
	}
	// The checkpoint is made: a failed compaction leaves more table files,
	// which the next checkpoint compacts again, and must not fail it.
	if err := d.compactTables(ctx); err != nil {
		d.log.Warn().Str("c", "STORAGE").Err(err).Str("db", d.name).Msg("compacting the table files failed")
	}
	return nil
}

// withWriteLock runs fn holding b's writer lock, released on every path.
func (d *Database) withWriteLock(b *branch, fn func() error) error {
	b.writeMu.Lock()
	defer b.writeMu.Unlock()
	return fn()
}

// checkpointLocked folds b's edits into new base maps, writes the root and
// moves the working set in one durable update. Called with b.writeMu held.
func (d *Database) checkpointLocked(ctx context.Context, b *branch) error {
	st := b.state.Load()
	if st.checkpointed {
		return nil
	}
	start := time.Now()
	// Never let a checkpoint claim a record the log might still lose.
	if err := d.wl.WaitDurable(st.lsn); err != nil {
		return err
	}
	// The checkpoint lets replay skip records, so the outcomes of retryable
	// writes they carry must be in the retry file first.
	if err := d.retries.save(d.dir, time.Now()); err != nil {
		return err
	}
	// And so must the change events of the records it lets replay skip.
	if err := d.syncChanges(); err != nil {
		return err
	}
	d.engine.panics.at("checkpoint.fold")
	next, err := d.writeCheckpoint(ctx, b, st)
	if err != nil {
		// The branch keeps its edits and the log its records, so the next
		// checkpoint does this one again; only Dolt's temporary file would
		// stay behind.
		d.removeFailedTemp(err)
		return err
	}
	b.setDurable(next)
	if st.editBytes() > d.engine.opts.CacheBytes/historyEditShare {
		b.hist.dropBefore(next) // see historyEditShare
	}
	d.engine.addEditBytes(-st.editBytes())
	d.log.Debug().Str("c", "STORAGE").Str("db", d.name).Uint64("lsn", st.lsn).
		Dur("durationMillis", time.Since(start)).Msg("checkpoint")
	return d.wl.Recycle(d.recyclePoint(st.lsn))
}

// writeCheckpoint writes st's edits into new prolly maps and makes their
// root b's durable working root; it returns the checkpointed state.
func (d *Database) writeCheckpoint(ctx context.Context, b *branch, st *rootState) (*rootState, error) {
	colls := make(map[string]*collection, len(st.colls))
	for name, c := range st.colls {
		base, err := foldEdits(ctx, d.ns, c, d.largeDoc())
		if err != nil {
			return nil, fmt.Errorf("checkpoint %s.%s: %w", d.name, name, err)
		}
		indexes, err := foldIndexes(ctx, d.ns, c, base)
		if err != nil {
			return nil, fmt.Errorf("checkpoint %s.%s: %w", d.name, name, err)
		}
		capped, err := foldCapped(ctx, d.ns, c.capped)
		if err != nil {
			return nil, fmt.Errorf("checkpoint %s.%s: %w", d.name, name, err)
		}
		colls[name] = &collection{info: c.info, base: base, count: c.count, indexes: indexes, capped: capped}
	}
	next := &rootState{colls: colls, lsn: st.lsn, ckptLSN: st.lsn, checkpointed: true,
		merge: st.merge, conflicts: st.conflicts}
	root, err := buildRoot(ctx, d.ns, next)
	if err != nil {
		return nil, err
	}
	if err := d.persist(ctx, b, root, st.lsn); err != nil {
		return nil, err
	}
	d.engine.panics.at("checkpoint.persist")
	next.root = root
	return next, nil
}

// recyclePoint is the highest LSN no branch still needs from the log: the
// oldest checkpoint among branches with edits outside one, else upTo.
func (d *Database) recyclePoint(upTo uint64) uint64 {
	point := upTo
	for _, b := range d.branchList() {
		if st := b.state.Load(); !st.checkpointed {
			point = min(point, st.ckptLSN)
		}
	}
	return point
}

// foldEdits applies a collection's edits to its base map, storing values
// as largeDoc says (nil: all as plain values). The edits are already in
// key order, so they go straight to Dolt's tree mutator: a MutableMap
// would first sort them again into its skip list, and its tuple builders
// are made per call, which together cost about a third of a fold.
func foldEdits(ctx context.Context, ns tree.NodeStore, c *collection, largeDoc *docWriter) (prolly.Map, error) {
	if c.edits == nil || c.edits.Len() == 0 {
		return c.base, nil
	}
	all := make([]*edit, 0, c.edits.Len())
	c.edits.Ascend(func(e *edit) bool { all = append(all, e); return true })
	large, err := writeLargeValues(ctx, ns, all, largeDoc)
	if err != nil {
		return prolly.Map{}, err
	}
	kd, vd := c.base.Descriptors()
	muts := &editMutations{ns: ns, edits: all, large: large, largeDoc: largeDoc,
		keys: val.NewTupleBuilder(kd, ns), values: val.NewTupleBuilder(vd, ns)}
	root, err := tree.ApplyMutations[val.Tuple](ctx, ns, c.base.Node(), kd, message.NewProllyMapSerializer(vd, ns.Pool()), muts)
	if err == nil {
		err = muts.err
	}
	if err != nil {
		return prolly.Map{}, err
	}
	return prolly.NewMap(root, ns, kd, vd), nil
}

// editMutations hands sorted edits to Dolt's tree mutator as key and value
// tuples, built with one builder each for the whole fold. The mutator
// takes no error from an iterator: the first one ends the iteration and
// is kept in err, and the fold's result is then dropped.
type editMutations struct {
	ns           tree.NodeStore
	edits        []*edit
	large        map[*edit]val.Tuple // values written ahead, by writeLargeValues
	largeDoc     *docWriter
	keys, values *val.TupleBuilder
	err          error
}

func (m *editMutations) NextMutation(ctx context.Context) tree.Mutation {
	if len(m.edits) == 0 || m.err != nil {
		return tree.Mutation{}
	}
	e := m.edits[0]
	m.edits = m.edits[1:]
	m.keys.PutByteString(0, e.key)
	k, err := m.keys.Build(m.ns.Pool())
	if err != nil {
		m.err = err
		return tree.Mutation{}
	}
	if e.value == nil {
		return tree.Mutation{Key: tree.Item(k)} // a deletion
	}
	v := m.large[e]
	if v == nil {
		if v, err = buildDocValue(ctx, m.ns, m.values, e.value, m.largeDoc); err != nil {
			m.err = err
			return tree.Mutation{}
		}
	}
	return tree.Mutation{Key: tree.Item(k), Value: tree.Item(v)}
}

func (m *editMutations) Close() error { return nil }

// parallelValueSize is the size from which checkpoints write values (blob
// or doctree) on all cores at once, ahead of applying them in key order.
const parallelValueSize = 16 << 10

// writeLargeValues writes the out-of-line values among edits in parallel
// and returns their tuples.
func writeLargeValues(ctx context.Context, ns tree.NodeStore, all []*edit, largeDoc *docWriter) (map[*edit]val.Tuple, error) {
	var large []*edit
	for _, e := range all {
		if len(e.value) >= parallelValueSize {
			large = append(large, e)
		}
	}
	if len(large) < 2 {
		return nil, nil
	}
	tuples := make([]val.Tuple, len(large))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(runtime.GOMAXPROCS(0))
	for i, e := range large {
		g.Go(func() error {
			var err error
			tuples[i], err = docValueTuple(gctx, ns, e.value, largeDoc)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	out := make(map[*edit]val.Tuple, len(large))
	for i, e := range large {
		out[e] = tuples[i]
	}
	return out, nil
}

// persist makes root the branch's durable working root, recording the last
// log record it includes.
func (d *Database) persist(ctx context.Context, b *branch, root prolly.AddressMap, lsn uint64) error {
	workingRef, err := d.vs.WriteValue(ctx, tree.ValueFromNode(root.Node()))
	if err != nil {
		return err
	}
	spec := datas.WorkingSetSpec{
		Meta: &datas.WorkingSetMeta{
			Name: "dumbodb", Email: "dumbodb@localhost",
			Description: fmt.Sprintf("%s%d", walLSNPrefix, lsn),
			Timestamp:   uint64(time.Now().UnixMilli()),
		},
		WorkingRoot: workingRef,
		StagedRoot:  b.headRef,
	}
	if !d.born.Load() {
		// Only main exists before the store is written (birth.go).
		if done, err := d.persistBorn(ctx, b, spec); done || err != nil {
			return err
		}
	}
	prev, _ := b.ws.MaybeHeadAddr()
	var ws datas.Dataset
	err = retryManifestLock(func() (err error) {
		ws, err = d.db.UpdateWorkingSet(ctx, b.ws, spec, prev)
		return err
	})
	if err != nil {
		return fmt.Errorf("update working set of %s@%s: %w", d.name, b.name, err)
	}
	b.ws = ws
	return nil
}
