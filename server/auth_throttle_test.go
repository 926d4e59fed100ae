package server

import (
	"testing"
	"time"
)

// TestAuthThrottle: the first failures from a source answer at once, then
// the wait doubles up to its bound; a success, or time, forgets them, and
// other sources are not slowed.
func TestAuthThrottle(t *testing.T) {
	var th authThrottle
	now := time.Unix(1000, 0)
	var waits []time.Duration
	for range 10 {
		d, _ := th.failed("10.0.0.1", now)
		waits = append(waits, d)
	}
	want := []time.Duration{0, 0, 0, 100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond,
		800 * time.Millisecond, 1600 * time.Millisecond, 3200 * time.Millisecond, 5 * time.Second}
	for i := range want {
		if waits[i] != want[i] {
			t.Fatalf("waits %v, want %v", waits, want)
		}
	}
	if d, _ := th.failed("10.0.0.2", now); d != 0 {
		t.Fatalf("another source waits %v", d)
	}
	th.succeeded("10.0.0.1")
	if d, n := th.failed("10.0.0.1", now); d != 0 || n != 1 {
		t.Fatalf("after a success: wait %v, %d in a row", d, n)
	}
	for range 5 {
		th.failed("10.0.0.3", now)
	}
	if d, n := th.failed("10.0.0.3", now.Add(throttleForget+time.Second)); d != 0 || n != 1 {
		t.Fatalf("after %v: wait %v, %d in a row", throttleForget, d, n)
	}
}
