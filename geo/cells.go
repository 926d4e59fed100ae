package geo

import (
	"sort"

	"github.com/golang/geo/s1"
	"github.com/golang/geo/s2"
)

// 2dsphere index keys are S2 cell ids. A point's key is its leaf cell,
// so any query cell finds it by the range of leaf cells below it. Lines
// and polygons are keyed by a covering of a few cells between
// DocMinLevel and DocMaxLevel; a query cell finds those by its range
// (cells below it) and by its ancestors down to DocMinLevel (cells
// above it), which the planner adds only for an index holding such
// shapes (index marks it multikey).
const (
	DocMinLevel = 2  // about 2,500 km a side: a continent is a few cells
	DocMaxLevel = 16 // about 150 m
	docMaxCells = 8
	// queryMaxCells bounds a query region's covering: fewer cells mean
	// fewer index ranges, more mean fewer false candidates.
	queryMaxCells = 20
	queryMaxLevel = 24
)

// KeyCells is the cells a shape's 2dsphere keys are made of, sorted and
// without repeats.
func KeyCells(s *Shape) []s2.CellID {
	var out []s2.CellID
	for _, p := range s.Points {
		out = append(out, s2.CellFromPoint(p).ID())
	}
	rc := &s2.RegionCoverer{MinLevel: DocMinLevel, MaxLevel: DocMaxLevel, MaxCells: docMaxCells}
	for _, l := range s.Lines {
		out = append(out, rc.Covering(l)...)
	}
	for _, p := range s.Polygons {
		out = append(out, rc.Covering(p)...)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return uniqueCells(out)
}

func uniqueCells(ids []s2.CellID) []s2.CellID {
	out := ids[:0]
	for i, id := range ids {
		if i == 0 || id != ids[i-1] {
			out = append(out, id)
		}
	}
	return out
}

// CellRange is an inclusive range of cell ids (as key values).
type CellRange struct{ Lo, Hi uint64 }

// Ranges is the key ranges that hold every document whose keys may meet
// the region: each query cell's descendants and, when the index holds
// shapes (not only points, whose keys are leaf cells), its ancestors
// from DocMinLevel; merged and sorted.
func Ranges(regions []s2.Region, shapes bool) []CellRange {
	rc := &s2.RegionCoverer{MinLevel: 0, MaxLevel: queryMaxLevel, MaxCells: queryMaxCells}
	var cells s2.CellUnion
	for _, r := range regions {
		cells = append(cells, rc.Covering(r)...)
	}
	cells.Normalize()
	return cellRanges(cells, shapes)
}

func cellRanges(cells s2.CellUnion, shapes bool) []CellRange {
	var out []CellRange
	for _, c := range cells {
		out = append(out, CellRange{uint64(c.RangeMin()), uint64(c.RangeMax())})
		for l := c.Level() - 1; shapes && l >= DocMinLevel; l-- {
			p := uint64(c.Parent(l))
			out = append(out, CellRange{p, p})
		}
	}
	return mergeRanges(out)
}

func mergeRanges(rs []CellRange) []CellRange {
	sort.Slice(rs, func(i, j int) bool { return rs[i].Lo < rs[j].Lo })
	var out []CellRange
	for _, r := range rs {
		if n := len(out); n > 0 && r.Lo <= out[n-1].Hi+1 {
			out[n-1].Hi = max(out[n-1].Hi, r.Hi)
			continue
		}
		out = append(out, r)
	}
	return out
}

// Regions is the spherical regions of a $geoWithin.
func (w *Within) Regions() []s2.Region {
	if w.Cap != nil {
		return []s2.Region{*w.Cap}
	}
	var out []s2.Region
	for _, p := range w.Polygons {
		out = append(out, p)
	}
	return out
}

// Regions is the parts of a shape as regions, for $geoIntersects'
// coverings.
func (s *Shape) Regions() []s2.Region { return s.regions() }

// ringMaxCells bounds a ring's covering: each cell is an index seek,
// which costs more than the keys a coarser cell reads in excess (a near
// search measures keys before it fetches).
const ringMaxCells = 8

// Annulus is the key ranges a ring search reads next: those of the cap
// of radius outer around the center, less those of the cap already read
// (nil: none); shapes as for Ranges. It returns the new cap's covering
// for the next ring.
func Annulus(center s2.Point, outer float64, done s2.CellUnion, shapes bool) ([]CellRange, s2.CellUnion) {
	rc := &s2.RegionCoverer{MinLevel: 0, MaxLevel: queryMaxLevel, MaxCells: ringMaxCells}
	c := s2.CapFromCenterAngle(center, s1Angle(outer))
	cover := rc.Covering(c)
	fresh := s2.CellUnionFromDifference(cover, done)
	union := s2.CellUnionFromUnion(cover, done)
	return cellRanges(fresh, shapes), union
}

func s1Angle(radians float64) s1.Angle { return s1.Angle(radians) }

// Coalesce joins sorted ranges across gaps no wider than the wider of
// the two: a scan then seeks less and reads more keys, the better trade
// when keys are measured before any document is fetched.
func Coalesce(rs []CellRange) []CellRange {
	var out []CellRange
	for _, r := range rs {
		if n := len(out); n > 0 {
			last := out[n-1]
			if gap := r.Lo - last.Hi - 1; gap <= max(last.Hi-last.Lo, r.Hi-r.Lo)+1 {
				out[n-1].Hi = max(last.Hi, r.Hi)
				continue
			}
		}
		out = append(out, r)
	}
	return out
}
