package geo

import (
	"math"
	"strconv"

	"github.com/golang/geo/s2"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/value"
)

// GeoJSON parsing with mongod's validation: each failure is a BadValue
// with mongod's wording, which index key extraction wraps in "Can't
// extract geo keys" (16755) and the query operators return as is.

// The coordinate reference systems mongod accepts: the two names of
// longitude/latitude on WGS84, and its own strict-winding "big polygon".
const (
	crsCRS84         = "urn:ogc:def:crs:OGC:1.3:CRS84"
	crsEPSG4326      = "EPSG:4326"
	crsStrictWinding = "urn:x-mongodb:crs:strictwinding:EPSG:4326"
)

func badValue(format string, args ...any) error {
	return mongoerr.New(mongoerr.BadValue, format, args...)
}

// ParseValue reads one stored geometry: a legacy pair ([x, y] or
// {x: .., y: ..}, extra fields allowed) or a GeoJSON object.
func ParseValue(v bsoncore.Value) (*Shape, error) {
	switch v.Type {
	case bsoncore.TypeArray, bsoncore.TypeEmbeddedDocument:
	default:
		return nil, badValue("geo element must be an array or object: %s", value.Format(v))
	}
	if first, ok := firstValue(v.Data); ok && value.IsNumber(first) {
		return legacyShape(v, true)
	}
	if v.Type == bsoncore.TypeArray {
		return nil, badValue("Point must only contain numeric elements")
	}
	return ParseGeoJSON(v.Data)
}

// ParseStored reads every geometry a document's geo field holds: one,
// or an array of them. Null holds none, as mongod's 2dsphere version 2+.
func ParseStored(v bsoncore.Value) ([]*Shape, error) {
	switch v.Type {
	case 0, bsoncore.TypeNull, bsoncore.TypeUndefined:
		return nil, nil
	case bsoncore.TypeArray:
		if first, ok := firstValue(v.Data); ok && !value.IsNumber(first) {
			var out []*Shape
			for _, e := range value.ArrayValues(v.Data) {
				s, err := ParseValue(e)
				if err != nil {
					return nil, err
				}
				out = append(out, s)
			}
			return out, nil
		} else if !ok {
			return nil, nil
		}
	}
	s, err := ParseValue(v)
	if err != nil {
		return nil, err
	}
	return []*Shape{s}, nil
}

func firstValue(doc []byte) (bsoncore.Value, bool) {
	it := value.NewIter(doc)
	_, v, ok := it.Next()
	return v, ok
}

// ParseGeoJSON reads a GeoJSON geometry object.
func ParseGeoJSON(doc []byte) (*Shape, error) {
	t, ok := value.LookupField(doc, "type")
	if !ok || t.Type != bsoncore.TypeString {
		return nil, badValue("unknown GeoJSON type: %s", value.Format(value.DocValue(doc)))
	}
	if err := parseCRS(doc, t.StringValue() == "Polygon"); err != nil {
		return nil, err
	}
	s := &Shape{}
	var err error
	switch t.StringValue() {
	case "Point":
		err = s.addPoint(doc)
	case "LineString":
		err = s.addLine(coordinates(doc))
	case "Polygon":
		err = s.addPolygon(coordinates(doc))
	case "MultiPoint":
		err = s.addMultiPoint(coordinates(doc))
	case "MultiLineString":
		err = s.addMulti(coordinates(doc), "MultiLineString", s.addLine)
	case "MultiPolygon":
		err = s.addMulti(coordinates(doc), "MultiPolygon", s.addPolygon)
	case "GeometryCollection":
		err = s.addCollection(doc)
	default:
		return nil, badValue("unknown GeoJSON type: %s", value.Format(value.DocValue(doc)))
	}
	if err != nil {
		return nil, err
	}
	return s, nil
}

func coordinates(doc []byte) bsoncore.Value {
	v, _ := value.LookupField(doc, "coordinates")
	return v
}

// parseCRS checks an optional crs member. The strict-winding CRS (a
// polygon bigger than a hemisphere) is refused, not read as an ordinary
// polygon: its meaning differs.
func parseCRS(doc []byte, polygon bool) error {
	c, ok := value.LookupField(doc, "crs")
	if !ok {
		return nil
	}
	if c.Type != bsoncore.TypeEmbeddedDocument {
		return badValue("GeoJSON CRS must be an object")
	}
	if t, ok := value.LookupField(c.Data, "type"); !ok || t.Type != bsoncore.TypeString || t.StringValue() != "name" {
		return badValue(`GeoJSON CRS must have field "type": "name"`)
	}
	props, ok := value.LookupField(c.Data, "properties")
	if !ok || props.Type != bsoncore.TypeEmbeddedDocument {
		return badValue(`CRS must have field "properties" which is an object`)
	}
	name, ok := value.LookupField(props.Data, "name")
	if !ok || name.Type != bsoncore.TypeString {
		return badValue(`In CRS, "properties.name" must be a string`)
	}
	switch n := name.StringValue(); n {
	case crsCRS84, crsEPSG4326:
		return nil
	case crsStrictWinding:
		if !polygon {
			return badValue("Strict winding order is only supported by polygon")
		}
		return mongoerr.New(mongoerr.NotImplemented, "crs %s (big polygons) is not supported by DumboDB yet", n)
	default:
		return badValue("Unknown CRS name: %s", n)
	}
}

// flatPair reads the first two numbers of an array or document; extra
// elements are an error unless allowed (GeoJSON altitude, stored pairs).
func flatPair(v bsoncore.Value, allowExtra bool) (Point2, error) {
	if v.Type != bsoncore.TypeArray && v.Type != bsoncore.TypeEmbeddedDocument {
		return Point2{}, badValue("Point must be an array or object")
	}
	it := value.NewIter(v.Data)
	var xy [2]float64
	for i := range xy {
		_, e, ok := it.Next()
		if !ok || !value.IsNumber(e) {
			return Point2{}, badValue("Point must only contain numeric elements")
		}
		xy[i] = value.ToFloat(e)
	}
	if _, _, more := it.Next(); more && !allowExtra {
		return Point2{}, badValue("Point must only contain two numeric elements")
	}
	if math.IsNaN(xy[0]) || math.IsInf(xy[0], 0) || math.IsNaN(xy[1]) || math.IsInf(xy[1], 0) {
		return Point2{}, badValue("Point coordinates must be finite numbers")
	}
	return Point2{xy[0], xy[1]}, nil
}

// validLngLat reports whether a pair is a longitude and a latitude.
func validLngLat(p Point2) bool {
	return p.X >= -180 && p.X <= 180 && p.Y >= -90 && p.Y <= 90
}

// SpherePoint places a longitude/latitude pair on the sphere, refusing
// one out of bounds with mongod's message.
func SpherePoint(p Point2) (s2.Point, error) { return spherePoint(p) }

// spherePoint places a longitude/latitude pair on the sphere.
func spherePoint(p Point2) (s2.Point, error) {
	if !validLngLat(p) {
		return s2.Point{}, badValue("longitude/latitude is out of bounds, lng: %s lat: %s", fmtNum(p.X), fmtNum(p.Y))
	}
	return s2.PointFromLatLng(s2.LatLngFromDegrees(p.Y, p.X).Normalized()), nil
}

func fmtNum(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

func coordinate(v bsoncore.Value) (s2.Point, Point2, error) {
	if v.Type != bsoncore.TypeArray {
		return s2.Point{}, Point2{}, badValue("GeoJSON coordinates must be an array")
	}
	p, err := flatPair(v, true)
	if err != nil {
		return s2.Point{}, Point2{}, err
	}
	sp, err := spherePoint(p)
	return sp, p, err
}

func coordinateList(v bsoncore.Value) ([]s2.Point, error) {
	if v.Type != bsoncore.TypeArray {
		return nil, badValue("GeoJSON coordinates must be an array of coordinates")
	}
	var out []s2.Point
	for _, e := range value.ArrayValues(v.Data) {
		p, _, err := coordinate(e)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// dropRepeats removes consecutive equal vertices, which GeoJSON allows
// and S2 does not.
func dropRepeats(pts []s2.Point) []s2.Point {
	out := pts[:0]
	for i, p := range pts {
		if i == 0 || p != out[len(out)-1] {
			out = append(out, p)
		}
	}
	return out
}

func (s *Shape) addPoint(doc []byte) error {
	p, err := flatPair(coordinates(doc), true)
	if err != nil {
		return err
	}
	sp, err := spherePoint(p)
	if err != nil {
		return err
	}
	s.Points = append(s.Points, sp)
	s.Flat = &p
	return nil
}

func (s *Shape) addMultiPoint(v bsoncore.Value) error {
	pts, err := coordinateList(v)
	if err != nil {
		return err
	}
	if len(pts) == 0 {
		return badValue("MultiPoint coordinates must have at least 1 element")
	}
	s.Points = append(s.Points, pts...)
	return nil
}

func (s *Shape) addLine(v bsoncore.Value) error {
	pts, err := coordinateList(v)
	if err != nil {
		return err
	}
	pts = dropRepeats(pts)
	if len(pts) < 2 {
		return badValue("GeoJSON LineString must have at least 2 vertices: %s", value.Format(v))
	}
	line := s2.Polyline(pts)
	if err := line.Validate(); err != nil {
		return badValue("GeoJSON LineString is not valid: %v %s", err, value.Format(v))
	}
	s.Lines = append(s.Lines, &line)
	return nil
}

// addPolygon reads a polygon's rings: the first is the shell, the others
// holes inside it. A ring wider than a hemisphere is taken inside out,
// as mongod does (GeoJSON's winding order is not relied on).
func (s *Shape) addPolygon(v bsoncore.Value) error {
	if v.Type != bsoncore.TypeArray {
		return badValue("Polygon coordinates must be an array")
	}
	var loops []*s2.Loop
	for _, ring := range value.ArrayValues(v.Data) {
		loop, err := parseLoop(ring)
		if err != nil {
			return err
		}
		if len(loops) > 0 && !loops[0].Contains(loop) {
			return badValue("Secondary loops not contained by first exterior loop - secondary loops must be holes: %s first loop: %s",
				value.Format(ring), value.Format(value.ArrayValues(v.Data)[0]))
		}
		loops = append(loops, loop)
	}
	if len(loops) == 0 {
		return badValue("Polygon has no loops.")
	}
	if err := holesApart(loops[1:]); err != nil {
		return badValue("Polygon isn't valid: %v %s", err, value.Format(v))
	}
	poly := s2.PolygonFromLoops(loops)
	if err := poly.Validate(); err != nil {
		return badValue("Polygon isn't valid: %v %s", err, value.Format(v))
	}
	s.Polygons = append(s.Polygons, poly)
	return nil
}

// holesApart checks that no hole overlaps another: GeoJSON allows one
// level of nesting only.
func holesApart(holes []*s2.Loop) error {
	for i, a := range holes {
		for _, b := range holes[i+1:] {
			if a.Intersects(b) {
				return badValue("Polygon interior loops cannot be nested or overlap")
			}
		}
	}
	return nil
}

func parseLoop(ring bsoncore.Value) (*s2.Loop, error) {
	pts, err := coordinateList(ring)
	if err != nil {
		return nil, err
	}
	if len(pts) == 0 {
		return nil, badValue("Loop has no vertices: %s", value.Format(ring))
	}
	if pts[0] != pts[len(pts)-1] {
		return nil, badValue("Loop is not closed: %s", value.Format(ring))
	}
	pts = dropRepeats(pts)
	pts = pts[:len(pts)-1]
	if len(pts) < 3 {
		return nil, badValue("Loop must have at least 3 different vertices: %s", value.Format(ring))
	}
	loop := s2.LoopFromPoints(pts)
	if err := loop.Validate(); err != nil {
		return nil, badValue("Loop is not valid: %s %v", value.Format(ring), err)
	}
	if err := selfCrossing(pts); err != nil {
		return nil, badValue("Loop is not valid: %s %v", value.Format(ring), err)
	}
	loop.Normalize()
	return loop, nil
}

// maxCrossingCheck bounds the quadratic edge-crossing test of a ring;
// the library's own check needs a shape index it does not build yet.
const maxCrossingCheck = 4096

// selfCrossing reports two non-adjacent edges of a ring that cross.
func selfCrossing(pts []s2.Point) error {
	n := len(pts)
	if n > maxCrossingCheck {
		return nil
	}
	for i := 0; i < n; i++ {
		a, b := pts[i], pts[(i+1)%n]
		for j := i + 2; j < n; j++ {
			if i == 0 && j == n-1 {
				continue // adjacent through the closing edge
			}
			if s2.CrossingSign(a, b, pts[j], pts[(j+1)%n]) != s2.DoNotCross {
				return badValue("Edge %d crosses edge %d", i, j)
			}
		}
	}
	return nil
}

func (s *Shape) addMulti(v bsoncore.Value, kind string, add func(bsoncore.Value) error) error {
	if v.Type != bsoncore.TypeArray {
		return badValue("%s coordinates must be an array", kind)
	}
	elems := value.ArrayValues(v.Data)
	if len(elems) == 0 {
		return badValue("%s coordinates must have at least 1 element", kind)
	}
	for _, e := range elems {
		if err := add(e); err != nil {
			return err
		}
	}
	return nil
}

func (s *Shape) addCollection(doc []byte) error {
	g, ok := value.LookupField(doc, "geometries")
	if !ok || g.Type != bsoncore.TypeArray {
		return badValue("GeometryCollection geometries must be an array")
	}
	elems := value.ArrayValues(g.Data)
	if len(elems) == 0 {
		return badValue("GeometryCollection geometries must have at least 1 element")
	}
	for i, e := range elems {
		if e.Type != bsoncore.TypeEmbeddedDocument {
			return badValue(`Element %d of "geometries" is not an object`, i)
		}
		if t, _ := value.LookupField(e.Data, "type"); t.Type == bsoncore.TypeString && t.StringValue() == "GeometryCollection" {
			return badValue("GeometryCollections cannot be nested: %s", value.Format(e))
		}
		part, err := ParseGeoJSON(e.Data)
		if err != nil {
			return err
		}
		s.Points = append(s.Points, part.Points...)
		s.Lines = append(s.Lines, part.Lines...)
		s.Polygons = append(s.Polygons, part.Polygons...)
	}
	return nil
}
