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
// writers does (checkpointBeside): the fold and the store's update run
// while writers go on. Only the head moves: the working set on disk stays
// where the last checkpoint left it, with the log after it, so the commit
// waits neither for the retry table nor for the change log (readyToClaim),
// and a crash replays the log over that working root as before. In
// memory the branch takes the fold's maps as its base. handled is false,
// with nothing done, where the commit needs the writers stopped: a merge
// in progress, capped collections, a store not yet written.
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

// commitFrozen folds fc's frozen state, commits its root as b's new head
// and installs the fold. A failure leaves the frozen layers to the next
// checkpoint. Called with d.ckptMu held, which keeps b's refs and working
// set from moving under it.
func (d *Database) commitFrozen(ctx context.Context, b *branch, fc *frozenCommit, opts CommitOptions) (*datas.Commit, error) {
	folded := fc.st
	if fc.frozen {
		// The commit must hold no write the log could still lose.
		if err := d.wl.WaitDurable(fc.st.lsn); err != nil {
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
			// The writes changed nothing; the next checkpoint folds them.
			return nil, cmp.Or(err, ErrNothingToCommit)
		}
	}
	if opts.Describe != nil {
		opts.Message, opts.Author = opts.Describe(fc.notes)
	}
	made, err := d.writeCommit(ctx, b, folded.root, opts, nil, nil)
	if err != nil {
		d.removeFailedTemp(err)
		return nil, err
	}
	defer d.reloadRefsOnPanic(b)
	d.engine.panics.at("vc.ref")
	_ = d.withWriteLock(b, func() error {
		b.headRef = made.rootRef
		if fc.frozen {
			d.installCommitted(ctx, b, fc, folded)
		}
		return nil
	})
	return made.commit, nil
}

// installCommitted makes the maps of fc's fold the base of b's state in
// memory. The fold is not the durable working root (the working set on
// disk did not move), so the state keeps the frozen state's checkpoint
// position: the log is kept from there, and the next checkpoint persists
// the fold with what was written since. Called with b.writeMu held.
func (d *Database) installCommitted(ctx context.Context, b *branch, fc *frozenCommit, folded *rootState) {
	if d.closed.Load() || b.deleted || b.lineage != fc.lineage {
		// A rollback after a failed log write replaced the state: its
		// frozen layers stay, for the next checkpoint to fold.
		return
	}
	cur := b.state.Load()
	var next *rootState
	if cur.lsn == fc.st.lsn {
		unpersisted := *folded
		unpersisted.checkpointed = false
		next = &unpersisted
	} else {
		var ok bool
		if next, ok = rebased(cur, fc.st, folded); !ok {
			// The catalog changed during the fold: the frozen layers stay,
			// for the next checkpoint to fold.
			return
		}
	}
	next.ckptLSN = fc.st.ckptLSN
	b.replaceCurrent(next)
	d.checkpointed(b, fc.st, next)
}

// reloadRefsOnPanic, deferred once a commit has moved b's refs in the
// store, makes b's working set and head follow them when the commit
// panics before installing them, then lets the panic go on. b's state is
// left as it is: writers went on beside the commit, and the log holds
// what they wrote.
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
	made, err := d.writeCommit(ctx, b, clean.root, opts, extraParents, &clean.lsn)
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

// writeCommit commits root with b's head and extraParents as parents,
// and, when lsn is not nil, moves b's working set to it as holding b's
// log up to *lsn: one durable update of the store. It leaves b as it is.
func (d *Database) writeCommit(ctx context.Context, b *branch, root prolly.AddressMap, opts CommitOptions, extraParents []hash.Hash, lsn *uint64) (madeCommit, error) {
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
	ws := b.ws
	err = retryManifestLock(func() (err error) {
		if lsn == nil {
			head, err = d.db.Commit(ctx, head, rootVal, copts)
			return err
		}
		spec := d.workingSetSpec(rootRef, rootRef, *lsn)
		prev, _ := b.ws.MaybeHeadAddr()
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
