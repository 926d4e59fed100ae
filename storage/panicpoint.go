package storage

import (
	"fmt"
	"sync"
	"sync/atomic"
)

// Panic points let tests (and the server's "dumboPanic" fail point, on only
// with --enableTestCommands) make the engine panic at a named step, so that
// the release of every lock and the restoration of every invariant after a
// panic can be checked where it matters: between the steps that change
// state in memory and on disk.
//
// Steps:
//
//	write.log          a write transaction, before its log record is appended
//	write.published    a write transaction, after its state is published
//	checkpoint.fold    a checkpoint, before it folds a branch's edits
//	checkpoint.persist after the working set moved on disk, before memory follows
//	vc.locked          a version-control operation, once the branch is locked
//	vc.ref             after a version-control operation moved a branch or tag ref
//	txn.prepared       a commit over several databases, its parts durable, before its decision
//	txn.decided        a commit over several databases, after its decision, before publishing
var PanicSteps = []string{"write.log", "write.published", "checkpoint.fold", "checkpoint.persist", "vc.locked", "vc.ref",
	"txn.prepared", "txn.decided"}

type panicPoint struct {
	armed     atomic.Bool // checked first, so that the write path pays one load
	mu        sync.Mutex
	step      string
	remaining int // -1: every time
	// hook, set by tests (with armed), runs at every step instead of a
	// panic: to run something at an exact point of a write.
	hook func(step string)
}

// InjectPanic makes the next times passes through step panic (times < 0:
// every pass; 0: off).
func (e *Engine) InjectPanic(step string, times int) error {
	if times != 0 && !knownStep(step) {
		return fmt.Errorf("unknown panic step %q", step)
	}
	e.panics.mu.Lock()
	defer e.panics.mu.Unlock()
	e.panics.step, e.panics.remaining = step, times
	e.panics.armed.Store(times != 0)
	return nil
}

func knownStep(step string) bool {
	for _, s := range PanicSteps {
		if s == step {
			return true
		}
	}
	return false
}

// at panics when a panic was injected at step.
func (p *panicPoint) at(step string) {
	if !p.armed.Load() {
		return
	}
	p.mu.Lock()
	if h := p.hook; h != nil {
		p.mu.Unlock()
		h(step)
		return
	}
	fire := p.remaining != 0 && p.step == step
	if fire && p.remaining > 0 {
		p.remaining--
	}
	p.mu.Unlock()
	if fire {
		panic("injected panic at " + step)
	}
}
