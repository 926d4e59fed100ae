package storage

import (
	"sync/atomic"
	"time"
)

// The engine's locks, counted for serverStatus.locks: a branch's writer
// lock, which every write and checkpoint swap of the branch takes (readers
// take none), and the write gate, which every operation that changes a
// file passes and fsync with lock closes (freeze.go).

// lockMeter counts a lock's acquisitions, the ones that waited, and the
// time they waited.
type lockMeter struct {
	acquired, waited, waitMicros, waiting atomic.Int64
}

// timeWait counts an acquisition that waited from start.
func (m *lockMeter) timeWait(start time.Time) {
	m.waited.Add(1)
	m.waitMicros.Add(time.Since(start).Microseconds())
}

// LockCount is one lock's figures.
type LockCount struct {
	Acquired   int64 // acquisitions
	Waited     int64 // acquisitions that waited
	WaitMicros int64 // time they waited, in microseconds
	Waiting    int64 // waiting now
}

func (m *lockMeter) count() LockCount {
	return LockCount{Acquired: m.acquired.Load(), Waited: m.waited.Load(), WaitMicros: m.waitMicros.Load(), Waiting: m.waiting.Load()}
}

// LockStats are the engine's lock figures since it opened.
type LockStats struct {
	BranchWriter LockCount // branches' writer locks
	Gate         LockCount // passes of the write gate
	Freezes      int64     // fsync locks taken
}

// LockStats reports the engine's lock figures.
func (e *Engine) LockStats() LockStats {
	return LockStats{BranchWriter: e.branchLocks.count(), Gate: e.gate.meter.count(), Freezes: e.freezes.Load()}
}

// lockWriter takes b's writer lock, counting it.
func (e *Engine) lockWriter(b *branch) {
	e.branchLocks.acquired.Add(1)
	if b.writeMu.TryLock() {
		return
	}
	e.branchLocks.waiting.Add(1)
	start := time.Now()
	b.writeMu.Lock()
	e.branchLocks.waiting.Add(-1)
	e.branchLocks.timeWait(start)
}
