package storage

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Freezing the data directory (fsync with lock, docs/design/durability.md,
// "Freezing the data directory"): every operation that changes a file of
// the data directory passes the engine's write gate on its way in. Freeze
// closes the gate, waits for the operations inside to finish, checkpoints
// every open database and leaves the files still until the last Thaw;
// writers wait at the gate meanwhile, readers never pass it. A copy of the
// directory taken while it is frozen opens as the engine left it.
//
// An operation that another one starts inside the gate (a checkpoint in a
// commit, say) passes it freely: the context it is given says it is
// already inside, so that a closed gate cannot stop an operation that its
// own caller holds open. One started on a fresh context would wait for a
// freeze that waits for its caller; the freeze's deadline ends that wait.

// ErrNotFrozen is Thaw's error when no Freeze holds the data directory.
var ErrNotFrozen = errors.New("the data directory is not frozen")

// insideGateKey marks a context as inside the gate: insideOperation for
// an operation that counts as inside, insideFreeze for Freeze's own
// checkpoints.
type insideGateKey struct{}

const (
	insideOperation = "operation"
	insideFreeze    = "freeze"
)

// writeGate counts the operations inside and holds new ones while a
// freeze is pending or held.
type writeGate struct {
	mu      sync.Mutex
	inside  int
	locks   int           // Freezes not yet thawed
	closed  bool          // new operations wait for open
	open    chan struct{} // closed when the gate opens again
	drained chan struct{} // closed when the last operation inside leaves
	meter   lockMeter     // passes and waits (locks.go)
}

// enter lets an operation in, waiting while the gate is closed, and
// returns the context to run it with and the function that lets it out.
func (g *writeGate) enter(ctx context.Context) (context.Context, func(), error) {
	if ctx.Value(insideGateKey{}) != nil {
		return ctx, func() {}, nil
	}
	g.meter.acquired.Add(1)
	var waitedFrom time.Time
	for {
		g.mu.Lock()
		if !g.closed {
			g.inside++
			g.mu.Unlock()
			if !waitedFrom.IsZero() {
				g.meter.waiting.Add(-1)
				g.meter.timeWait(waitedFrom)
			}
			return context.WithValue(ctx, insideGateKey{}, insideOperation), g.leave, nil
		}
		open := g.open
		g.mu.Unlock()
		if waitedFrom.IsZero() {
			waitedFrom = time.Now()
			g.meter.waiting.Add(1)
		}
		select {
		case <-open:
		case <-ctx.Done():
			g.meter.waiting.Add(-1)
			g.meter.timeWait(waitedFrom)
			return ctx, nil, ctx.Err()
		}
	}
}

// join counts background work that an operation inside starts, and may
// wait for, as one more operation inside: a freeze waits for it rather
// than holding it at the gate while its starter waits for it. ok is false
// when ctx is not an operation's inside the gate; the work then enters
// as any other.
func (g *writeGate) join(ctx context.Context) (inside context.Context, leave func(), ok bool) {
	if ctx.Value(insideGateKey{}) != insideOperation {
		return nil, nil, false
	}
	g.mu.Lock()
	g.inside++
	g.mu.Unlock()
	return context.WithValue(context.Background(), insideGateKey{}, insideOperation), g.leave, true
}

// closedNow reports whether the gate is closed: background work that no
// one waits for does not start then.
func (g *writeGate) closedNow() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.closed
}

func (g *writeGate) leave() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.inside--
	if g.inside == 0 && g.drained != nil {
		close(g.drained)
		g.drained = nil
	}
}

// close closes the gate and waits for the operations inside to leave; it
// reports whether this is the first lock, and on an error leaves the gate
// as it found it.
func (g *writeGate) close(ctx context.Context) (first bool, err error) {
	g.mu.Lock()
	g.locks++
	if g.locks > 1 {
		g.mu.Unlock()
		return false, nil
	}
	g.closed = true
	g.open = make(chan struct{})
	var drained chan struct{}
	if g.inside > 0 {
		g.drained = make(chan struct{})
		drained = g.drained
	}
	g.mu.Unlock()
	if drained == nil {
		return true, nil
	}
	select {
	case <-drained:
		return true, nil
	case <-ctx.Done():
		g.unlock()
		return false, ctx.Err()
	}
}

// unlock takes one lock away, opening the gate when none is left; it
// returns the locks left.
func (g *writeGate) unlock() (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.locks == 0 {
		return 0, ErrNotFrozen
	}
	g.locks--
	if g.locks == 0 {
		g.closed = false
		g.drained = nil
		close(g.open)
	}
	return g.locks, nil
}

// enterGate lets one of d's operations that change its files in (the
// engine's write gate).
func (d *Database) enterGate(ctx context.Context) (context.Context, func(), error) {
	return d.engine.gate.enter(ctx)
}

// inGate runs a background task inside the write gate, waiting while
// the data directory is frozen.
func (e *Engine) inGate(fn func()) {
	_, leave, _ := e.gate.enter(context.Background())
	defer leave()
	fn()
}

func (g *writeGate) lockCount() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.locks
}

// Freeze checkpoints every open database and stops every change to the
// data directory's files until as many Thaws as Freezes: writes wait,
// reads go on. Freezes nest; it returns how many are held. ctx bounds the
// wait for the writes in progress to finish.
func (e *Engine) Freeze(ctx context.Context) (int, error) {
	e.freezeMu.Lock() // a second Freeze returns once the first has frozen
	defer e.freezeMu.Unlock()
	first, err := e.gate.close(ctx)
	if err != nil {
		return 0, err
	}
	if first {
		if err := e.flushFrozen(ctx); err != nil {
			e.gate.unlock()
			return 0, err
		}
	}
	e.freezes.Add(1)
	return e.gate.lockCount(), nil
}

// flushFrozen waits for spare databases being made, checkpoints every
// open database with the gate closed and waits for their logs' background
// work, so that nothing is left to write once Freeze returns.
func (e *Engine) flushFrozen(ctx context.Context) error {
	ctx = context.WithValue(ctx, insideGateKey{}, insideFreeze)
	if e.spares != nil {
		e.spares.wait() // spares begun before the gate closed; none begins after
	}
	for _, d := range e.handles() {
		if err := d.Checkpoint(ctx); err != nil {
			return err
		}
		d.quiesceLog()
	}
	return nil
}

// quiesceLog waits for the log's background work (a spare segment being
// prepared) to finish.
func (d *Database) quiesceLog() {
	if !d.holdIfOpen() {
		return
	}
	defer d.release()
	d.wl.WaitBackground()
}

// Thaw takes one Freeze away and returns how many are left; the files
// change again when none is.
func (e *Engine) Thaw() (int, error) {
	e.freezeMu.Lock()
	defer e.freezeMu.Unlock()
	return e.gate.unlock()
}

// thawAll opens the gate whatever holds it, for Close.
func (e *Engine) thawAll() {
	e.freezeMu.Lock()
	defer e.freezeMu.Unlock()
	for {
		if _, err := e.gate.unlock(); err != nil {
			return
		}
	}
}

// FreezeCount is how many Freezes hold the data directory.
func (e *Engine) FreezeCount() int { return e.gate.lockCount() }

// Flush checkpoints every open database: what fsync without a lock does.
func (e *Engine) Flush(ctx context.Context) error {
	for _, d := range e.handles() {
		if err := d.Checkpoint(ctx); err != nil {
			return err
		}
	}
	return nil
}
