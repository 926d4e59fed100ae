package storage

import "sync"

// A plain write's logged operations and change events are dead once its
// record is encoded and its events are in the change log. An insert of
// 1,000 documents made 170 KB of the first and 230 KB of the second, a
// fifth of the bytes it allocated (BenchmarkInsertMany1000Raw), so their
// slices are reused. A transaction keeps its own (its Tx outlives the
// commit), and replay's are few.

// maxReused is the capacity of the longest slice kept for reuse: a larger
// write's is left to the collector.
const maxReused = 4096

// slicePool keeps slices of T for reuse, emptied of what they referenced.
type slicePool[T any] struct{ pool sync.Pool }

var (
	opsPool    slicePool[walOp]
	eventsPool slicePool[ChangeEvent]
)

// get returns an empty slice, with room when one was kept.
func (p *slicePool[T]) get() []T {
	if s, ok := p.pool.Get().(*[]T); ok {
		return *s
	}
	return nil
}

// put keeps s for reuse; nothing may use it afterwards.
func (p *slicePool[T]) put(s []T) {
	if cap(s) == 0 || cap(s) > maxReused {
		return
	}
	s = s[:cap(s)]
	clear(s) // the documents and keys it referenced may go
	s = s[:0]
	p.pool.Put(&s)
}

// release gives a plain write's slices back once it is over: the events
// too unless queued is set, when the change log gives them back after it
// appended them (flushChanges).
func (tx *Tx) release(queued bool) {
	opsPool.put(tx.ops)
	tx.ops = nil
	if !queued {
		eventsPool.put(tx.events)
	}
	tx.events = nil
}
