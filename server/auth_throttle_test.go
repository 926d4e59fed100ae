package server

import (
	"testing"
	"time"
)

// TestAuthThrottle: the first failures of a user from a source answer at
// once, then the wait doubles up to its bound; that user's success, or
// time, forgets them, and other sources are not slowed.
func TestAuthThrottle(t *testing.T) {
	var th authThrottle
	now := time.Unix(1000, 0)
	var waits []time.Duration
	for range 10 {
		d, _ := th.failed("10.0.0.1", "alice@admin", now)
		waits = append(waits, d)
	}
	want := []time.Duration{0, 0, 0, 100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond,
		800 * time.Millisecond, 1600 * time.Millisecond, 3200 * time.Millisecond, 5 * time.Second}
	for i := range want {
		if waits[i] != want[i] {
			t.Fatalf("waits %v, want %v", waits, want)
		}
	}
	if d, _ := th.failed("10.0.0.2", "alice@admin", now); d != 0 {
		t.Fatalf("another source waits %v", d)
	}
	th.succeeded("10.0.0.1", "alice@admin")
	if d, n := th.failed("10.0.0.1", "alice@admin", now); d != 0 || n != 1 {
		t.Fatalf("after a success: wait %v, %d in a row", d, n)
	}
	for range 5 {
		th.failed("10.0.0.3", "bob@admin", now)
	}
	if d, n := th.failed("10.0.0.3", "bob@admin", now.Add(throttleForget+time.Second)); d != 0 || n != 1 {
		t.Fatalf("after %v: wait %v, %d in a row", throttleForget, d, n)
	}
}

// TestAuthThrottleSuccessForgivesOnlyItsUser: a success for one user does
// not forgive failures for another from the same source.
func TestAuthThrottleSuccessForgivesOnlyItsUser(t *testing.T) {
	var th authThrottle
	now := time.Unix(1000, 0)
	for range 5 {
		th.failed("10.0.0.1", "root@admin", now)
	}
	th.succeeded("10.0.0.1", "mallory@team")
	d, n := th.failed("10.0.0.1", "root@admin", now)
	if n != 6 || d != 400*time.Millisecond {
		t.Fatalf("root's failures after mallory's success: %d in a row, wait %v; want 6, 400ms", n, d)
	}
}

// TestAuthThrottleCountsTheSourceOverNames: guesses spread over many user
// names meet the source's count.
func TestAuthThrottleCountsTheSourceOverNames(t *testing.T) {
	var th authThrottle
	now := time.Unix(1000, 0)
	var last time.Duration
	for i := range throttleSourceFree + 2 {
		last, _ = th.failed("10.0.0.1", "user"+itoa(int64(i))+"@admin", now)
	}
	if last != 200*time.Millisecond {
		t.Fatalf("the %dth failure from one source over as many names waits %v, want 200ms", throttleSourceFree+2, last)
	}
}
