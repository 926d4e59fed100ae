package js

import (
	"context"
	goruntime "runtime"
	"runtime/metrics"
	"sync"
	"time"
)

// The watch bounds every running call from outside, in one goroutine
// that runs while calls do and looks at them every watchTick:
//
//   - time: a call past its deadline is interrupted (Interrupted), and one
//     whose command's context ended (maxTimeMS, killOp) with the command's
//     error. The bounds are thus kept to within a tick, without a timer per
//     call.
//   - memory: goja has no heap of its own to cap, its objects are Go
//     objects. The watch notes the Go heap when it first sees a call; a
//     call during which the heap then grew by more than its limit is
//     interrupted with "Out of memory". Before interrupting, the watch
//     collects garbage once and looks again, so that garbage (the call's
//     or other work's) is not counted. The attribution is approximate, the
//     process has one heap: concurrent work growing the heap counts
//     against a running call too, which errs on the side of stopping a
//     call, never of letting one run away. What a call allocates before
//     its first tick is not counted: a tick's worth of allocation.

const watchTick = 5 * time.Millisecond

const heapMetric = "/memory/classes/heap/objects:bytes"

type watch struct {
	mu      sync.Mutex
	calls   map[*watchedCall]struct{}
	running bool
}

type watchedCall struct {
	g        *callGuard
	ctx      context.Context // nil: none
	deadline time.Time
	limit    int64
	base     int64 // the heap when the watch first saw the call; -1 before
}

// start watches a call; the returned func ends the watch.
func (h *watch) start(g *callGuard, ctx context.Context, timeout time.Duration, limit int64) func() {
	w := &watchedCall{g: g, ctx: ctx, deadline: time.Now().Add(timeout), limit: limit, base: -1}
	h.mu.Lock()
	if h.calls == nil {
		h.calls = map[*watchedCall]struct{}{}
	}
	h.calls[w] = struct{}{}
	if !h.running {
		h.running = true
		go h.loop()
	}
	h.mu.Unlock()
	return func() {
		h.mu.Lock()
		delete(h.calls, w)
		h.mu.Unlock()
	}
}

func (h *watch) loop() {
	t := time.NewTicker(watchTick)
	defer t.Stop()
	var calls []*watchedCall
	for range t.C {
		h.mu.Lock()
		if len(h.calls) == 0 {
			h.running = false
			h.mu.Unlock()
			return
		}
		calls = calls[:0]
		for w := range h.calls {
			calls = append(calls, w)
		}
		h.mu.Unlock()
		h.check(calls)
	}
}

// check interrupts the calls past their deadline, and those over their
// heap limit after one collection.
func (h *watch) check(calls []*watchedCall) {
	now, heap := time.Now(), heapBytes()
	over := false
	for _, w := range calls {
		switch {
		case w.ctx != nil && w.ctx.Err() != nil:
			w.g.interrupt(contextStop{w.ctx.Err()})
		case now.After(w.deadline):
			w.g.interrupt(errTimeout)
		case w.base < 0:
			w.base = heap
		case heap-w.base > w.limit:
			over = true
		}
	}
	if !over {
		return
	}
	goruntime.GC()
	heap = heapBytes()
	for _, w := range calls {
		if w.base >= 0 && heap-w.base > w.limit {
			w.g.interrupt(errOutOfMemory)
		}
	}
}

// heapBytes is the bytes of live and not yet swept heap objects.
func heapBytes() int64 {
	s := []metrics.Sample{{Name: heapMetric}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int64(s[0].Value.Uint64())
}
