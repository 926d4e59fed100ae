package storage

import (
	"context"
	"dumbodb/storage/doctree"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"dumbodb/storage/wal"

	"github.com/dolthub/dolt/go/store/datas"
	"github.com/dolthub/dolt/go/store/nbs"
	"github.com/dolthub/dolt/go/store/prolly/tree"
	"github.com/dolthub/dolt/go/store/types"
	"github.com/rs/zerolog"
)

// DefaultBranch is the branch a database name without "@" addresses.
const DefaultBranch = "main"

// walLSNPrefix starts the working-set description that records the last log
// record a checkpoint includes (docs/format/wal.md).
const walLSNPrefix = "dumbodb-wal-lsn:"

// Database is one MongoDB database: one Dolt chunk store, its write-ahead
// log and its branches.
type Database struct {
	name   string
	dir    string
	log    zerolog.Logger
	engine *Engine

	cs *nbs.NomsBlockStore
	vs *types.ValueStore
	ns tree.NodeStore
	db datas.Database
	wl *wal.WAL

	mu       sync.Mutex // guards branches
	branches map[string]*branch
	main     *branch
	closed   atomic.Bool
	pins     pins       // states that live snapshots read
	docs     *docWriter // nil: the path index is off
}

// branch is the live state of one branch: the published state that readers
// snapshot, and the lock that serialises its writers and checkpoints.
type branch struct {
	name    string
	writeMu sync.Mutex
	state   atomic.Pointer[rootState]
	ws      datas.Dataset // working set dataset; guarded by writeMu
	headRef types.Ref     // the head commit's root, stored as StagedRoot
	deleted bool          // guarded by writeMu
}

func openDatabase(ctx context.Context, e *Engine, name string) (*Database, error) {
	dir := e.dbDir(name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create database directory: %w", err)
	}
	q := nbs.NewUnlimitedMemQuotaProvider()
	cs, err := nbs.NewLocalJournalingStoreWithOptions(ctx, types.Format_DOLT.VersionString(), dir, q, false,
		func(err error) { e.log.Warn().Err(err).Str("db", name).Msg("chunk journal replay") },
		nbs.JournalingStoreOptions{FailOnLockTimeout: true})
	if err != nil {
		return nil, fmt.Errorf("open chunk store %s: %w", dir, err)
	}
	vs := types.NewValueStore(cs)
	ns := tree.NewNodeStore(cs)
	d := &Database{
		name: name, dir: dir, log: e.log, engine: e,
		cs: cs, vs: vs, ns: ns, db: datas.NewTypesDatabase(vs, ns),
		branches: map[string]*branch{},
	}
	if t := e.opts.LargeDocThreshold; t > 0 {
		d.docs = &docWriter{threshold: t, trees: doctree.NewWriter(ns)}
	}
	if err := d.recover(ctx); err != nil {
		d.db.Close()
		return nil, err
	}
	return d, nil
}

// recover loads every branch's checkpoint, replays the log after the
// oldest of them, and starts the log for new writes.
func (d *Database) recover(ctx context.Context) error {
	main, err := d.branch(ctx, DefaultBranch)
	if err != nil {
		return err
	}
	d.main = main
	if err := d.loadAllBranches(ctx); err != nil {
		return err
	}
	if d.wl, err = wal.Open(filepath.Join(d.dir, "wal"), wal.Options{SegmentSize: d.engine.opts.WALSegmentSize}, d.log); err != nil {
		return err
	}
	start := time.Now()
	oldest, newest := d.checkpointRange()
	n, err := d.wl.Replay(oldest, newest, func(lsn uint64, payload []byte) error { return d.redo(ctx, lsn, payload) })
	if err != nil {
		return fmt.Errorf("database %s: %w", d.name, err)
	}
	for _, b := range d.branchList() {
		d.engine.addEditBytes(b.state.Load().editBytes())
	}
	if n > 0 {
		d.log.Info().Str("c", "RECOVERY").Str("db", d.name).Int("records", n).Uint64("fromLSN", oldest).
			Dur("durationMillis", time.Since(start)).Msg("replayed the write-ahead log")
	}
	return d.wl.Start()
}

// loadAllBranches loads the state of every branch ref.
func (d *Database) loadAllBranches(ctx context.Context) error {
	names, err := d.branchNames(ctx)
	if err != nil {
		return err
	}
	for _, name := range names {
		if _, err := d.branch(ctx, name); err != nil {
			return err
		}
	}
	return nil
}

// checkpointRange is the lowest and highest log position any branch's
// checkpoint includes.
func (d *Database) checkpointRange() (oldest, newest uint64) {
	first := true
	for _, b := range d.branchList() {
		lsn := b.state.Load().lsn
		if first || lsn < oldest {
			oldest = lsn
		}
		newest = max(newest, lsn)
		first = false
	}
	return oldest, newest
}

func (d *Database) branchList() []*branch {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]*branch, 0, len(d.branches))
	for _, b := range d.branches {
		out = append(out, b)
	}
	return out
}

// redo applies one replayed log record to its branch.
func (d *Database) redo(ctx context.Context, lsn uint64, payload []byte) error {
	branchName, ops, err := decodeRecord(payload)
	if err != nil {
		return err
	}
	b := d.loadedBranch(branchName)
	if b == nil {
		return nil // the branch was deleted after this record
	}
	cur := b.state.Load()
	if lsn <= cur.lsn {
		return nil // already in this branch's checkpoint
	}
	tx := newTx(d.ns, cur)
	if err := tx.redo(ctx, ops); err != nil {
		return err
	}
	b.state.Store(tx.publish(lsn))
	return nil
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

// close checkpoints every branch and closes the log and the chunk store.
func (d *Database) close(ctx context.Context) error {
	if d.closed.Swap(true) {
		return nil
	}
	var firstErr error
	for _, b := range d.branchList() {
		b.writeMu.Lock() // wait for in-flight writers; none start after closed
		if err := d.checkpointLocked(ctx, b); err != nil && firstErr == nil {
			firstErr = err
		}
		b.writeMu.Unlock()
	}
	if d.wl != nil {
		if err := d.wl.Close(); err != nil && firstErr == nil {
			firstErr = err
		}
		// Everything is in the checkpoint now; a clean shutdown leaves no log.
		if firstErr == nil {
			firstErr = d.wl.Remove()
		}
	}
	if err := d.db.Close(); err != nil && firstErr == nil {
		firstErr = err
	}
	return firstErr
}

// branch returns the live state of a branch, loading it (and creating main's
// initial commit in a new database) on first use.
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
	return b, nil
}

func (d *Database) loadBranch(ctx context.Context, name string) (*branch, error) {
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
	b := &branch{name: name, headRef: headRoot}
	if b.ws, err = d.refDataset(ctx, refWorkingSets, name); err != nil {
		return nil, err
	}
	rootAddr, lsn := headRoot.TargetHash(), uint64(0)
	if b.ws.HasHead() {
		wsh, err := b.ws.HeadWorkingSet()
		if err != nil {
			return nil, err
		}
		rootAddr = wsh.WorkingAddr
		if wsh.Meta != nil {
			lsn = parseLSN(wsh.Meta.Description)
		}
	}
	st, err := loadRootState(ctx, d.ns, rootAddr)
	if err != nil {
		return nil, fmt.Errorf("database %s branch %s: %w", d.name, name, err)
	}
	st.lsn, st.ckptLSN = lsn, lsn
	b.state.Store(st)
	return b, nil
}

func parseLSN(desc string) uint64 {
	n, _ := strconv.ParseUint(strings.TrimPrefix(desc, walLSNPrefix), 10, 64)
	return n
}

// initMain makes the first commit of a new database: an empty root.
func (d *Database) initMain(ctx context.Context, head datas.Dataset) (datas.Dataset, error) {
	root, err := buildRoot(ctx, d.ns, &rootState{})
	if err != nil {
		return head, err
	}
	meta, err := datas.NewCommitMeta("dumbodb", "dumbodb@localhost", "Initialize database")
	if err != nil {
		return head, err
	}
	return d.db.Commit(ctx, head, tree.ValueFromNode(root.Node()), datas.CommitOptions{Meta: meta})
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

// Snapshot returns a consistent read-only view of the main branch as of now.
func (d *Database) Snapshot() *Snapshot {
	return d.newSnapshot(d.main.state.Load())
}

// BranchSnapshot returns a consistent read-only view of a branch as of now.
func (d *Database) BranchSnapshot(ctx context.Context, name string) (*Snapshot, error) {
	b, err := d.branch(ctx, name)
	if err != nil {
		return nil, err
	}
	return d.newSnapshot(b.state.Load()), nil
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
	b, err := d.branch(ctx, branchName)
	if err != nil {
		return err
	}
	b.writeMu.Lock()
	if d.closed.Load() || b.deleted {
		b.writeMu.Unlock()
		if b.deleted {
			return fmt.Errorf("%w: %s", ErrBranchNotFound, branchName)
		}
		return ErrClosed
	}
	lsn, err := d.commitLocked(ctx, b, fn)
	b.writeMu.Unlock()
	if err != nil || lsn == 0 || ctx.Value(noSyncKey{}) != nil {
		return err
	}
	return d.wl.WaitDurable(lsn)
}

// commitLocked runs fn, logs its changes and publishes the new state. It
// returns the log record's LSN (0 when fn changed nothing).
func (d *Database) commitLocked(ctx context.Context, b *branch, fn func(tx *Tx) error) (uint64, error) {
	cur := b.state.Load()
	tx := newTx(d.ns, cur)
	if err := fn(tx); err != nil {
		return 0, err
	}
	if !tx.dirty() {
		return 0, nil
	}
	lsn, err := d.wl.Append(encodeRecord(b.name, tx.ops))
	if err != nil {
		return 0, err
	}
	next := tx.publish(lsn)
	b.state.Store(next)
	d.engine.addEditBytes(next.editBytes() - cur.editBytes())
	if d.engine.overBudget() {
		if err := d.checkpointLocked(ctx, b); err != nil {
			d.log.Error().Str("c", "STORAGE").Err(err).Str("db", d.name).Msg("checkpoint failed")
		}
	}
	return lsn, nil
}
