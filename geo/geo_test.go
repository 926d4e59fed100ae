package geo

import (
	"math/rand"
	"testing"

	"github.com/golang/geo/s2"
	"go.mongodb.org/mongo-driver/v2/bson"
)

func polygonDoc(t *testing.T, rings ...[][2]float64) []byte {
	t.Helper()
	var coords bson.A
	for _, r := range rings {
		var ring bson.A
		for _, p := range r {
			ring = append(ring, bson.A{p[0], p[1]})
		}
		coords = append(coords, ring)
	}
	b, err := bson.Marshal(bson.D{{Key: "type", Value: "Polygon"}, {Key: "coordinates", Value: coords}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestRandomPolygonsDoNotPanic: rings of random, repeated and antipodal
// vertices are either refused with an error or parsed, never a panic, and
// a parsed polygon's key cells cover its vertices.
func TestRandomPolygonsDoNotPanic(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	coord := func() [2]float64 {
		switch rng.Intn(6) {
		case 0:
			return [2]float64{180, 0}
		case 1:
			return [2]float64{0, 90}
		}
		return [2]float64{rng.Float64()*360 - 180, rng.Float64()*180 - 90}
	}
	parsed := 0
	for i := 0; i < 1000; i++ {
		n := 3 + rng.Intn(6)
		ring := make([][2]float64, 0, n+1)
		for j := 0; j < n; j++ {
			p := coord()
			if j > 0 && rng.Intn(5) == 0 {
				p = ring[j-1]
			}
			ring = append(ring, p)
		}
		ring = append(ring, ring[0])
		s, err := ParseGeoJSON(polygonDoc(t, ring))
		if err != nil {
			continue
		}
		parsed++
		cells := s2.CellUnion(KeyCells(s))
		for _, loop := range s.Polygons[0].Loops() {
			for _, v := range loop.Vertices() {
				if !cells.ContainsPoint(v) {
					t.Fatalf("ring %v: key cells miss vertex %v", ring, v)
				}
			}
		}
	}
	if parsed == 0 {
		t.Fatal("no random ring parsed")
	}
}

func TestGridCoverHoldsItsPoints(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	g := Grid{Bits: 12, Min: -100, Max: 100}
	for i := 0; i < 200; i++ {
		b := Box{Min: Point2{rng.Float64()*200 - 100, rng.Float64()*200 - 100}}
		b.Max = Point2{min(99.9, b.Min.X+rng.Float64()*50), min(99.9, b.Min.Y+rng.Float64()*50)}
		ranges := g.CoverBox(b)
		for j := 0; j < 50; j++ {
			p := Point2{b.Min.X + rng.Float64()*(b.Max.X-b.Min.X), b.Min.Y + rng.Float64()*(b.Max.Y-b.Min.Y)}
			k, err := g.Key(p)
			if err != nil {
				t.Fatal(err)
			}
			if !inRanges(ranges, k) {
				t.Fatalf("box %v: point %v (key %x) outside its cover", b, p, k)
			}
		}
	}
	if _, err := g.Key(Point2{100, 0}); err == nil {
		t.Fatal("a point at max is outside [min, max)")
	}
}

func inRanges(rs []CellRange, k uint64) bool {
	for _, r := range rs {
		if k >= r.Lo && k <= r.Hi {
			return true
		}
	}
	return false
}

func TestCoalesce(t *testing.T) {
	got := Coalesce([]CellRange{{0, 9}, {15, 20}, {100, 101}, {103, 104}})
	want := []CellRange{{0, 20}, {100, 104}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("Coalesce: %v, want %v", got, want)
	}
}

func TestGridCellBoxHoldsItsPoints(t *testing.T) {
	rng := rand.New(rand.NewSource(9))
	g := DefaultGrid
	for i := 0; i < 1000; i++ {
		p := Point2{rng.Float64()*360 - 180, rng.Float64()*180 - 90}
		k, err := g.Key(p)
		if err != nil {
			t.Fatal(err)
		}
		if b := g.CellBox(k); DistanceToBox(p, b) > 1e-9 {
			t.Fatalf("%v: its cell's box %v is %v away", p, b, DistanceToBox(p, b))
		}
	}
}
