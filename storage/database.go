package storage

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dolthub/dolt/go/store/datas"
	"github.com/dolthub/dolt/go/store/nbs"
	"github.com/dolthub/dolt/go/store/prolly/tree"
	"github.com/dolthub/dolt/go/store/types"
	"github.com/rs/zerolog"
)

// DefaultBranch is the branch a database name without "@" addresses.
const DefaultBranch = "main"

// Database is one MongoDB database: one Dolt chunk store and its branches.
type Database struct {
	name string
	dir  string
	log  zerolog.Logger

	cs *nbs.NomsBlockStore
	vs *types.ValueStore
	ns tree.NodeStore
	db datas.Database

	mu       sync.Mutex // guards branches
	branches map[string]*branch
	main     *branch
	closed   atomic.Bool
}

// branch is the live state of one branch: the published root that readers
// snapshot, and the lock that serialises its writers.
type branch struct {
	name    string
	writeMu sync.Mutex
	state   atomic.Pointer[rootState]
	ws      datas.Dataset // working set dataset; guarded by writeMu
	headRef types.Ref     // the head commit's root, stored as StagedRoot
}

func openDatabase(ctx context.Context, dir, name string, log zerolog.Logger) (*Database, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create database directory: %w", err)
	}
	q := nbs.NewUnlimitedMemQuotaProvider()
	cs, err := nbs.NewLocalJournalingStoreWithOptions(ctx, types.Format_DOLT.VersionString(), dir, q, false,
		func(e error) { log.Warn().Err(e).Str("db", name).Msg("chunk journal replay") },
		nbs.JournalingStoreOptions{FailOnLockTimeout: true})
	if err != nil {
		return nil, fmt.Errorf("open chunk store %s: %w", dir, err)
	}
	vs := types.NewValueStore(cs)
	ns := tree.NewNodeStore(cs)
	d := &Database{
		name: name, dir: dir, log: log,
		cs: cs, vs: vs, ns: ns, db: datas.NewTypesDatabase(vs, ns),
		branches: map[string]*branch{},
	}
	main, err := d.branch(ctx, DefaultBranch)
	if err != nil {
		d.db.Close()
		return nil, err
	}
	d.main = main
	return d, nil
}

// Name is the database name.
func (d *Database) Name() string { return d.name }

func (d *Database) close() error {
	if d.closed.Swap(true) {
		return nil
	}
	// Wait for in-flight writers so none is cut off mid-update.
	d.mu.Lock()
	for _, b := range d.branches {
		b.writeMu.Lock()
		defer b.writeMu.Unlock()
	}
	d.mu.Unlock()
	return d.db.Close()
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
	head, err := d.db.GetDataset(ctx, "refs/heads/"+name)
	if err != nil {
		return nil, err
	}
	if !head.HasHead() {
		if name != DefaultBranch {
			return nil, fmt.Errorf("branch %q does not exist", name)
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
	if b.ws, err = d.db.GetDataset(ctx, "workingSets/heads/"+name); err != nil {
		return nil, err
	}
	rootAddr := headRoot.TargetHash()
	if b.ws.HasHead() {
		wsh, err := b.ws.HeadWorkingSet()
		if err != nil {
			return nil, err
		}
		rootAddr = wsh.WorkingAddr
	}
	st, err := loadRootState(ctx, d.ns, rootAddr)
	if err != nil {
		return nil, fmt.Errorf("database %s branch %s: %w", d.name, name, err)
	}
	b.state.Store(st)
	return b, nil
}

// initMain makes the first commit of a new database: an empty root.
func (d *Database) initMain(ctx context.Context, head datas.Dataset) (datas.Dataset, error) {
	st, err := emptyRootState(ctx, d.ns)
	if err != nil {
		return head, err
	}
	meta, err := datas.NewCommitMeta("dumbodb", "dumbodb@localhost", "Initialize database")
	if err != nil {
		return head, err
	}
	return d.db.Commit(ctx, head, tree.ValueFromNode(st.root.Node()), datas.CommitOptions{Meta: meta})
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

// persist makes st the branch's durable working root. Called with writeMu held.
func (d *Database) persist(ctx context.Context, b *branch, st *rootState) error {
	workingRef, err := d.vs.WriteValue(ctx, tree.ValueFromNode(st.root.Node()))
	if err != nil {
		return err
	}
	spec := datas.WorkingSetSpec{
		Meta:        &datas.WorkingSetMeta{Name: "dumbodb", Email: "dumbodb@localhost", Timestamp: uint64(time.Now().UnixMilli())},
		WorkingRoot: workingRef,
		StagedRoot:  b.headRef,
	}
	prev, _ := b.ws.MaybeHeadAddr()
	ws, err := d.db.UpdateWorkingSet(ctx, b.ws, spec, prev)
	if err != nil {
		return fmt.Errorf("update working set of %s@%s: %w", d.name, b.name, err)
	}
	b.ws = ws
	return nil
}

// Snapshot returns a consistent read-only view of the main branch as of now.
func (d *Database) Snapshot() *Snapshot {
	return &Snapshot{ns: d.ns, st: d.main.state.Load()}
}

// Write runs fn as one atomic, durable transaction on the main branch.
// Writers are serialised; readers are never blocked. If fn returns an error,
// nothing it did is applied. When Write returns nil the changes are durable
// and visible to every later Snapshot.
func (d *Database) Write(ctx context.Context, fn func(tx *Tx) error) error {
	if d.closed.Load() {
		return ErrClosed
	}
	b := d.main
	b.writeMu.Lock()
	defer b.writeMu.Unlock()
	if d.closed.Load() {
		return ErrClosed
	}
	tx := newTx(ctx, d.ns, b.state.Load())
	if err := fn(tx); err != nil {
		return err
	}
	if !tx.dirty() {
		return nil
	}
	st, err := tx.apply(ctx)
	if err != nil {
		return err
	}
	if err := d.persist(ctx, b, st); err != nil {
		return err
	}
	b.state.Store(st)
	return nil
}
