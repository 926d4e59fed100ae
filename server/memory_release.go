package server

import (
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
	"time"
)

// The Go runtime keeps the heap's free pages for reuse and hands them back
// to the kernel only slowly (its scavenger keeps up to about 110% of the
// heap's goal), so a server whose live heap is flat still sees its
// resident size drift up and down by what the runtime happens to keep.
// Every Config.MemoryRelease the server looks at those free pages and,
// once they pass memoryReleaseFloor, collects and returns them all
// (debug.FreeOSMemory), as mongod's allocator releases its free pages in
// the background. The cost is one collection per interval at most
// (docs/design/resources.md, "Returning free memory").

// DefaultMemoryRelease is how often the server checks for free pages to
// return (dumbodb's --memoryReleaseSeconds).
const DefaultMemoryRelease = time.Minute

// memoryReleaseFloor is the free memory below which nothing is returned:
// a collection to return less costs more than the pages are worth.
const memoryReleaseFloor = 1 << 20

// memoryReleases counts what the server returned, for serverStatus.goMemory.
type memoryReleases struct {
	count atomic.Int64 // releases done
	bytes atomic.Int64 // bytes the releases returned to the kernel
}

// heapFreeAndReleased reads the heap's free pages still mapped and those
// already returned to the kernel.
func heapFreeAndReleased() (free, released int64) {
	s := []metrics.Sample{{Name: "/memory/classes/heap/free:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	return sampleBytes(s[0]), sampleBytes(s[1])
}

func sampleBytes(s metrics.Sample) int64 {
	if s.Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int64(s.Value.Uint64())
}

// releaseIfWorth returns the heap's free pages to the kernel when they
// are at least floor, and counts what it returned.
func (m *memoryReleases) releaseIfWorth(floor int64) {
	free, before := heapFreeAndReleased()
	if free < floor {
		return
	}
	debug.FreeOSMemory()
	_, after := heapFreeAndReleased()
	m.count.Add(1)
	m.bytes.Add(max(after-before, 0))
}

// releaseMemoryLoop runs releaseIfWorth every Config.MemoryRelease until
// Shutdown; Serve starts it only when the interval is set.
func (s *Server) releaseMemoryLoop() {
	defer s.wg.Done()
	t := time.NewTicker(s.cfg.MemoryRelease)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			s.guard("memory release", func() { s.memReleases.releaseIfWorth(memoryReleaseFloor) })
		case <-s.done:
			return
		}
	}
}
