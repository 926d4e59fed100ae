package geo

import (
	"github.com/golang/geo/s1"
	"github.com/golang/geo/s2"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/value"
)

// Within is the region of a $geoWithin: one spherical region ($geometry
// Polygon or MultiPolygon, $centerSphere) or one planar one ($box,
// $polygon, $center).
type Within struct {
	Polygons []*s2.Polygon
	Cap      *s2.Cap
	Box      *Box
	Poly     FlatPolygon
	Circle   *Circle
}

// Spherical reports whether the region is on the sphere (a 2dsphere
// index can bound it); the planar ones need a 2d index.
func (w *Within) Spherical() bool { return w.Polygons != nil || w.Cap != nil }

// ParseWithin reads a $geoWithin argument.
func ParseWithin(arg bsoncore.Value) (*Within, error) {
	name, v, err := specifier(arg)
	if err != nil {
		return nil, err
	}
	w := &Within{}
	switch name {
	case "$geometry":
		s, err := parseGeometryArg(v)
		if err != nil {
			return nil, err
		}
		if len(s.Polygons) == 0 || len(s.Points) > 0 || len(s.Lines) > 0 || isCollection(v) {
			return nil, badValue("$geoWithin not supported with provided geometry: %s", value.Format(arg))
		}
		w.Polygons = s.Polygons
	case "$box":
		b, err := parseBox(v)
		if err != nil {
			return nil, err
		}
		w.Box = &b
	case "$polygon":
		p, err := parseFlatPolygon(v)
		if err != nil {
			return nil, err
		}
		w.Poly = p
	case "$center":
		c, err := parseCircle(v)
		if err != nil {
			return nil, err
		}
		w.Circle = &c
	case "$centerSphere":
		c, err := parseCircle(v)
		if err != nil {
			return nil, err
		}
		center, err := spherePoint(c.Center)
		if err != nil {
			return nil, err
		}
		cp := s2.CapFromCenterAngle(center, s1.Angle(c.Radius))
		w.Cap = &cp
	default:
		return nil, badValue("unknown geo specifier: %s: %s", name, value.Format(v))
	}
	return w, nil
}

func isCollection(v bsoncore.Value) bool {
	t, _ := value.LookupField(v.Data, "type")
	return t.Type == bsoncore.TypeString && t.StringValue() == "GeometryCollection"
}

// specifier reads the one {$spec: value} of a geo operator's argument.
func specifier(arg bsoncore.Value) (string, bsoncore.Value, error) {
	if arg.Type != bsoncore.TypeEmbeddedDocument {
		return "", bsoncore.Value{}, badValue("geo query doesn't have any geometry")
	}
	it := value.NewIter(arg.Data)
	k, v, ok := it.Next()
	if !ok {
		return "", bsoncore.Value{}, badValue("geo query doesn't have any geometry")
	}
	if _, _, more := it.Next(); more {
		return "", bsoncore.Value{}, badValue("can't parse extra field: %s", value.Format(arg))
	}
	return string(k), v, nil
}

func parseGeometryArg(v bsoncore.Value) (*Shape, error) {
	if v.Type != bsoncore.TypeEmbeddedDocument {
		return nil, badValue("geometry must be an object")
	}
	return ParseGeoJSON(v.Data)
}

// ParseIntersects reads a $geoIntersects argument: {$geometry: GeoJSON}.
func ParseIntersects(arg bsoncore.Value) (*Shape, error) {
	name, v, err := specifier(arg)
	if err != nil {
		return nil, err
	}
	if name != "$geometry" {
		return nil, badValue("$geoIntersects not supported with provided geometry: %s", value.Format(arg))
	}
	return parseGeometryArg(v)
}

// Contains reports whether the region holds the whole shape. Planar
// regions hold points only, as on mongod.
func (w *Within) Contains(s *Shape) bool {
	switch {
	case w.Box != nil:
		return s.Flat != nil && w.Box.contains(*s.Flat)
	case w.Poly != nil:
		return s.Flat != nil && w.Poly.contains(*s.Flat)
	case w.Circle != nil:
		return s.Flat != nil && w.Circle.contains(*s.Flat)
	}
	if s.NoSphere {
		return false
	}
	if w.Cap != nil {
		return capContains(*w.Cap, s)
	}
	return polygonsContain(w.Polygons, s)
}

// capContains checks every vertex: a cap no wider than a hemisphere is
// convex, so edges between vertices inside stay inside.
func capContains(c s2.Cap, s *Shape) bool {
	for _, p := range s.Points {
		if !c.ContainsPoint(p) {
			return false
		}
	}
	for _, l := range s.Lines {
		for _, p := range *l {
			if !c.ContainsPoint(p) {
				return false
			}
		}
	}
	for _, poly := range s.Polygons {
		for _, loop := range poly.Loops() {
			for _, p := range loop.Vertices() {
				if !c.ContainsPoint(p) {
					return false
				}
			}
		}
	}
	return true
}

// polygonsContain checks each part against the region's polygons: a
// part is inside when one polygon holds it whole.
func polygonsContain(region []*s2.Polygon, s *Shape) bool {
	for _, p := range s.Points {
		if !anyPolygon(region, func(r *s2.Polygon) bool { return r.ContainsPoint(p) }) {
			return false
		}
	}
	for _, l := range s.Lines {
		if !anyPolygon(region, func(r *s2.Polygon) bool { return polygonContainsLine(r, l) }) {
			return false
		}
	}
	for _, poly := range s.Polygons {
		if !anyPolygon(region, func(r *s2.Polygon) bool { return r.Contains(poly) }) {
			return false
		}
	}
	return true
}

func anyPolygon(region []*s2.Polygon, fn func(*s2.Polygon) bool) bool {
	for _, r := range region {
		if fn(r) {
			return true
		}
	}
	return false
}

// polygonContainsLine: every vertex inside and no edge crossing the
// polygon's boundary.
func polygonContainsLine(poly *s2.Polygon, l *s2.Polyline) bool {
	for _, p := range *l {
		if !poly.ContainsPoint(p) {
			return false
		}
	}
	return !lineCrossesPolygon(l, poly)
}

func lineCrossesPolygon(l *s2.Polyline, poly *s2.Polygon) bool {
	pts := *l
	for i := 0; i+1 < len(pts); i++ {
		for e := 0; e < poly.NumEdges(); e++ {
			edge := poly.Edge(e)
			if s2.CrossingSign(pts[i], pts[i+1], edge.V0, edge.V1) == s2.Cross {
				return true
			}
		}
	}
	return false
}

// Intersects reports whether two shapes share a point of the sphere.
func Intersects(a, b *Shape) bool {
	if a.NoSphere || b.NoSphere {
		return false
	}
	for _, p := range a.Points {
		if pointIntersects(p, b) {
			return true
		}
	}
	for _, l := range a.Lines {
		if lineIntersects(l, b) {
			return true
		}
	}
	for _, poly := range a.Polygons {
		if polygonIntersects(poly, b) {
			return true
		}
	}
	return false
}

// pointIntersects compares a point with a shape at the precision of a
// leaf cell (about a centimetre), as mongod does for points on lines.
func pointIntersects(p s2.Point, s *Shape) bool {
	cell := s2.CellFromPoint(p)
	for _, q := range s.Points {
		if s2.CellFromPoint(q).ID() == cell.ID() {
			return true
		}
	}
	for _, l := range s.Lines {
		if l.IntersectsCell(cell) {
			return true
		}
	}
	for _, poly := range s.Polygons {
		if poly.ContainsPoint(p) {
			return true
		}
	}
	return false
}

func lineIntersects(l *s2.Polyline, s *Shape) bool {
	for _, p := range s.Points {
		if l.IntersectsCell(s2.CellFromPoint(p)) {
			return true
		}
	}
	for _, o := range s.Lines {
		if l.Intersects(o) {
			return true
		}
	}
	for _, poly := range s.Polygons {
		if polygonIntersectsLine(poly, l) {
			return true
		}
	}
	return false
}

func polygonIntersectsLine(poly *s2.Polygon, l *s2.Polyline) bool {
	for _, p := range *l {
		if poly.ContainsPoint(p) {
			return true
		}
	}
	pts := *l
	for i := 0; i+1 < len(pts); i++ {
		for e := 0; e < poly.NumEdges(); e++ {
			edge := poly.Edge(e)
			if s2.EdgeOrVertexCrossing(pts[i], pts[i+1], edge.V0, edge.V1) {
				return true
			}
		}
	}
	return false
}

func polygonIntersects(poly *s2.Polygon, s *Shape) bool {
	for _, p := range s.Points {
		if poly.ContainsPoint(p) {
			return true
		}
	}
	for _, l := range s.Lines {
		if polygonIntersectsLine(poly, l) {
			return true
		}
	}
	for _, o := range s.Polygons {
		if poly.Intersects(o) {
			return true
		}
	}
	return false
}
