package storage

import (
	"context"
	"fmt"

	"github.com/dolthub/dolt/go/store/datas"
	"github.com/dolthub/dolt/go/store/prolly/tree"
	"github.com/dolthub/dolt/go/store/types"
)

// This file owns a new database's Dolt store until it is first written
// (docs/design/resources.md, "Creating a database"). Writing a store's
// first commit costs files and syncs that a creation should not wait for,
// so a new database's store holds nothing: main starts from the state its
// initial commit will have, in memory, and the log holds the writes. The
// store is written ("born") by the first checkpoint, together with the
// working set, or by the first operation that needs refs on disk.

// unbornMain is main of a database whose store holds nothing yet: the
// empty root its initial commit will have, at LSN 0. Its root's chunks go
// to the store's memory table, written with the initial commit.
func (d *Database) unbornMain(ctx context.Context, name string) (*branch, error) {
	if name != DefaultBranch {
		return nil, fmt.Errorf("%w: %s", ErrBranchNotFound, name)
	}
	root, err := d.initialRoot(ctx)
	if err != nil {
		return nil, err
	}
	headRef, err := types.NewRef(root, d.vs.Format())
	if err != nil {
		return nil, err
	}
	b := &branch{name: name, headRef: headRef, engine: d.engine, nodes: d.ns}
	if b.ws, err = d.db.GetDataset(ctx, refWorkingSets+name); err != nil {
		return nil, err
	}
	st, err := loadRootState(ctx, d.ns, headRef.TargetHash())
	if err != nil {
		return nil, fmt.Errorf("database %s: the initial state: %w", d.name, err)
	}
	b.setDurable(st)
	return b, nil
}

// initialRoot is the root of main's initial commit: an empty database.
func (d *Database) initialRoot(ctx context.Context) (types.Value, error) {
	root, err := buildRoot(ctx, d.ns, &rootState{})
	if err != nil {
		return nil, err
	}
	return tree.ValueFromNode(root.Node()), nil
}

func initialCommitOptions() (datas.CommitOptions, error) {
	meta, err := datas.NewCommitMeta("dumbodb", "dumbodb@localhost", "Initialize database")
	return datas.CommitOptions{Meta: meta}, err
}

// initMain makes main's initial commit (head is main's dataset, without a
// head).
func (d *Database) initMain(ctx context.Context, head datas.Dataset) (datas.Dataset, error) {
	root, err := d.initialRoot(ctx)
	if err != nil {
		return head, err
	}
	opts, err := initialCommitOptions()
	if err != nil {
		return head, err
	}
	err = retryManifestLock(func() (err error) {
		head, err = d.db.Commit(ctx, head, root, opts)
		return err
	})
	return head, err
}

// ensureBorn writes main's initial commit if the store holds nothing yet:
// for what reads or moves refs on disk. It changes nothing main's branch
// holds: its head root is the one it had, and its working set is not
// written.
func (d *Database) ensureBorn(ctx context.Context) error {
	if d.born.Load() {
		return nil
	}
	d.birthMu.Lock()
	defer d.birthMu.Unlock()
	if d.born.Load() {
		return nil
	}
	head, err := d.db.GetDataset(ctx, refHeads+DefaultBranch)
	if err != nil {
		return err
	}
	if _, err := d.initMain(ctx, head); err != nil {
		return fmt.Errorf("write the store of %s: %w", d.name, err)
	}
	d.born.Store(true)
	return nil
}

// persistBorn makes spec main's working set in a store that holds nothing
// yet, with main's initial commit, in one manifest update: a database's
// first checkpoint costs what any other does. It reports false, having
// done nothing, when the store was written meanwhile. Called with main's
// writer lock held.
func (d *Database) persistBorn(ctx context.Context, b *branch, spec datas.WorkingSetSpec) (bool, error) {
	d.birthMu.Lock()
	defer d.birthMu.Unlock()
	if d.born.Load() {
		return false, nil
	}
	head, err := d.db.GetDataset(ctx, refHeads+DefaultBranch)
	if err != nil {
		return false, err
	}
	root, err := d.initialRoot(ctx)
	if err != nil {
		return false, err
	}
	opts, err := initialCommitOptions()
	if err != nil {
		return false, err
	}
	prev, _ := b.ws.MaybeHeadAddr()
	var ws datas.Dataset
	err = retryManifestLock(func() (err error) {
		_, ws, err = d.db.CommitWithWorkingSet(ctx, head, b.ws, root, spec, prev, opts)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("write the store of %s with its working set: %w", d.name, err)
	}
	b.ws = ws
	d.born.Store(true)
	return true, nil
}
