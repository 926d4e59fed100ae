package storage

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/dolthub/dolt/go/store/datas"
	"github.com/dolthub/dolt/go/store/hash"
	"github.com/dolthub/dolt/go/store/nbs"
	"github.com/dolthub/dolt/go/store/types"
	"github.com/rs/zerolog"

	"github.com/dumbodb/dumbodb/storage/doctree"
	"github.com/dumbodb/dumbodb/storage/wal"
)

// DefaultBranch is the branch a database name without "@" addresses.
const DefaultBranch = "main"

// walLSNPrefix starts the working-set description that records the last log
// record a checkpoint includes (docs/format/wal.md).
const walLSNPrefix = "dumbodb-wal-lsn:"

// Database is one MongoDB database: one Dolt chunk store, its write-ahead
// log and its branches. It closes when idle and reopens on its next call
// (idle.go); the handle itself stays valid until the database is dropped
// or the engine closed.
type Database struct {
	name   string
	dir    string
	log    zerolog.Logger
	engine *Engine

	life     lifetime    // when the fields below may be loaded and released
	closed   atomic.Bool // for good: dropped, or the engine closed
	dropping atomic.Bool // closed for a drop: its files go, so nothing is written for them
	pins     pins        // states that live snapshots read

	// Loaded by open and released by an idle close; calls read them between
	// hold and release, and snapshots keep them open by their pins.
	cs        *nbs.NomsBlockStore
	tables    bool        // cs keeps table files only, no chunk journal (chunkstore.go)
	born      atomic.Bool // cs holds main's initial commit (birth.go)
	birthMu   sync.Mutex  // serialises writing the store's first commit
	compactMu sync.Mutex  // serialises table compaction with GC
	vs        *types.ValueStore
	ns        *nodeStore // in the engine's node cache (nodestore.go)
	db        datas.Database
	wl        *wal.WAL
	mu        sync.Mutex // guards branches
	branches  map[string]*branch
	docs      *docWriter // nil: the path index is off
	recoverMu sync.Mutex // serialises rolling back after a failed log write
	retries   *retryTable
	remotesMu sync.Mutex    // guards remotes and serialises its file's writes
	remotes   *remoteConfig // remotes.go
	// currentSince keeps, while closed for idleness, the time each
	// branch's state became current (history.go). Guarded by mu.
	currentSince map[string]uint64
	replayed     bool // the log is replayed: new branches start a history
	// prepared holds, during replay, the prepared records of transactions
	// over several databases that wait for their commit mark.
	prepared map[txnID]preparedRecord
	// changes queues change events until their records are durable
	// (changes_capture.go).
	changes changeQueue
	// ckptMu is held by a checkpoint for its whole run, and by what must
	// not overlap a fold beside the writers (GC, which would collect its
	// chunks; version-control operations; close): one checkpoint at a
	// time. Taken before any branch's writer lock.
	ckptMu  sync.Mutex
	running runningCheckpoint // the one holding ckptMu, to cancel
	budget  budgetCheckpoint  // the one the edit budget started
	// tombstones counts what scans step over since the last
	// checkpoint, which may start one early (tombstones.go).
	tombstones tombstoneMeter
	// gcBase is the chunk store's size after the last GC, or when the
	// first checkpoint after opening looked; 0: not yet (autogc.go).
	gcBase atomic.Int64
	// historyIdx summarises commits for history queries
	// (vc_history_index.go).
	historyIdx historyIndex
}

// branch is the live state of one branch: the published state that readers
// snapshot, and the lock that serialises its writers and checkpoints.
type branch struct {
	name    string
	writeMu sync.Mutex
	state   atomic.Pointer[rootState]
	// durable is the newest state whose log records are all durable, and
	// unsynced the states published after it, oldest first: after a failed
	// log write the branch goes back to the newest of them that is durable.
	// Guarded by writeMu.
	durable  *rootState
	unsynced []*rootState
	ws       datas.Dataset // working set dataset; guarded by writeMu
	headRef  types.Ref     // the head commit's root, stored as StagedRoot
	deleted  bool          // guarded by writeMu
	// notes describe the writes published since the last commit that
	// carried one (Tx.Note), oldest first, for the next commit's
	// message; in memory only. Guarded by writeMu.
	notes  []WriteNote
	holds  holdTable // documents open transactions have written
	engine *Engine   // whose clock stamps hist
	hist   history   // recent states by time (history.go)
	// lineage counts the states published other than by a transaction
	// on the current one (setDurable): a checkpoint beside the writers
	// swaps its fold in only if none was since its freeze. Guarded by
	// writeMu.
	lineage uint64
	// nodes is the database's node store, and cachedRoot the durable root
	// whose nodes it caches for this branch: a new one makes it forget the
	// nodes it replaced (nodeforget.go). Guarded by writeMu.
	nodes      *nodeStore
	cachedRoot hash.Hash
}

// setDurable publishes a state no log failure can take back: loaded,
// replayed, checkpointed or written to Dolt.
func (b *branch) setDurable(st *rootState) {
	b.lineage++
	b.forgetRoot(context.Background(), st)
	b.state.Store(st)
	b.hist.record(b.engine, st)
	b.durable = st
	clear(b.unsynced)
	b.unsynced = b.unsynced[:0]
}

// replaceCurrent publishes next, which has the current state's content,
// in its place: where the current state waits for its record to be
// durable, or is the durable one, next takes its place too, so that a
// rollback after a failed log write goes back to it.
func (b *branch) replaceCurrent(next *rootState) {
	cur := b.state.Load()
	if n := len(b.unsynced); n > 0 && b.unsynced[n-1] == cur {
		b.unsynced[n-1] = next
	} else if b.durable == cur {
		b.durable = next
	}
	b.state.Store(next)
	b.hist.record(b.engine, next)
}

// publishLogged publishes a state whose last log record may not be durable
// yet; durableLSN is where the log is durable now.
func (b *branch) publishLogged(st *rootState, durableLSN, at uint64) {
	b.forgetSynced(durableLSN)
	b.unsynced = append(b.unsynced, st)
	b.state.Store(st)
	b.hist.recordAt(b.engine, st, at)
}

// forgetSynced moves durable up to the newest unsynced state whose records
// are durable.
func (b *branch) forgetSynced(durableLSN uint64) {
	n := 0
	for n < len(b.unsynced) && b.unsynced[n].lsn <= durableLSN {
		n++
	}
	if n > 0 {
		b.durable = b.unsynced[n-1]
		b.unsynced = slices.Delete(b.unsynced, 0, n)
	}
}

// rollBack publishes the newest durable state again, after a failed log
// write lost every record above durableLSN, and returns the state it drops.
func (b *branch) rollBack(durableLSN uint64) *rootState {
	b.forgetSynced(durableLSN)
	dropped := b.state.Load()
	lost := map[*rootState]bool{}
	for _, st := range b.unsynced {
		lost[st] = true
	}
	b.hist.forget(b.engine, lost)
	b.setDurable(b.durable)
	return dropped
}

// newTx starts a transaction on cur that notes change events when the
// engine keeps a change log.
func (d *Database) newTx(cur *rootState) *Tx {
	tx := newTx(d.ns, cur)
	tx.capture = d.engine.changes != nil
	tx.tombstones = &d.tombstones
	tx.ops = opsPool.get()
	if tx.capture {
		tx.events = eventsPool.get()
	}
	return tx
}

func newDatabase(e *Engine, name string) *Database {
	d := &Database{name: name, dir: e.dbDir(name), log: e.log, engine: e}
	d.tombstones.due, d.tombstones.every = d.tombstonesDue, tombstoneFoldEvery
	return d
}

// open loads the chunk store, the branches and the log. A new database's
// store holds nothing until it is written (birth.go). Called with
// d.life.mu held.
func (d *Database) open(ctx context.Context) error {
	cs, tables, err := d.openChunkStore(ctx)
	if err != nil {
		return fmt.Errorf("open chunk store %s: %w", d.dir, err)
	}
	root, err := cs.Root(ctx)
	if err != nil {
		cs.Close()
		return fmt.Errorf("open chunk store %s: %w", d.dir, err)
	}
	ns, err := newNodeStore(cs, d.engine.nodes)
	if err != nil {
		cs.Close()
		return fmt.Errorf("open chunk store %s: %w", d.dir, err)
	}
	d.born.Store(!root.IsEmpty())
	d.cs, d.tables, d.vs, d.ns = cs, tables, types.NewValueStore(cs), ns
	d.db = datas.NewTypesDatabase(d.vs, d.ns)
	d.branches = map[string]*branch{}
	if t := d.engine.opts.LargeDocThreshold; t > 0 {
		d.docs = &docWriter{threshold: t, trees: doctree.NewWriter(d.ns)}
	}
	if err := d.recover(ctx); err != nil {
		if d.wl != nil {
			d.wl.Close()
		}
		d.db.Close()
		d.ns.PurgeCaches()
		d.forget()
		return err
	}
	d.life.open, d.life.catalog = true, nil
	d.engine.dbStats.opened()
	return nil
}

// forget drops the references to a closed chunk store, log and branches,
// so that their memory can be reclaimed while the handle lives on.
func (d *Database) forget() {
	d.releaseHistories()
	d.cs, d.vs, d.ns, d.db, d.wl, d.docs, d.retries, d.remotes = nil, nil, nil, nil, nil, nil, nil, nil
	d.branches, d.replayed = nil, false
}

func (d *Database) loadedBranch(name string) *branch {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.branches[name]
}

// Name is the database name.
func (d *Database) Name() string { return d.name }

// largeDoc is how documents are written (nil: never as doctrees).
func (d *Database) largeDoc() *docWriter { return d.docs }

// close closes d for good (a drop, or the engine closing). Calls that
// hold it may still be running; later ones get ErrClosed.
func (d *Database) close(ctx context.Context) error {
	if !d.markClosed() {
		return nil
	}
	d.running.cancel() // shut checkpoints it all under the lock instead
	err := d.shut(ctx)
	d.releaseHistories() // after shut's checkpoints, which add to them
	return err
}

// markClosed marks d closed; it reports whether d was open until now.
func (d *Database) markClosed() bool {
	d.life.mu.Lock()
	defer d.life.mu.Unlock()
	wasClosed := d.closed.Swap(true)
	wasOpen := d.life.open && !wasClosed
	d.life.open = false
	return wasOpen
}

// shut checkpoints every branch and closes the log and the chunk store.
// A closed database has its store written, even one never written to,
// since its log goes (birth.go); unless it is being dropped.
func (d *Database) shut(ctx context.Context) error {
	d.ckptMu.Lock() // a fold beside the writers has ended
	defer d.ckptMu.Unlock()
	d.engine.dbStats.open.Add(-1)
	var firstErr error
	for _, b := range d.branchList() {
		// Wait for in-flight writers: a drop does not wait for its calls.
		err := d.withWriteLock(b, func() error { return d.checkpointLocked(ctx, b) })
		if err != nil {
			// The log keeps these edits, and reopening counts them again.
			d.engine.addEditBytes(-b.state.Load().editBytes())
			if firstErr == nil {
				firstErr = err
			}
		}
	}
	if firstErr == nil && !d.dropping.Load() {
		firstErr = d.ensureBorn(ctx)
	}
	if err := d.wl.Close(); err != nil && firstErr == nil {
		firstErr = err
	}
	if err := d.syncChanges(); err != nil && firstErr == nil {
		firstErr = err
	}
	// Everything is in the checkpoint now; a clean shutdown leaves no log.
	if firstErr == nil {
		firstErr = d.wl.Remove()
	}
	if err := d.db.Close(); err != nil && firstErr == nil {
		firstErr = err
	}
	// A closed database's nodes leave the cache with it.
	d.ns.PurgeCaches()
	return firstErr
}

// discard closes a database that is being dropped: its files are about to
// be removed, so its edits are let go instead of checkpointed (a drop of a
// database holding a full edit budget took seconds folding them into maps
// nobody would read). The change events of its acknowledged writes are
// still made durable, for the change streams that read past the drop.
func (d *Database) discard() error {
	if !d.markClosed() {
		return nil
	}
	d.running.cancel()
	d.ckptMu.Lock() // a fold beside the writers has ended
	defer d.ckptMu.Unlock()
	d.engine.dbStats.open.Add(-1)
	for _, b := range d.branchList() {
		// Wait for in-flight writers, whose edits the budget counts.
		d.withWriteLock(b, func() error {
			d.engine.addEditBytes(-b.state.Load().editBytes())
			return nil
		})
	}
	err := errors.Join(d.wl.Close(), d.syncChanges(), d.db.Close())
	d.ns.PurgeCaches() // its nodes and past states leave memory with it
	d.releaseHistories()
	return err
}

// branch returns the live state of a branch, loading it on first use.
func (d *Database) branch(ctx context.Context, name string) (*branch, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if b, ok := d.branches[name]; ok {
		return b, nil
	}
	b, err := d.loadBranch(ctx, name)
	if err != nil {
		return nil, err
	}
	d.branches[name] = b
	if d.replayed {
		d.startHistoryLocked(b)
	}
	return b, nil
}

func (d *Database) loadBranch(ctx context.Context, name string) (*branch, error) {
	if !d.born.Load() {
		return d.unbornMain(ctx, name)
	}
	head, err := d.refDataset(ctx, refHeads, name)
	if err != nil {
		return nil, err
	}
	if !head.HasHead() {
		if name != DefaultBranch {
			return nil, fmt.Errorf("%w: %s", ErrBranchNotFound, name)
		}
		if head, err = d.initMain(ctx, head); err != nil {
			return nil, err
		}
	}
	headRoot, err := d.headRootRef(ctx, head)
	if err != nil {
		return nil, err
	}
	b := &branch{name: name, headRef: headRoot, engine: d.engine, nodes: d.ns}
	var rootAddr hash.Hash
	var lsn uint64
	if b.ws, rootAddr, lsn, err = d.workingRoot(ctx, name, headRoot); err != nil {
		return nil, err
	}
	st, err := loadRootState(ctx, d.ns, rootAddr)
	if err != nil {
		return nil, fmt.Errorf("database %s branch %s: %w", d.name, name, err)
	}
	st.lsn, st.ckptLSN = lsn, lsn
	b.setDurable(st)
	return b, nil
}

// workingRoot reads a branch's working set: the dataset, the working
// root's address (the head commit's root when the branch has no working
// set yet) and the last log record that root includes.
func (d *Database) workingRoot(ctx context.Context, name string, headRoot types.Ref) (datas.Dataset, hash.Hash, uint64, error) {
	ws, err := d.refDataset(ctx, refWorkingSets, name)
	if err != nil || !ws.HasHead() {
		return ws, headRoot.TargetHash(), 0, err
	}
	wsh, err := ws.HeadWorkingSet()
	if err != nil {
		return ws, hash.Hash{}, 0, err
	}
	var lsn uint64
	if wsh.Meta != nil {
		lsn = parseLSN(wsh.Meta.Description)
	}
	return ws, wsh.WorkingAddr, lsn, nil
}

func parseLSN(desc string) uint64 {
	n, _ := strconv.ParseUint(strings.TrimPrefix(desc, walLSNPrefix), 10, 64)
	return n
}

func (d *Database) headRootRef(ctx context.Context, head datas.Dataset) (types.Ref, error) {
	addr, _ := head.MaybeHeadAddr()
	c, err := datas.LoadCommitAddr(ctx, d.vs, addr)
	if err != nil {
		return types.Ref{}, err
	}
	rootAddr, err := datas.GetCommitRootHash(c.NomsValue())
	if err != nil {
		return types.Ref{}, err
	}
	v, err := d.vs.ReadValue(ctx, rootAddr)
	if err != nil {
		return types.Ref{}, err
	}
	return types.NewRef(v, d.vs.Format())
}

// BranchSnapshot returns a consistent read-only view of a branch as of now.
func (d *Database) BranchSnapshot(ctx context.Context, name string) (*Snapshot, error) {
	if err := d.hold(ctx); err != nil {
		return nil, err
	}
	defer d.release()
	b, err := d.branch(ctx, name)
	if err != nil {
		return nil, err
	}
	return d.newSnapshot(b.state.Load()), nil
}

// BranchCollection returns a collection's catalog entry on a branch as of
// now, without a snapshot: for checks that read no documents (a write's
// "is it a view?"), which need no pin on the state.
func (d *Database) BranchCollection(ctx context.Context, branch, coll string) (CollectionInfo, bool, error) {
	if err := d.hold(ctx); err != nil {
		return CollectionInfo{}, false, err
	}
	defer d.release()
	b, err := d.branch(ctx, branch)
	if err != nil {
		return CollectionInfo{}, false, err
	}
	c, ok := b.state.Load().colls.lookup(coll)
	if !ok {
		return CollectionInfo{}, false, nil
	}
	return c.info, true, nil
}

type noSyncKey struct{}

// NoSync marks ctx so that Write returns before its log record is durable,
// for the write concerns that allow it (w: 0, j: false).
func NoSync(ctx context.Context) context.Context { return context.WithValue(ctx, noSyncKey{}, true) }

// Write runs fn as one atomic transaction on the main branch. Writers are
// serialised; readers are never blocked and see the change as soon as fn
// returns. If fn returns an error, nothing it did is applied. Write returns
// once the change is durable in the write-ahead log (unless ctx is NoSync).
func (d *Database) Write(ctx context.Context, fn func(tx *Tx) error) error {
	return d.WriteBranch(ctx, DefaultBranch, fn)
}

// WriteBranch is Write on a named branch.
func (d *Database) WriteBranch(ctx context.Context, branchName string, fn func(tx *Tx) error) error {
	ctx, leave, err := d.enterGate(ctx)
	if err != nil {
		return err
	}
	defer leave()
	if err := d.hold(ctx); err != nil {
		return err
	}
	defer d.release()
	b, err := d.branch(ctx, branchName)
	if err != nil {
		return err
	}
	d.awaitBudget(ctx)
	lsn, err := d.writeLocked(ctx, b, fn)
	return d.awaitWrite(ctx, lsn, err)
}

// awaitWrite finishes a write that logged lsn (0: nothing) with err: it waits
// until the record is durable, unless ctx is NoSync, and when the log lost
// it returns the error only once no reader can see the lost records.
func (d *Database) awaitWrite(ctx context.Context, lsn uint64, err error) error {
	if err == nil && lsn != 0 && ctx.Value(noSyncKey{}) == nil {
		if err = d.wl.WaitDurable(lsn); err == nil {
			// The write's change events are in the change log before it
			// is acknowledged (the log's OnDurable may still be running).
			d.flushChanges()
		}
	}
	if errors.Is(err, wal.ErrWriteFailed) {
		d.recoverFromLogFailure()
	}
	return diskFull(err)
}

// writable reports why b cannot take a write now. Called with b.writeMu
// held.
func (d *Database) writable(b *branch) error {
	if b.deleted {
		return fmt.Errorf("%w: %s", ErrBranchNotFound, b.name)
	}
	if d.closed.Load() {
		return ErrClosed
	}
	return nil
}

// recoverFromLogFailure sends every branch back to its newest state whose
// records are all durable, then lets the log take records again. Writers
// build on a branch's published state before their record is durable
// (group commit), so after a failed write the published states may hold
// lost records, and later writers' states may build on them. Each writer
// of a lost record calls this before returning its error, and the log's
// OnFailure calls it for records nobody waits for.
func (d *Database) recoverFromLogFailure() {
	d.recoverMu.Lock()
	defer d.recoverMu.Unlock()
	if !d.wl.Failed() {
		return // another writer of the same failure rolled back already
	}
	durableLSN := d.wl.Durable()
	d.retries.rollBack(durableLSN)
	for _, b := range d.branchList() {
		d.withWriteLock(b, func() error {
			dropped := b.rollBack(durableLSN)
			d.engine.addEditBytes(b.durable.editBytes() - dropped.editBytes())
			return nil
		})
	}
	// After every branch's lock: no writer of a lost record is still
	// between its append and its entry.
	d.dropLostChanges(durableLSN)
	d.wl.Resume()
}

// recoverIfOpen is recoverFromLogFailure for the log's OnFailure, which
// runs on a goroutine of its own: by then the database may have been closed
// for idleness (and its log with it), which leaves nothing to roll back.
func (d *Database) recoverIfOpen() {
	if d.holdIfOpen() {
		defer d.release()
		d.recoverFromLogFailure()
	}
}

// writeLocked runs commitLocked under b's writer lock. The lock is released
// before the caller waits for the log, so that writers share syncs.
func (d *Database) writeLocked(ctx context.Context, b *branch, fn func(tx *Tx) error) (uint64, error) {
	d.engine.lockWriter(b)
	defer b.writeMu.Unlock()
	if err := d.writable(b); err != nil {
		return 0, err
	}
	return d.commitLocked(ctx, b, fn)
}

// commitLocked runs fn, logs its changes and publishes the new state. It
// returns the log record's LSN (0 when fn changed nothing).
func (d *Database) commitLocked(ctx context.Context, b *branch, fn func(tx *Tx) error) (uint64, error) {
	cur := b.state.Load()
	tx := d.newTx(cur)
	tx.plain = true
	defer tx.release() // on every path, a panic's included
	tx.retries = d.retries
	tx.guard = b.holds.refuseHeld
	if err := fn(tx); err != nil {
		return 0, err
	}
	if !tx.dirty() {
		return 0, nil
	}
	return d.logAndPublish(ctx, b, cur, tx)
}

// logAndPublish appends tx's changes (built on cur, b's state) to the log
// as one record and publishes the state they lead to. Called with
// b.writeMu held.
func (d *Database) logAndPublish(ctx context.Context, b *branch, cur *rootState, tx *Tx) (uint64, error) {
	d.engine.panics.at("write.log")
	at, _ := d.engine.now()
	rec := encodeRecord(recordsPool.get(), b.name, tx.ops, tx.retry, at)
	lsn, err := d.appendRecord(rec)
	recordsPool.put(rec) // the log copied it
	if err != nil {
		return 0, err
	}
	tx.at = at
	if tx.retry != nil {
		d.retries.add(lsn, tx.retry)
	}
	for _, o := range tx.ops {
		if o.op == opFields {
			d.engine.dbStats.fieldUpdates.Add(1)
		}
	}
	next := tx.publish(lsn)
	// Visible before its events are queued: a change stream that reads an
	// event and then the document (updateLookup) finds the write.
	b.publishLogged(next, d.wl.Durable(), at)
	b.addNote(tx)
	d.queueChanges(b, lsn, at, tx)
	if d.wl.Durable() >= lsn {
		d.flushChanges() // made durable by another writer's sync before it was queued
	}
	d.engine.panics.at("write.published")
	held := next.editBytes()
	d.engine.addEditBytes(held - cur.editBytes())
	if d.engine.checkpointDue(held) {
		d.checkpointSoon(ctx) // folded beside the writers, this one included
	}
	return lsn, nil
}
