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
	m.releaseIfWorth(0)
	if m.count.Load() != 1 {
		t.Fatalf("released %d times with a floor of 0, want 1", m.count.Load())
	}
	// Goroutines other tests left behind (idle connections closing,
	// servers' last loops) allocate between the release and the reading,
	// and on a loaded machine for a while: a release is tried again, for
	// up to a second, before it counts as failed.
	free, _ := heapFreeAndReleased()
	for try := 0; free > memoryReleaseFloor && try < 100; try++ {
		time.Sleep(10 * time.Millisecond)
		m.releaseIfWorth(0)
		free, _ = heapFreeAndReleased()
	}
	if free > memoryReleaseFloor {
		t.Errorf("%d bytes of the heap still free after releases", free)
	}
}
