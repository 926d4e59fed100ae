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
// can be recycled. Each branch's edits are folded beside its writers
// (checkpointBeside); one checkpoint runs per database at a time.
func (d *Database) Checkpoint(ctx context.Context) error {
	ctx, leave, err := d.enterGate(ctx)
	if err != nil {
		return err
	}
	defer leave()
	if !d.holdIfOpen() {
		return nil // closed, and checkpointed as it closed
	}
	defer d.release()
	d.ckptMu.Lock()
	defer d.ckptMu.Unlock()
	ctx, done := d.running.start(ctx)
	defer done()
	for _, b := range d.branchList() {
		if err := d.checkpointBeside(ctx, b); err != nil {
			return diskFull(err)
		}
	}
	// The checkpoint is made: a failed compaction leaves more table files,
	// which the next checkpoint compacts again, and must not fail it.
	if err := d.compactTables(ctx); err != nil {
		d.log.Warn().Str("c", "STORAGE").Err(err).Str("db", d.name).Msg("compacting the table files failed")
	}
	d.collectSoon()
	return nil
}

// withWriteLock runs fn holding b's writer lock, released on every path.
func (d *Database) withWriteLock(b *branch, fn func() error) error {
	d.engine.lockWriter(b)
	defer b.writeMu.Unlock()
	return fn()
}

// checkpointBeside checkpoints b holding its writer lock only to freeze
// the state it folds and to swap the folded maps in (durability.md,
// "Checkpoints beside writers"). Called with d.ckptMu held.
func (d *Database) checkpointBeside(ctx context.Context, b *branch) error {
	var st *rootState
	var lineage uint64
	err := d.withWriteLock(b, func() error {
		if d.closed.Load() {
			return ErrClosed
		}
		cur := b.state.Load()
		switch {
		case b.deleted || cur.checkpointed:
			return nil
		case !foldableBeside(cur):
			return d.checkpointLocked(ctx, b)
		}
		st, lineage = cur, b.lineage
		b.replaceCurrent(frozenState(cur))
		return nil
	})
	if err != nil || st == nil {
		return err
	}
	start := time.Now()
	folded, err := d.foldBeside(ctx, st)
	if err != nil {
		return err // the frozen layers stay, and the next checkpoint folds them again
	}
	err = d.withWriteLock(b, func() error { return d.swapFolded(ctx, b, st, lineage, folded) })
	if err == nil {
		d.engine.checkpointed(time.Since(start))
	}
	return err
}

// foldableBeside reports whether st can be folded beside its writers: a
// merge in progress and capped collections (their conflict and order
// maps) are left to the checkpoint under the lock.
func foldableBeside(st *rootState) bool {
	if st.merge != nil || len(st.conflicts) > 0 {
		return false
	}
	for _, c := range st.colls.all() {
		if c.capped != nil {
			return false
		}
	}
	return true
}

// frozenState is st with every edit set frozen below fresh trees: the
// same content, which writers change without changing st's sets.
func frozenState(st *rootState) *rootState {
	next := *st
	colls := make(map[string]*collection, st.colls.len())
	for name, c := range st.colls.all() {
		fc := *c
		fc.edits = frozenOver(c.edits)
		fc.indexes = make([]*indexState, len(c.indexes))
		for i, ix := range c.indexes {
			fix := *ix
			fix.edits = frozenOver(ix.edits)
			fc.indexes[i] = &fix
		}
		colls[name] = &fc
	}
	next.colls = newCollMap(colls)
	return &next
}

// foldBeside folds a frozen state's edits into new maps and builds their
// root, without any lock: st's edit sets no longer change.
func (d *Database) foldBeside(ctx context.Context, st *rootState) (*rootState, error) {
	if err := d.readyToClaim(st.lsn); err != nil {
		return nil, err
	}
	d.engine.panics.at("checkpoint.fold")
	folded, err := d.foldState(ctx, st)
	if err == nil {
		err = d.writeChunks(ctx)
	}
	if err != nil {
		d.removeFailedTemp(err) // see checkpointLocked
		return nil, err
	}
	return folded, nil
}

// writeChunks writes the chunks the store still buffers to disk. The
// fold's chunks would otherwise be written by the working-set update,
// under the writers' lock (a quarter of a fold's time); a commit of the
// store's own root writes them and moves nothing. Nothing else commits
// to the store meanwhile (ckptMu is held), and if something did, the
// commit would just not happen here.
func (d *Database) writeChunks(ctx context.Context) error {
	if !d.born.Load() {
		// A store not yet written must get its manifest from persistBorn,
		// with main's initial commit, never from a bare commit of chunks
		// (birth.go): its first checkpoint writes them under the lock.
		return nil
	}
	root, err := d.cs.Root(ctx)
	if err != nil {
		return err
	}
	return retryManifestLock(func() error {
		_, err := d.cs.Commit(ctx, root, root)
		return err
	})
}

// swapFolded publishes a fold made beside the writers: when b's state
// still descends from the freeze of st, it moves the working set to the
// folded root and rebases the current state on the folded maps. Called
// with b.writeMu held.
func (d *Database) swapFolded(ctx context.Context, b *branch, st *rootState, lineage uint64, folded *rootState) error {
	if d.closed.Load() || b.deleted || b.lineage != lineage {
		// Replaced by a rollback after a failed log write, which leaves
		// its state to the next checkpoint, or by close or drop.
		return nil
	}
	cur := b.state.Load()
	next, ok := rebased(cur, st, folded)
	if !ok {
		// The catalog changed during the fold (a drop, a rename, an
		// index): fold it all here, as before.
		return d.checkpointLocked(ctx, b)
	}
	if err := d.persist(ctx, b, folded.root, st.lsn); err != nil {
		d.removeFailedTemp(err)
		return err
	}
	d.engine.panics.at("checkpoint.persist")
	return d.adoptFolded(ctx, b, cur, st, folded, next)
}

// adoptFolded publishes in memory a fold of st that is now b's durable
// working root: folded itself when nothing was written since the freeze,
// else next, the current state cur rebased on the folded maps. Called
// with b.writeMu held.
func (d *Database) adoptFolded(ctx context.Context, b *branch, cur, st, folded, next *rootState) error {
	if cur.lsn == st.lsn {
		next = folded // nothing written since the freeze
		b.setDurable(next)
	} else {
		// The rebased state is not a checkpoint itself, but its maps are
		// the fold's: the node cache forgets what they replaced.
		b.forgetRoot(ctx, folded)
		b.replaceCurrent(next)
	}
	d.checkpointed(b, st, next)
	d.log.Debug().Str("c", "STORAGE").Str("db", d.name).Uint64("lsn", st.lsn).Uint64("rebasedLSN", next.lsn).
		Msg("checkpoint beside the writers")
	return d.wl.Recycle(d.recyclePoint(st.lsn))
}

// rebased is cur, a state built by transactions on the freeze of st, on
// the maps st's edits were folded into: the collections of st keep only
// the edits made since the freeze, and those created since stay as they
// are. ok is false when cur no longer has st's collections and indexes
// (dropped, renamed, re-created, indexes built or dropped since).
func rebased(cur, st, folded *rootState) (*rootState, bool) {
	if cur.merge != nil || len(cur.conflicts) > 0 {
		return nil, false
	}
	changes := make(map[string]*collection, st.colls.len())
	for name, was := range st.colls.all() {
		c, ok := cur.colls.lookup(name)
		if !ok {
			return nil, false
		}
		if changes[name], ok = rebasedCollection(c, was, folded.colls.get(name)); !ok {
			return nil, false
		}
	}
	// A fresh base: cur's holds the frozen collections, whose edits the
	// fold has just released, and would keep them until the next freeze.
	return &rootState{colls: newCollMap(cur.colls.with(changes).clone()), lsn: cur.lsn, ckptLSN: st.lsn}, true
}

// rebasedCollection is c, built on the frozen was, on f's folded maps.
func rebasedCollection(c, was, f *collection) (*collection, bool) {
	if c.info.UUID != was.info.UUID || c.capped != nil || f == nil || len(c.indexes) != len(was.indexes) ||
		!builtOnFrozen(c.base, c.edits, was.base, was.edits) {
		return nil, false
	}
	r := *c
	r.base, r.edits = f.base, withoutFrozen(c.edits)
	// The frozen layers' bytes are released by the swap (checkpointed).
	r.editBytes = c.editBytes - was.editBytes
	r.indexes = make([]*indexState, len(c.indexes))
	for i, ix := range c.indexes {
		w, fi := was.indexes[i], f.index(ix.spec.Name)
		if string(ix.spec.Raw) != string(w.spec.Raw) || fi == nil || !builtOnFrozen(ix.base, ix.edits, w.base, w.edits) {
			return nil, false
		}
		r.indexes[i] = &indexState{spec: ix.spec, base: fi.base, edits: withoutFrozen(ix.edits), of: fi.of,
			multikey: ix.multikey}
	}
	return &r, true
}

// builtOnFrozen reports whether a map and its edits were built on the
// freeze of wasBase and wasEdits: the same base, and those edits as the
// frozen layer.
func builtOnFrozen(base prolly.Map, ed *edits, wasBase prolly.Map, wasEdits *edits) bool {
	return frozenOf(ed) == wasEdits && base.HashOf() == wasBase.HashOf()
}

// readyToClaim makes what a checkpoint at lsn lets replay skip durable
// elsewhere first.
func (d *Database) readyToClaim(lsn uint64) error {
	// Never let a checkpoint claim a record the log might still lose.
	if err := d.wl.WaitDurable(lsn); err != nil {
		return err
	}
	// The checkpoint lets replay skip records, so the outcomes of retryable
	// writes they carry must be in the retry file first.
	if err := d.retries.save(d.dir, time.Now(), lsn); err != nil {
		return err
	}
	// And so must the change events of the records it lets replay skip.
	return d.syncChanges()
}

// checkpointed settles the accounts after st's edits were folded and next
// published: the budget no longer counts them, and the history, whose
// states before next still hold them, counts them against its share
// (historyEditShare).
func (d *Database) checkpointed(b *branch, st, next *rootState) {
	b.hist.supersede(d.engine, next, st.editBytes())
	d.engine.addEditBytes(-st.editBytes())
	d.trimHasCache()
	d.tombstones.reset()
}

// checkpointLocked folds b's edits into new base maps, writes the root and
// moves the working set in one durable update. Called with b.writeMu held.
func (d *Database) checkpointLocked(ctx context.Context, b *branch) error {
	st := b.state.Load()
	if st.checkpointed {
		return nil
	}
	start := time.Now()
	if err := d.readyToClaim(st.lsn); err != nil {
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
	d.checkpointed(b, st, next)
	d.engine.checkpointed(time.Since(start))
	d.log.Debug().Str("c", "STORAGE").Str("db", d.name).Uint64("lsn", st.lsn).
		Dur("durationMillis", time.Since(start)).Msg("checkpoint")
	return d.wl.Recycle(d.recyclePoint(st.lsn))
}

// writeCheckpoint writes st's edits into new prolly maps and makes their
// root b's durable working root; it returns the checkpointed state.
func (d *Database) writeCheckpoint(ctx context.Context, b *branch, st *rootState) (*rootState, error) {
	next, err := d.foldState(ctx, st)
	if err != nil {
		return nil, err
	}
	if err := d.persist(ctx, b, next.root, st.lsn); err != nil {
		return nil, err
	}
	d.engine.panics.at("checkpoint.persist")
	return next, nil
}

// foldState writes st's edits into new prolly maps and their root, and
// returns the checkpointed state they make (not yet the working root).
func (d *Database) foldState(ctx context.Context, st *rootState) (*rootState, error) {
	colls := make(map[string]*collection, st.colls.len())
	for name, c := range st.colls.all() {
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
	next := &rootState{colls: newCollMap(colls), lsn: st.lsn, ckptLSN: st.lsn, checkpointed: true,
		merge: st.merge, conflicts: st.conflicts}
	root, err := buildRoot(ctx, d.ns, next)
	if err != nil {
		return nil, err
	}
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
	n            int // mutations handed out
	err          error
}

// cancelCheckEvery is how many mutations a fold hands out between looks
// at its context.
const cancelCheckEvery = 4096

func (m *editMutations) NextMutation(ctx context.Context) tree.Mutation {
	if len(m.edits) == 0 || m.err != nil {
		return tree.Mutation{}
	}
	// A fold beside the writers is cancelled by a drop or a close.
	if m.n++; m.n%cancelCheckEvery == 0 && ctx.Err() != nil {
		m.err = ctx.Err()
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
	if !e.live() {
		return tree.Mutation{Key: tree.Item(k)} // a deletion
	}
	v := m.large[e]
	if v == nil {
		if v, err = buildDocValue(ctx, m.ns, m.values, e.doc(), m.largeDoc); err != nil {
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
		if e.docLen() >= parallelValueSize {
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
			tuples[i], err = docValueTuple(gctx, ns, e.doc(), largeDoc)
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
	// Dolt's value store caches each value written, up to 32 MB counted by
	// the values' encoded sizes, and a working set or store root holds the
	// whole buffer it was built in, a few times that: 3 KB a checkpoint
	// that stayed (TestCheckpointsKeepNoMemoryEach). Our reads go through
	// the node store, and the next checkpoint reads its few values again.
	d.vs.PurgeCaches()
	return nil
}
