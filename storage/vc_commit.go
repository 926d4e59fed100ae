package storage

import (
	"cmp"
	"context"
	"fmt"

	"github.com/dolthub/dolt/go/store/datas"
	"github.com/dolthub/dolt/go/store/hash"
	"github.com/dolthub/dolt/go/store/prolly"
	"github.com/dolthub/dolt/go/store/prolly/tree"
	"github.com/dolthub/dolt/go/store/types"
)

// Commit records a branch's working state as a new commit: every write
// published on the branch before the call. The commit is made beside the
// branch's writers where it can be (commitBeside), else with them stopped.
func (d *Database) Commit(ctx context.Context, branchName string, opts CommitOptions) (CommitInfo, error) {
	ctx, leave, err := d.enterGate(ctx)
	if err != nil {
		return CommitInfo{}, err
	}
	defer leave()
	if err := d.hold(ctx); err != nil {
		return CommitInfo{}, err
	}
	defer d.release()
	b, err := d.branch(ctx, branchName)
	if err != nil {
		return CommitInfo{}, err
	}
	if info, handled, err := d.commitBeside(ctx, b, opts); handled {
		return info, diskFull(err)
	}
	var info CommitInfo
	err = d.lockedBranch(ctx, branchName, func(b *branch) error {
		st := b.state.Load()
		if st.hasMerge() {
			return ErrMergeInProgress
		}
		if same, err := sameData(ctx, d.ns, st.root, b.headRef.TargetHash()); err != nil || same {
			return cmp.Or(err, ErrNothingToCommit)
		}
		if opts.Describe != nil {
			opts.Message, opts.Author = opts.Describe(b.notes)
		}
		c, err := d.commitRoot(ctx, b, st, opts, nil)
		if err != nil {
			return err
		}
		info, err = d.describe(ctx, c, nil)
		return err
	})
	return info, err
}

// frozenCommit is what commitBeside took from a branch under its writer
// lock: the state to commit, the notes of its writes, and whether its
// edits were frozen for a fold beside the writers.
type frozenCommit struct {
	st      *rootState
	lineage uint64
	notes   []WriteNote
	frozen  bool
}

// commitBeside commits b holding its writer lock only to freeze the state
// it commits and to install the result, as a checkpoint beside the
// writers does (checkpointBeside): the fold, the log's durability and the
// store's update run while writers go on. The commit's root is the fold
// of the frozen state, and it becomes the durable working root too, at
// the freeze's log position; what was written since stays in memory and
// in the log on top of it. handled is false, with nothing done, where the
// commit needs the writers stopped: a merge in progress, capped
// collections, a store not yet written.
func (d *Database) commitBeside(ctx context.Context, b *branch, opts CommitOptions) (info CommitInfo, handled bool, err error) {
	d.ckptMu.Lock()
	defer d.ckptMu.Unlock()
	var fc frozenCommit
	err = d.withWriteLock(b, func() error {
		handled, err = d.freezeForCommit(ctx, b, &fc)
		return err
	})
	if err != nil || !handled {
		return CommitInfo{}, handled, err
	}
	c, err := d.commitFrozen(ctx, b, &fc, opts)
	if err != nil {
		_ = d.withWriteLock(b, func() error {
			b.notes = append(fc.notes, b.notes...) // for the next commit's message
			return nil
		})
		return CommitInfo{}, true, err
	}
	info, err = d.describe(ctx, c, nil)
	return info, true, err
}

// freezeForCommit takes from b what commitBeside commits, and freezes its
// edits when it has any. It reports false when the commit needs the
// writers stopped. Called with b.writeMu and d.ckptMu held.
func (d *Database) freezeForCommit(ctx context.Context, b *branch, fc *frozenCommit) (bool, error) {
	if d.closed.Load() {
		return false, ErrClosed
	}
	if b.deleted {
		return false, fmt.Errorf("%w: %s", ErrBranchNotFound, b.name)
	}
	cur := b.state.Load()
	if !d.born.Load() || !foldableBeside(cur) {
		return false, nil
	}
	d.engine.panics.at("vc.locked")
	if cur.checkpointed {
		if same, err := sameData(ctx, d.ns, cur.root, b.headRef.TargetHash()); err != nil || same {
			return true, cmp.Or(err, ErrNothingToCommit)
		}
	}
	*fc = frozenCommit{st: cur, lineage: b.lineage, notes: b.notes, frozen: !cur.checkpointed}
	b.notes = nil
	if fc.frozen {
		b.replaceCurrent(frozenState(cur))
	}
	return true, nil
}

// commitFrozen folds fc's frozen state, commits its root and installs the
// commit. A failure leaves the frozen layers to the next checkpoint.
// Called with d.ckptMu held, which keeps b's refs and working set from
// moving under it.
func (d *Database) commitFrozen(ctx context.Context, b *branch, fc *frozenCommit, opts CommitOptions) (*datas.Commit, error) {
	folded := fc.st
	if fc.frozen {
		// No writeChunks as a checkpoint's fold does: the commit below
		// writes the chunks, and no writer waits for it.
		if err := d.readyToClaim(fc.st.lsn); err != nil {
			return nil, err
		}
		d.engine.panics.at("checkpoint.fold")
		var err error
		if folded, err = d.foldState(ctx, fc.st); err != nil {
			d.removeFailedTemp(err)
			return nil, err
		}
		same, err := sameData(ctx, d.ns, folded.root, b.headRef.TargetHash())
		if err != nil || same {
			// The writes changed nothing: the fold is a checkpoint still.
			return nil, cmp.Or(err, d.withWriteLock(b, func() error {
				return d.swapFolded(ctx, b, fc.st, fc.lineage, folded)
			}), ErrNothingToCommit)
		}
	}
	if opts.Describe != nil {
		opts.Message, opts.Author = opts.Describe(fc.notes)
	}
	made, err := d.writeCommit(ctx, b, folded.root, fc.st.lsn, opts, nil)
	if err != nil {
		d.removeFailedTemp(err)
		return nil, err
	}
	defer d.reloadRefsOnPanic(b)
	d.engine.panics.at("vc.ref")
	err = d.withWriteLock(b, func() error {
		b.ws, b.headRef = made.ws, made.rootRef
		if !fc.frozen {
			return nil
		}
		return d.installCommitted(ctx, b, fc, folded)
	})
	if err != nil {
		// The commit is made and durable; the branch keeps its edits in
		// memory and the log its records, for the next checkpoint.
		d.log.Warn().Str("c", "STORAGE").Err(err).Str("db", d.name).Str("branch", b.name).
			Msg("installing a commit's fold failed")
	}
	return made.commit, nil
}

// installCommitted publishes in memory the fold of fc's state, which the
// store now holds as b's head and working root. Called with b.writeMu
// held.
func (d *Database) installCommitted(ctx context.Context, b *branch, fc *frozenCommit, folded *rootState) error {
	if d.closed.Load() || b.deleted || b.lineage != fc.lineage {
		// A rollback after a failed log write replaced the state: its
		// frozen layers stay, for the next checkpoint to fold.
		return nil
	}
	cur := b.state.Load()
	next, ok := rebased(cur, fc.st, folded)
	if !ok {
		// The catalog changed during the fold: fold it all here.
		return d.checkpointLocked(ctx, b)
	}
	return d.adoptFolded(ctx, b, cur, fc.st, folded, next)
}

// reloadRefsOnPanic, deferred once a commit has moved b's refs in the
// store, makes b's working set and head follow them when the commit
// panics before installing them, then lets the panic go on. b's state is
// left as it is: writers went on beside the commit, the log holds what
// they wrote, and the next checkpoint persists it over the new working
// root.
func (d *Database) reloadRefsOnPanic(b *branch) {
	p := recover()
	if p == nil {
		return
	}
	_ = d.withWriteLock(b, func() error {
		fresh, err := d.loadBranch(context.Background(), b.name)
		if err != nil {
			d.log.Error().Str("c", "STORAGE").Err(err).Str("db", d.name).Str("branch", b.name).
				Msg("reloading a branch's refs after a panic failed")
			return nil
		}
		b.ws, b.headRef = fresh.ws, fresh.headRef
		return nil
	})
	panic(p)
}

// commitRoot commits st's root on b with the given extra parents, and
// resets the working set to it. Called with b's writers stopped.
func (d *Database) commitRoot(ctx context.Context, b *branch, st *rootState, opts CommitOptions, extraParents []hash.Hash) (*datas.Commit, error) {
	clean, err := withoutMerge(ctx, d.ns, claimLogged(b, st))
	if err != nil {
		return nil, err
	}
	made, err := d.writeCommit(ctx, b, clean.root, clean.lsn, opts, extraParents)
	if err != nil {
		return nil, err
	}
	d.engine.panics.at("vc.ref")
	b.ws, b.headRef = made.ws, made.rootRef
	b.notes = nil // the commit holds every write published so far
	b.setDurable(clean)
	return made.commit, nil
}

// madeCommit is a commit written to the store, with what b's working set
// and head root become.
type madeCommit struct {
	commit  *datas.Commit
	ws      datas.Dataset
	rootRef types.Ref
}

// writeCommit commits root, which holds b's log up to lsn, with b's head
// and extraParents as parents, and moves b's working set to it: one
// durable update of the store. It leaves b as it is.
func (d *Database) writeCommit(ctx context.Context, b *branch, root prolly.AddressMap, lsn uint64, opts CommitOptions, extraParents []hash.Hash) (madeCommit, error) {
	meta, err := d.commitMeta(opts)
	if err != nil {
		return madeCommit{}, err
	}
	head, err := d.refDataset(ctx, refHeads, b.name)
	if err != nil {
		return madeCommit{}, err
	}
	copts := datas.CommitOptions{Meta: meta}
	if len(extraParents) > 0 {
		cur, _ := head.MaybeHeadAddr()
		copts.Parents = append([]hash.Hash{cur}, extraParents...)
	}
	rootVal := tree.ValueFromNode(root.Node())
	rootRef, err := d.vs.WriteValue(ctx, rootVal)
	if err != nil {
		return madeCommit{}, err
	}
	spec := d.workingSetSpec(rootRef, rootRef, lsn)
	prev, _ := b.ws.MaybeHeadAddr()
	var ws datas.Dataset
	err = retryManifestLock(func() (err error) {
		head, ws, err = d.db.CommitWithWorkingSet(ctx, head, b.ws, rootVal, spec, prev, copts)
		return err
	})
	if err != nil {
		return madeCommit{}, fmt.Errorf("commit %s@%s: %w", d.name, b.name, err)
	}
	addr, _ := head.MaybeHeadAddr()
	c, err := datas.LoadCommitAddr(ctx, d.vs, addr)
	if err != nil {
		return madeCommit{}, err
	}
	return madeCommit{commit: c, ws: ws, rootRef: rootRef}, nil
}
