package server

import (
	"math"
	"testing"
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
	// Tests running beside this one allocate between the release and the
	// reading, so a release is tried a few times before it counts as failed.
	free, _ := heapFreeAndReleased()
	for try := 0; free > memoryReleaseFloor && try < 5; try++ {
		m.releaseIfWorth(0)
		free, _ = heapFreeAndReleased()
	}
	if free > memoryReleaseFloor {
		t.Errorf("%d bytes of the heap still free after releases", free)
	}
}
