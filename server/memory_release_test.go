package server

import (
	"math"
	"testing"
	"time"
)

// releaseIfWorth returns memory only from its floor up, and counts it.
func TestReleaseIfWorthHonoursTheFloor(t *testing.T) {
	var m memoryReleases
	m.releaseIfWorth(math.MaxInt64)
	if m.count.Load() != 0 {
		t.Fatalf("released %d times below the floor", m.count.Load())
	}
	garbage := make([][]byte, 64)
	for i := range garbage {
		garbage[i] = make([]byte, 256<<10)
	}
	garbage = nil
	_, releasedBefore := heapFreeAndReleased()
	m.releaseIfWorth(0)
	if m.count.Load() != 1 {
		t.Fatalf("released %d times with a floor of 0, want 1", m.count.Load())
	}
	// The 16 MiB let go above go back to the kernel. Tests running beside
	// this one allocate meanwhile, and may take back released pages, so
	// what is read is the growth of the released bytes, at least a
	// quarter of it, tried again for up to a second on a loaded machine.
	const want = 4 << 20
	_, released := heapFreeAndReleased()
	for try := 0; released-releasedBefore < want && try < 100; try++ {
		time.Sleep(10 * time.Millisecond)
		m.releaseIfWorth(0)
		_, released = heapFreeAndReleased()
	}
	if released-releasedBefore < want {
		t.Errorf("%d bytes released, want at least %d", released-releasedBefore, want)
	}
}
