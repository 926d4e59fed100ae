package plan

import (
	"math"

	"github.com/golang/geo/s1"
	"github.com/golang/geo/s2"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/geo"
	"github.com/dumbodb/dumbodb/index"
	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/query"
	"github.com/dumbodb/dumbodb/storage"
)

// Geo plans. A $geoWithin or $geoIntersects on a geo index's field is an
// IXSCAN over the key ranges of the cells covering the query region,
// then the exact filter on the fetched documents (cells over-cover). A
// $near or $nearSphere needs a geo index on its field (mongod's 291
// otherwise) and reads it outward in rings (near_source.go).

// geoNearPlan is a plan's near search: the index field, the predicate
// and whether distances are on the sphere.
type geoNearPlan struct {
	pred *query.NearPredicate
	// sphere: the index is 2dsphere (S2 cells); else a 2d grid.
	sphere bool
	// want is how many documents the reader takes (0: unknown).
	want int64
}

// isGeo reports an index with a geo field: the planner uses it only for
// geo predicates, its keys being cells and not values.
func isGeo(ix *storage.IndexInfo) bool {
	_, ok := ix.Spec.GeoField()
	return ok
}

// nearPlan finds the geo index a $near or $nearSphere reads.
func nearPlan(indexes []storage.IndexInfo, f *query.Filter, sorted bool, want int64) (*Plan, error) {
	np := f.Near()
	for i := range indexes {
		ix := &indexes[i]
		gf, ok := ix.Spec.GeoField()
		if !ok || gf.Path != np.Path || ix.Spec.Hidden || ix.Spec.Partial != nil {
			continue // a partial index lacks documents a near search must see
		}
		sphere := gf.Geo == index.Geo2DSphere
		if err := fitNear(np.Near, sphere); err != nil {
			return nil, err
		}
		if !sorted {
			want = 0 // a sort reads every match
		}
		p := &Plan{ix: ix, near: &geoNearPlan{pred: np, sphere: sphere, want: want}, sorted: sorted}
		p.bounds = geoFieldBounds(ix, nil)
		return p, nil
	}
	return nil, noGeoIndex()
}

func noGeoIndex() error {
	return mongoerr.New(mongoerr.NoQueryExecutionPlans, "error processing query: planner returned error :: caused by :: unable to find index for $geoNear query")
}

// fitNear adapts a near query to the index kind: on a 2dsphere index a
// legacy $near is measured on the sphere in radians, as on mongod; a
// GeoJSON point needs a 2dsphere index.
func fitNear(n *geo.Near, sphere bool) error {
	switch {
	case sphere && !n.Spherical:
		pt, err := geo.SpherePoint(n.Center)
		if err != nil {
			return err
		}
		n.Point, n.Spherical = pt, true
	case !sphere && n.Meters:
		return mongoerr.New(mongoerr.BadValue, "$near with a GeoJSON point requires a 2dsphere index")
	}
	return nil
}

// geoPlan is the best geo index plan for the filter's $geoWithin and
// $geoIntersects (nil: none fits).
func geoPlan(indexes []storage.IndexInfo, f *query.Filter, preds []query.Predicate) *Plan {
	gps := f.GeoPredicates()
	if len(gps) == 0 {
		return nil
	}
	for i := range indexes {
		ix := &indexes[i]
		if ix.Spec.Hidden || ix.Spec.Partial != nil {
			continue
		}
		if p := geoIndexPlan(ix, gps, preds, f); p != nil {
			return p
		}
	}
	return nil
}

// geoIndexPlan bounds ix's geo field by the first geo predicate on it
// that its kind can serve, and its other fields as any index's.
func geoIndexPlan(ix *storage.IndexInfo, gps []query.GeoPredicate, preds []query.Predicate, f *query.Filter) *Plan {
	gf, ok := ix.Spec.GeoField()
	if !ok {
		return nil
	}
	for _, gp := range gps {
		if gp.Path != gf.Path {
			continue
		}
		ranges, ok := geoRanges(ix, gf, gp)
		if !ok {
			continue
		}
		cells := make([]index.FieldInterval, 0, len(ranges))
		for _, r := range ranges {
			cells = append(cells, index.CellInterval(r))
		}
		p := &Plan{ix: ix, geoScan: true, keyFilter: pointKeyFilter(ix, gp), geoKnown: gp.Known}
		p.bounds = geoFieldBounds(ix, cells)
		ic := ix.Spec.Collation()
		cp := collationPreds(preds, ic, f.Collation())
		for i, fl := range ix.Spec.Fields {
			if fl.Geo == "" {
				ivs, _ := collatedFieldIntervals(fl.Path, cp, true, ic)
				if fl.Desc {
					for j := range ivs {
						ivs[j] = ivs[j].Descending()
					}
				}
				p.bounds[i] = ivs
			}
		}
		p.intervals = index.EntryIntervals(p.bounds)
		return p
	}
	return nil
}

// pointKeyFilter tests an entry's cell against the region, on an index
// of points whose first field is the geo one: a point whose cell misses
// the region (a 2dsphere leaf cell; a 2d grid cell against the region's
// bounding boxes) cannot match, so its document is not fetched; one
// whose 2dsphere leaf cell lies inside matches it (inside), so its
// geometry need not be parsed. nil when entries are not such cells.
func pointKeyFilter(ix *storage.IndexInfo, gp query.GeoPredicate) func([]byte) (keep, inside bool) {
	switch {
	case ix.Multikey || ix.Spec.Fields[0].Geo == "":
		return nil
	case ix.Spec.Fields[0].Geo == index.Geo2D:
		return gridKeyFilter(ix.Spec.Grid(), gp)
	}
	var regions []s2.Region
	switch {
	case gp.Intersects != nil:
		regions = gp.Intersects.Regions()
	case gp.Within.Spherical():
		regions = gp.Within.Regions()
	default:
		return nil
	}
	caps := make([]*leafCapTest, len(regions))
	for i, r := range regions {
		if c, ok := r.(s2.Cap); ok {
			caps[i] = newLeafCapTest(c)
		}
	}
	return func(entry []byte) (bool, bool) {
		id, ok := index.DecodeCell(entry)
		if !ok {
			return true, false
		}
		var cell *s2.Cell
		for i, r := range regions {
			if t := caps[i]; t != nil {
				switch t.decide(s2.CellID(id)) {
				case leafInside:
					return true, true
				case leafOutside:
					continue
				}
			}
			if cell == nil {
				c := s2.CellFromCellID(s2.CellID(id))
				cell = &c
			}
			if r.ContainsCell(*cell) {
				return true, true
			}
			if r.IntersectsCell(*cell) {
				return true, false
			}
		}
		return false, false
	}
}

// leafCapTest decides a leaf cell against a cap from the cell's center
// alone when the center lies farther from the cap's boundary than a
// leaf cell's size: a dot product instead of the cell's four vertices
// against the cap (what ContainsCell and IntersectsCell compute), which
// was a third of an indexed $centerSphere's cost. Cells nearer the
// boundary are left to the exact test.
type leafCapTest struct {
	center  s2.Point
	in, out float64 // dot products with center beyond which a cell is inside, outside
}

// leafMargin exceeds the angle from a leaf cell's center to its farthest
// point (about 1e-9 radians at level 30) many times over.
const leafMargin = 1e-7

func newLeafCapTest(c s2.Cap) *leafCapTest {
	if c.IsEmpty() || c.IsFull() {
		return nil
	}
	r := c.Radius().Radians()
	t := &leafCapTest{center: c.Center(), in: 2, out: -2}
	if r > leafMargin {
		t.in = math.Cos(r - leafMargin)
	}
	if r+leafMargin < math.Pi {
		t.out = math.Cos(r + leafMargin)
	}
	return t
}

type leafVerdict int

const (
	leafUndecided leafVerdict = iota
	leafInside
	leafOutside
)

func (t *leafCapTest) decide(id s2.CellID) leafVerdict {
	if !id.IsLeaf() {
		return leafUndecided
	}
	d := id.Point().Dot(t.center.Vector)
	switch {
	case d > t.in:
		return leafInside
	case d < t.out:
		return leafOutside
	}
	return leafUndecided
}

// gridKeyFilter is pointKeyFilter on a 2d index: the entry's grid cell
// must meet one of the region's bounding boxes.
func gridKeyFilter(g geo.Grid, gp query.GeoPredicate) func([]byte) (keep, inside bool) {
	if gp.Within == nil {
		return nil
	}
	boxes := []geo.Box{}
	if b, ok := gp.Within.FlatBound(); ok {
		boxes = append(boxes, b)
	} else if gp.Within.Cap != nil {
		boxes = capBoxes(*gp.Within.Cap)
	} else {
		return nil
	}
	return func(entry []byte) (bool, bool) {
		code, ok := index.DecodeCell(entry)
		if !ok {
			return true, false
		}
		cell := g.CellBox(code)
		for _, b := range boxes {
			if cell.Meets(b) {
				return true, false
			}
		}
		return false, false
	}
}

// geoFieldBounds is per-field bounds with the geo field's set to cells
// (nil: all) and the others full.
func geoFieldBounds(ix *storage.IndexInfo, cells []index.FieldInterval) [][]index.FieldInterval {
	out := make([][]index.FieldInterval, len(ix.Spec.Fields))
	for i, fl := range ix.Spec.Fields {
		out[i] = []index.FieldInterval{fullFor(fl)}
		if fl.Geo != "" && cells != nil {
			out[i] = cells
		}
	}
	return out
}

// geoRanges is the key ranges of a geo predicate in ix's key space; ok
// is false when the index kind cannot bound it (a planar region on a
// 2dsphere index, a GeoJSON region on a 2d one).
func geoRanges(ix *storage.IndexInfo, gf index.Field, gp query.GeoPredicate) ([]geo.CellRange, bool) {
	if gf.Geo == index.Geo2DSphere {
		switch {
		case gp.Intersects != nil:
			return geo.Ranges(gp.Intersects.Regions(), ix.Multikey), true
		case gp.Within.Spherical():
			return geo.Ranges(gp.Within.Regions(), ix.Multikey), true
		}
		return nil, false
	}
	if gp.Within == nil {
		return nil, false
	}
	g := ix.Spec.Grid()
	if b, ok := gp.Within.FlatBound(); ok {
		return g.CoverBox(b), true
	}
	if gp.Within.Cap != nil {
		var out []geo.CellRange
		for _, b := range capBoxes(*gp.Within.Cap) {
			out = append(out, g.CoverBox(b)...)
		}
		return out, true
	}
	return nil, false
}

// capBoxes is a spherical cap's bounding longitude/latitude boxes in
// degrees: two when it crosses the antimeridian, the full longitude
// range when it holds a pole.
func capBoxes(c s2.Cap) []geo.Box {
	r := c.RectBound()
	lat := geo.Point2{X: r.Lat.Lo * 180 / math.Pi, Y: r.Lat.Hi * 180 / math.Pi}
	if r.Lng.IsFull() {
		return []geo.Box{{Min: geo.Point2{X: -180, Y: lat.X}, Max: geo.Point2{X: 180, Y: lat.Y}}}
	}
	lo, hi := r.Lng.Lo*180/math.Pi, r.Lng.Hi*180/math.Pi
	if r.Lng.IsInverted() {
		return []geo.Box{
			{Min: geo.Point2{X: lo, Y: lat.X}, Max: geo.Point2{X: 180, Y: lat.Y}},
			{Min: geo.Point2{X: -180, Y: lat.X}, Max: geo.Point2{X: hi, Y: lat.Y}},
		}
	}
	return []geo.Box{{Min: geo.Point2{X: lo, Y: lat.X}, Max: geo.Point2{X: hi, Y: lat.Y}}}
}

// capOf is the cap of an angle around a point.
func capOf(p s2.Point, radians float64) s2.Cap {
	return s2.CapFromCenterAngle(p, s1.Angle(math.Min(radians, math.Pi)))
}

// nearStage is the explain of a near plan: GEO_NEAR_2DSPHERE or
// GEO_NEAR_2D over the index, as mongod names them.
func nearStage(p *Plan, filter bsoncore.Document) bsoncore.Document {
	name := "GEO_NEAR_2D"
	if p.near.sphere {
		name = "GEO_NEAR_2DSPHERE"
	}
	b := bsoncore.NewDocumentBuilder().AppendString("stage", name).
		AppendDocument("keyPattern", p.ix.Spec.Key).AppendString("indexName", p.ix.Spec.Name).
		AppendInt32("indexVersion", 2)
	if nonEmpty(filter) {
		b.AppendDocument("filter", filter)
	}
	return b.Build()
}
