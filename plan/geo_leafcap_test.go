package plan

import (
	"math"
	"math/rand"
	"testing"

	"github.com/golang/geo/s1"
	"github.com/golang/geo/s2"
)

// TestLeafCapTestAgreesWithCells checks the center shortcut against the
// exact cell tests it replaces, on leaf cells at random and on cells
// right at a cap's boundary, where it must leave the decision to them.
func TestLeafCapTestAgreesWithCells(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	randomPoint := func() s2.Point {
		return s2.PointFromCoords(rng.NormFloat64(), rng.NormFloat64(), rng.NormFloat64())
	}
	decided := 0
	for range 200 {
		center := randomPoint()
		radius := s1.Angle(rng.Float64() * math.Pi)
		c := s2.CapFromCenterAngle(center, radius)
		test := newLeafCapTest(c)
		for j := range 200 {
			p := randomPoint()
			if j%2 == 0 { // at the boundary, within a few leaf cells
				axis := s2.Point{Vector: center.Cross(p.Vector).Normalize()}
				off := s1.Angle((rng.Float64() - 0.5) * 1e-8)
				p = s2.Point{Vector: s2.Rotate(center, axis, radius+off).Vector}
			}
			id := s2.CellFromPoint(p).ID()
			cell := s2.CellFromCellID(id)
			switch test.decide(id) {
			case leafInside:
				decided++
				if !c.ContainsCell(cell) {
					t.Fatalf("cap %v: cell %v called inside, ContainsCell says no", c, id)
				}
			case leafOutside:
				decided++
				if c.IntersectsCell(cell) {
					t.Fatalf("cap %v: cell %v called outside, IntersectsCell says it meets", c, id)
				}
			}
		}
	}
	if decided < 15000 {
		t.Fatalf("only %d of 40,000 cells decided by their centers", decided)
	}
}
