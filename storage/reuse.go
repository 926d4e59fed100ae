package storage

import "sync"

// A plain write's logged operations, its log record and its change
// events are dead once the record is in the log's buffer and the events
// are in the change log. An insert of 1,000 documents made 170 KB of the
// first, 170 KB of the second and 230 KB of the third, over a quarter of
// the bytes it allocated (BenchmarkInsertMany1000Raw), so their slices
// are reused. A transaction keeps its own (its Tx outlives the commit),
// and replay's are few.

// slicePool keeps slices of T for reuse, emptied of what they referenced,
// up to a capacity of max (a larger write's are left to the collector).
// A sync.Pool holds pointers, and a slice's header boxed anew at each put
// would be an allocation a write: the boxes are reused too (boxes holds
// the empty ones).
type slicePool[T any] struct {
	full, boxes sync.Pool
	max         int
}

var (
	opsPool     = slicePool[walOp]{max: 4096}
	eventsPool  = slicePool[ChangeEvent]{max: 4096}
	recordsPool = slicePool[byte]{max: 1 << 20}
)

// get returns an empty slice, with room when one was kept.
func (p *slicePool[T]) get() []T {
	b, ok := p.full.Get().(*[]T)
	if !ok {
		return nil
	}
	s := *b
	*b = nil
	p.boxes.Put(b)
	return s
}

// put keeps s for reuse; nothing may use it afterwards. Its users only
// append, so only its elements up to its length were written: clearing
// those (the documents and keys they referenced may go) leaves it all
// zero, and a small write given a large slice clears what it used, not
// the whole slice.
func (p *slicePool[T]) put(s []T) {
	if cap(s) == 0 || cap(s) > p.max {
		return
	}
	clear(s)
	b, ok := p.boxes.Get().(*[]T)
	if !ok {
		b = new([]T)
	}
	*b = s[:0]
	p.full.Put(b)
}

// release gives a plain write's slices back once it is over: the events
// too unless they were queued for the change log, which gives them back
// once it appended them (flushChanges). Whether they were is the Tx's
// own record, not the write's result: a panic after the queueing (the
// panic step write.published) returns no result.
func (tx *Tx) release() {
	opsPool.put(tx.ops)
	tx.ops = nil
	if !tx.queued {
		eventsPool.put(tx.events)
	}
	tx.events = nil
}
