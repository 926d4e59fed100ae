package js

import (
	goruntime "runtime"
	"runtime/metrics"
	"sync"
	"time"
)

// goja has no heap of its own to cap: its objects are Go objects. The
// heap watch bounds a call's memory from outside: while calls run, a
// goroutine samples the Go heap every heapTick; a call during which the
// heap grew by more than its limit is interrupted with "Out of memory".
// Before interrupting, the watch collects garbage once and looks again,
// so that garbage a call left (or other work's) is not counted. The
// attribution is approximate, the process has one heap: concurrent work
// growing the heap counts against a running call too, which errs on the
// side of stopping a call, never of letting one run away.

const heapTick = 5 * time.Millisecond

const heapMetric = "/memory/classes/heap/objects:bytes"

type heapWatch struct {
	mu      sync.Mutex
	calls   map[*watchedCall]struct{}
	running bool
}

type watchedCall struct {
	g           *callGuard
	base, limit int64
}

// start watches a call in vm; the returned func ends the watch.
func (h *heapWatch) start(g *callGuard, limit int64) func() {
	w := &watchedCall{g: g, base: heapBytes(), limit: limit}
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

func (h *heapWatch) loop() {
	t := time.NewTicker(heapTick)
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

// check interrupts the calls over their limit, after one collection.
func (h *heapWatch) check(calls []*watchedCall) {
	now := heapBytes()
	over := false
	for _, w := range calls {
		if now-w.base > w.limit {
			over = true
		}
	}
	if !over {
		return
	}
	goruntime.GC()
	now = heapBytes()
	for _, w := range calls {
		if now-w.base > w.limit {
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
