package geo

import (
	"math"

	"github.com/dumbodb/dumbodb/mongoerr"
)

// 2d index keys: the plane [Min, Max) on both axes cut into 2^Bits cells
// a side, a point keyed by its cell's Morton code (x and y bits
// interleaved), so that a quadtree cell at any level is one range of
// keys. A region is covered by quadtree cells, refined where it crosses
// them, up to flatMaxCells.
type Grid struct {
	Bits     int
	Min, Max float64
}

// DefaultGrid is mongod's default 2d index: 26 bits over [-180, 180).
var DefaultGrid = Grid{Bits: 26, Min: -180, Max: 180}

const flatMaxCells = 64

// Key is a point's cell code; points outside [Min, Max) are refused as
// by mongod.
func (g Grid) Key(p Point2) (uint64, error) {
	if p.X < g.Min || p.X >= g.Max || p.Y < g.Min || p.Y >= g.Max {
		return 0, mongoerr.New(mongoerr.Location13027, "point not in interval of [ %s, %s ) :: caused by :: { 0: %s, 1: %s }",
			fmtNum(g.Min), fmtNum(g.Max), fmtNum(p.X), fmtNum(p.Y))
	}
	return interleave(g.cell(p.X), g.cell(p.Y)), nil
}

func (g Grid) cell(v float64) uint32 {
	n := float64(uint64(1) << g.Bits)
	c := math.Floor((v - g.Min) / (g.Max - g.Min) * n)
	return uint32(math.Max(0, math.Min(c, n-1)))
}

func interleave(x, y uint32) uint64 {
	return spread(x)<<1 | spread(y)
}

func spread(v uint32) uint64 {
	x := uint64(v)
	x = (x | x<<16) & 0x0000FFFF0000FFFF
	x = (x | x<<8) & 0x00FF00FF00FF00FF
	x = (x | x<<4) & 0x0F0F0F0F0F0F0F0F
	x = (x | x<<2) & 0x3333333333333333
	x = (x | x<<1) & 0x5555555555555555
	return x
}

// quad is a quadtree cell: level l, cell coordinates (x, y) at that level.
type quad struct {
	level int
	x, y  uint32
}

func (g Grid) quadBox(q quad) Box {
	size := (g.Max - g.Min) / float64(uint64(1)<<q.level)
	lo := Point2{g.Min + float64(q.x)*size, g.Min + float64(q.y)*size}
	return Box{Min: lo, Max: Point2{lo.X + size, lo.Y + size}}
}

func (g Grid) quadRange(q quad) CellRange {
	shift := uint(2 * (g.Bits - q.level))
	lo := interleave(q.x, q.y) << shift
	return CellRange{lo, lo + (uint64(1)<<shift - 1)}
}

// CoverBox is the key ranges of the quadtree cells that cover a box.
func (g Grid) CoverBox(b Box) []CellRange {
	frontier := []quad{{}}
	var out []CellRange
	for len(frontier) > 0 {
		var next []quad
		for _, q := range frontier {
			qb := g.quadBox(q)
			if !boxesMeet(qb, b) {
				continue
			}
			if boxInside(qb, b) || q.level == g.Bits || len(out)+len(next)+4*len(frontier) > flatMaxCells {
				out = append(out, g.quadRange(q))
				continue
			}
			for i := uint32(0); i < 4; i++ {
				next = append(next, quad{q.level + 1, q.x*2 + i&1, q.y*2 + i>>1})
			}
		}
		frontier = next
	}
	return mergeRanges(out)
}

// Meets reports whether two boxes share a point.
func (b Box) Meets(o Box) bool { return boxesMeet(b, o) }

func boxesMeet(a, b Box) bool {
	return a.Min.X <= b.Max.X && b.Min.X <= a.Max.X && a.Min.Y <= b.Max.Y && b.Min.Y <= a.Max.Y
}

func boxInside(inner, outer Box) bool {
	return inner.Min.X >= outer.Min.X && inner.Max.X <= outer.Max.X && inner.Min.Y >= outer.Min.Y && inner.Max.Y <= outer.Max.Y
}

// FlatBound is the box a planar region lies in, for a 2d index's
// bounds (ok false: the region is spherical).
func (w *Within) FlatBound() (Box, bool) {
	switch {
	case w.Box != nil:
		return *w.Box, true
	case w.Poly != nil:
		return w.Poly.bound(), true
	case w.Circle != nil:
		c := w.Circle
		return Box{Min: Point2{c.Center.X - c.Radius, c.Center.Y - c.Radius}, Max: Point2{c.Center.X + c.Radius, c.Center.Y + c.Radius}}, true
	}
	return Box{}, false
}

// Square is the box of half side r around p.
func Square(p Point2, r float64) Box {
	return Box{Min: Point2{p.X - r, p.Y - r}, Max: Point2{p.X + r, p.Y + r}}
}

// CellBox is the box of the grid cell a key names.
func (g Grid) CellBox(code uint64) Box {
	x, y := compact(code>>1), compact(code)
	return g.quadBox(quad{level: g.Bits, x: x, y: y})
}

// compact inverts spread: the even bits of v.
func compact(v uint64) uint32 {
	x := v & 0x5555555555555555
	x = (x | x>>1) & 0x3333333333333333
	x = (x | x>>2) & 0x0F0F0F0F0F0F0F0F
	x = (x | x>>4) & 0x00FF00FF00FF00FF
	x = (x | x>>8) & 0x0000FFFF0000FFFF
	x = (x | x>>16) & 0x00000000FFFFFFFF
	return uint32(x)
}

// DistanceToBox is the planar distance from p to the nearest point of b.
func DistanceToBox(p Point2, b Box) float64 {
	dx := math.Max(0, math.Max(b.Min.X-p.X, p.X-b.Max.X))
	dy := math.Max(0, math.Max(b.Min.Y-p.Y, p.Y-b.Max.Y))
	return math.Hypot(dx, dy)
}
