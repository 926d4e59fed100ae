package storage

import (
	"context"
	"sync"
)

// runningCheckpoint is the checkpoint holding a database's ckptMu, which
// close and drop cancel rather than wait for its whole fold.
type runningCheckpoint struct {
	mu   sync.Mutex
	stop context.CancelFunc // nil: none running
}

// start registers a checkpoint; it returns the context its fold runs
// under and the function to call when it ends.
func (r *runningCheckpoint) start(ctx context.Context) (context.Context, func()) {
	ctx, stop := context.WithCancel(ctx)
	r.mu.Lock()
	r.stop = stop
	r.mu.Unlock()
	return ctx, func() {
		r.mu.Lock()
		r.stop = nil
		r.mu.Unlock()
		stop()
	}
}

// cancel stops the running checkpoint's fold, if there is one; the
// caller then waits for it by taking ckptMu.
func (r *runningCheckpoint) cancel() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stop != nil {
		r.stop()
	}
}

// budgetCheckpoint is the background checkpoint that writers start when
// the edit budget is passed.
type budgetCheckpoint struct {
	mu   sync.Mutex
	done chan struct{} // closed when it ends; nil: none running
}

// checkpointSoon starts a checkpoint of d in the background unless the
// budget's is running already, and returns the channel closed when that
// one ends. A writer that finds the checkpoint due calls it and goes on:
// the fold runs beside the writers (checkpointBeside). Started by a writer
// inside the write gate, it counts as inside (writers may wait for it).
func (d *Database) checkpointSoon(ctx context.Context) <-chan struct{} {
	d.budget.mu.Lock()
	defer d.budget.mu.Unlock()
	if d.budget.done != nil {
		return d.budget.done
	}
	done := make(chan struct{})
	d.budget.done = done
	work, leave, joined := d.engine.gate.join(ctx)
	if !joined {
		work, leave = context.Background(), func() {}
	}
	go func() {
		defer leave()
		defer func() {
			d.budget.mu.Lock()
			d.budget.done = nil
			d.budget.mu.Unlock()
			close(done)
		}()
		d.engine.guard(d, "checkpoint over the edit budget", func() error {
			return d.Checkpoint(work)
		})
	}()
	return done
}

// checkpointDue reports whether the edits passed half the budget, from
// which a checkpoint folds them beside the writers. Half, so that a fold
// ends before the writers fill the other half: with the checkpoint
// started at the budget and writers waiting at half again over it, the
// edits reached 1.5 times the budget (the memory goal allows
// the budget) and writers waited for folds anyway, while from half the
// budget they did not wait and the edits stayed within it
// (BenchmarkInsertManyPastTheBudget, 32 MiB budget).
//
// branchBytes is what the writer's branch holds: a branch holding little
// of the edits is checkpointed only once the budget is passed, else each
// of its writes would start a checkpoint of its few edits while other
// databases hold the rest.
func (e *Engine) checkpointDue(branchBytes int64) bool {
	all := e.budgetBytes()
	return all > e.opts.CacheBytes || (all > e.opts.CacheBytes/2 && branchBytes >= e.opts.CacheBytes/4)
}

// overBudget reports whether the edits passed the budget: the fold of a
// checkpoint is slower than the writers, who must wait for it.
func (e *Engine) overBudget() bool { return e.budgetBytes() > e.opts.CacheBytes }

// budgetBytes is what the edit budget counts: the current states' edits
// and the histories' superseded ones. A checkpoint frees only the first,
// but the second stays within historyShare, an eighth of the budget, so
// a checkpoint always brings the sum under the half that starts one.
func (e *Engine) budgetBytes() int64 { return e.editBytes.Load() + e.historyBytes.Load() }

// awaitBudget makes a writer that finds the budget passed wait for d's
// checkpoint (starting one if none runs) instead of adding edits. The one
// running may have frozen its state long before, and leave the edits
// written since over the budget: then the writer waits for one more,
// which freezes them all. No more than that: the edits over the budget
// may be other databases', which d's checkpoints do not release.
// Called before the writer takes its branch's lock, which the checkpoint
// needs to swap its fold in.
func (d *Database) awaitBudget(ctx context.Context) {
	for range 2 {
		if !d.engine.overBudget() {
			return
		}
		select {
		case <-d.checkpointSoon(ctx):
		case <-ctx.Done():
			return
		}
	}
}
