package storage

import (
	"sync/atomic"
	"time"
)

// Observer is told of the engine's durable work as it happens: the
// server's metrics. Its methods run on the paths they report (a log's
// sync, a checkpoint) and must be quick and safe for concurrent use.
type Observer interface {
	// LogSynced: a database's write-ahead log made records durable with
	// one write and sync that took d.
	LogSynced(records int, d time.Duration)
	// Checkpointed: a checkpoint of a branch (its edits folded into its
	// maps and written) took d.
	Checkpointed(d time.Duration)
}

// observerSlot holds the engine's observer, which may be installed after
// the engine opened.
type observerSlot struct{ p atomic.Pointer[Observer] }

// SetObserver installs the observer the engine tells of its work.
func (e *Engine) SetObserver(o Observer) { e.observer.p.Store(&o) }

func (e *Engine) logSynced(records int, d time.Duration) {
	if o := e.observer.p.Load(); o != nil {
		(*o).LogSynced(records, d)
	}
}

func (e *Engine) checkpointed(d time.Duration) {
	if o := e.observer.p.Load(); o != nil {
		(*o).Checkpointed(d)
	}
}
