package testload

import (
	"testing"
	"time"
)

// TestTimeoutIsAtLeastItsBase: a scaled timeout never shrinks, and stays
// within its bound.
func TestTimeoutIsAtLeastItsBase(t *testing.T) {
	s := Scale()
	if s < 1 || s > maxScale {
		t.Fatalf("scale %v, want within [1, %d]", s, maxScale)
	}
	if d := Timeout(time.Second); d < time.Second || d > maxScale*time.Second {
		t.Fatalf("Timeout(1s) = %v", d)
	}
}
