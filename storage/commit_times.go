package storage

import (
	"context"
	"sync"
)

// commitTimes keeps the cluster times of the transactions over several
// databases that took their time but have not yet published every part.
// Their parts are published one database after another, so a reader at a
// time at or after such a commit's could otherwise see one database with
// the transaction's writes and another without them; a read at a time
// waits until every commit stamped at or before it has published all its
// parts, and so sees all of each or nothing (docs/design/transactions.md,
// "Snapshots").
type commitTimes struct {
	mu      sync.Mutex
	pending map[uint64]int // time -> commits stamped with it, not all published
	changed chan struct{}  // closed and replaced whenever one finishes
}

// take stamps a commit with the engine's clock and counts it pending, in
// one step, so that a reader that saw the clock at or past the stamp also
// sees the commit pending.
func (c *commitTimes) take(e *Engine) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	at, _ := e.now()
	if c.pending == nil {
		c.pending = map[uint64]int{}
		c.changed = make(chan struct{})
	}
	c.pending[at]++
	return at
}

// done ends a commit's pending time: every part is published, or none
// will be.
func (c *commitTimes) done(at uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pending[at]--; c.pending[at] <= 0 {
		delete(c.pending, at)
	}
	close(c.changed)
	c.changed = make(chan struct{})
}

// wait blocks until no commit stamped at or before t is pending, or ctx
// ends.
func (c *commitTimes) wait(ctx context.Context, t uint64) error {
	for {
		ch := c.pendingThrough(t)
		if ch == nil {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// pendingThrough is the channel to wait on while a commit stamped at or
// before t is pending (nil: none is).
func (c *commitTimes) pendingThrough(t uint64) <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	for at := range c.pending {
		if at <= t {
			return c.changed
		}
	}
	return nil
}

// WaitCommitsThrough waits until every transaction over several databases
// committed at or before cluster time t is visible in all of them: a read
// after a client saw time t (afterClusterTime) then sees each such
// transaction whole.
func (e *Engine) WaitCommitsThrough(ctx context.Context, t uint64) error {
	return e.commitTimes.wait(ctx, t)
}
