package storage

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/dolthub/dolt/go/store/chunks"
	"github.com/dolthub/dolt/go/store/datas"
	"github.com/dolthub/dolt/go/store/hash"
	"github.com/dolthub/dolt/go/store/types"
)

// GC removes the chunks no branch, tag, commit or working set reaches
// (dropped branches, superseded working roots). Writers wait while it runs;
// every branch is checkpointed first, so every live state is reachable
// from a ref, and the trees that open snapshots read are kept too (pins).
// It reports the database's size on disk before (once those checkpoints
// are made) and after.
func (d *Database) GC(ctx context.Context) (before, after int64, err error) {
	ctx, leave, err := d.enterGate(ctx)
	if err != nil {
		return 0, 0, err
	}
	defer leave()
	if err := d.hold(ctx); err != nil {
		return 0, 0, err
	}
	defer d.release()
	d.pins.building.Lock() // index builds ahead: see inMemorySafepoint
	defer d.pins.building.Unlock()
	return d.collect(ctx)
}

// collect is GC on a database held open, with no index build ahead under
// way or starting (pins.building held).
func (d *Database) collect(ctx context.Context) (before, after int64, err error) {
	d.ckptMu.Lock() // a fold beside the writers writes chunks no ref reaches yet
	defer d.ckptMu.Unlock()
	ctx, done := d.running.start(ctx) // closing the database stops it
	defer done()
	d.compactMu.Lock() // a compaction's table files are not GC's leftovers
	defer d.compactMu.Unlock()
	branches := d.branchList()
	sort.Slice(branches, func(i, j int) bool { return branches[i].name < branches[j].name })
	for _, b := range branches {
		d.engine.lockWriter(b)
		defer b.writeMu.Unlock()
	}
	if d.closed.Load() {
		return 0, 0, ErrClosed
	}
	for _, b := range branches {
		if err := d.checkpointLocked(ctx, b); err != nil {
			return 0, 0, diskFull(err)
		}
	}
	// Measured with the writers held and their edits checkpointed, so
	// that before - after is what the GC itself freed: measured before
	// the locks, the log's growth from writes meanwhile counted against
	// it, and could cancel a small store's saving.
	before = d.engine.SizeOnDisk(d.name)
	if !d.born.Load() {
		return before, before, nil // a store never written holds nothing
	}
	if err := d.sweep(ctx, inMemorySafepoint{d}); err != nil {
		return before, before, err
	}
	return before, d.engine.SizeOnDisk(d.name), nil
}

// sweep keeps what every ref, open snapshot and past state kept for
// reads reaches, and removes the rest of the store's chunks. Called
// with ckptMu and compactMu held and every branch checkpointed.
func (d *Database) sweep(ctx context.Context, safepoint types.GCSafepointController) error {
	d.engine.panics.at("vc.locked")
	keep := hash.NewHashSet()
	dss, err := d.db.Datasets(ctx)
	if err != nil {
		return err
	}
	if err := dss.IterAll(ctx, func(_ string, h hash.Hash) error { keep.Insert(h); return nil }); err != nil {
		return err
	}
	// States that open snapshots and cursors still read may be older than
	// the checkpoints just made.
	for _, h := range append(d.pins.roots(), d.historyRoots()...) {
		keep.Insert(h)
	}
	gc, ok := d.db.(datas.GarbageCollector)
	if !ok {
		return fmt.Errorf("the chunk store of %s cannot collect garbage", d.name)
	}
	if d.docs != nil {
		d.docs.trees.Forget() // it would remember chunks GC may remove
	}
	files, err := d.dirNames()
	if err != nil {
		return err
	}
	// Nothing to collect (nothing written since the last GC) is a GC
	// that freed nothing, not a failure.
	err = gc.GC(ctx, types.GCModeFull, chunks.NoArchive, hash.NewHashSet(), keep, safepoint)
	if err != nil && !errors.Is(err, chunks.ErrNothingToCollect) {
		// The old table files are still the store's: only what GC was
		// writing must go, or a full disk would stay full.
		d.removeFailedTemp(err)
		d.removeGCLeftovers(files)
		return diskFull(fmt.Errorf("gc %s: %w", d.name, err))
	}
	d.ns.PurgeCaches()
	d.gcBase.Store(max(d.storeSize(), 1)) // automatic GC counts growth from here
	return nil
}

// inMemorySafepoint is what a GC keeps beyond the refs: once the GC has
// begun, the chunk store passes it every chunk written or read, and
// BeginGC hands it the trees of every branch's current state (which the
// GC, holding the writers, has checkpointed), of the past states kept for
// reads and of the pinned ones, among them the indexes built ahead of
// their createIndexes (PrepareIndexes), which no build is writing: the
// GC runs with pins.building held, so builds that ended have pinned what
// they built and new ones wait.
type inMemorySafepoint struct{ d *Database }

func (s inMemorySafepoint) BeginGC(_ context.Context, keep func(hash.Hash) bool) error {
	var states []*rootState
	for _, b := range s.d.branchList() {
		states = append(states, b.state.Load())
	}
	for _, h := range append(append(treeRoots(states), s.d.pins.roots()...), s.d.historyRoots()...) {
		keep(h)
	}
	return nil
}

// Nothing is written through the refs while the GC runs (it holds the
// writers and the checkpoints), so no safepoint beyond BeginGC's is needed.
func (inMemorySafepoint) EstablishPreFinalizeSafepoint(context.Context) error  { return nil }
func (inMemorySafepoint) EstablishPostFinalizeSafepoint(context.Context) error { return nil }
func (inMemorySafepoint) CancelSafepoint()                                     {}
