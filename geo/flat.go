package geo

import (
	"math"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/value"
)

// The legacy operators' planar shapes: $box, $polygon and $center test
// a point's x and y as numbers of the plane, as mongod's 2d geometry
// does, whatever the units.

// Box is a $box: two corners, any order.
type Box struct{ Min, Max Point2 }

func (b Box) contains(p Point2) bool {
	return p.X >= b.Min.X && p.X <= b.Max.X && p.Y >= b.Min.Y && p.Y <= b.Max.Y
}

// Circle is a $center: a center and a radius in the plane's units.
type Circle struct {
	Center Point2
	Radius float64
}

func (c Circle) contains(p Point2) bool { return planarDistance(c.Center, p) <= c.Radius }

func planarDistance(a, b Point2) float64 { return math.Hypot(a.X-b.X, a.Y-b.Y) }

// FlatPolygon is a $polygon: its vertices, closed implicitly.
type FlatPolygon []Point2

// contains is the even-odd rule; a point on an edge is inside, as on
// mongod.
func (poly FlatPolygon) contains(p Point2) bool {
	in := false
	n := len(poly)
	for i, j := 0, n-1; i < n; j, i = i, i+1 {
		a, b := poly[i], poly[j]
		if onSegment(p, a, b) {
			return true
		}
		if (a.Y > p.Y) != (b.Y > p.Y) && p.X < (b.X-a.X)*(p.Y-a.Y)/(b.Y-a.Y)+a.X {
			in = !in
		}
	}
	return in
}

func onSegment(p, a, b Point2) bool {
	cross := (b.X-a.X)*(p.Y-a.Y) - (b.Y-a.Y)*(p.X-a.X)
	if math.Abs(cross) > 1e-12*math.Max(1, math.Abs(b.X-a.X)+math.Abs(b.Y-a.Y)) {
		return false
	}
	return p.X >= math.Min(a.X, b.X) && p.X <= math.Max(a.X, b.X) && p.Y >= math.Min(a.Y, b.Y) && p.Y <= math.Max(a.Y, b.Y)
}

func (poly FlatPolygon) bound() Box {
	b := Box{Min: poly[0], Max: poly[0]}
	for _, p := range poly[1:] {
		b.Min.X, b.Min.Y = math.Min(b.Min.X, p.X), math.Min(b.Min.Y, p.Y)
		b.Max.X, b.Max.Y = math.Max(b.Max.X, p.X), math.Max(b.Max.Y, p.Y)
	}
	return b
}

func parseBox(arg bsoncore.Value) (Box, error) {
	if arg.Type != bsoncore.TypeArray && arg.Type != bsoncore.TypeEmbeddedDocument {
		return Box{}, badValue("unknown geo specifier: $box: %s", value.Format(arg))
	}
	elems := value.ArrayValues(arg.Data)
	if arg.Type == bsoncore.TypeEmbeddedDocument {
		elems = docValues(arg.Data)
	}
	if len(elems) < 2 {
		return Box{}, badValue("Point must be an array or object")
	}
	a, err := flatPair(elems[0], false)
	if err != nil {
		return Box{}, err
	}
	b, err := flatPair(elems[1], false)
	if err != nil {
		return Box{}, err
	}
	return Box{Min: Point2{math.Min(a.X, b.X), math.Min(a.Y, b.Y)}, Max: Point2{math.Max(a.X, b.X), math.Max(a.Y, b.Y)}}, nil
}

func parseFlatPolygon(arg bsoncore.Value) (FlatPolygon, error) {
	if arg.Type != bsoncore.TypeArray && arg.Type != bsoncore.TypeEmbeddedDocument {
		return nil, badValue("unknown geo specifier: $polygon: %s", value.Format(arg))
	}
	elems := value.ArrayValues(arg.Data)
	if arg.Type == bsoncore.TypeEmbeddedDocument {
		elems = docValues(arg.Data)
	}
	var out FlatPolygon
	for _, e := range elems {
		p, err := flatPair(e, false)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	if len(out) < 3 {
		return nil, badValue("Polygon must have at least 3 points")
	}
	return out, nil
}

// parseCircle reads [center, radius] for $center and $centerSphere.
func parseCircle(arg bsoncore.Value) (Circle, error) {
	if arg.Type != bsoncore.TypeArray && arg.Type != bsoncore.TypeEmbeddedDocument {
		return Circle{}, badValue("Point must be an array or object")
	}
	elems := value.ArrayValues(arg.Data)
	if arg.Type == bsoncore.TypeEmbeddedDocument {
		elems = docValues(arg.Data)
	}
	if len(elems) == 0 {
		return Circle{}, badValue("Point must be an array or object")
	}
	c, err := flatPair(elems[0], false)
	if err != nil {
		return Circle{}, err
	}
	if len(elems) < 2 || !value.IsNumber(elems[1]) || !(value.ToFloat(elems[1]) >= 0) {
		return Circle{}, badValue("radius must be a non-negative number")
	}
	if len(elems) > 2 {
		return Circle{}, badValue("Only 2 fields allowed for circular region")
	}
	return Circle{Center: c, Radius: value.ToFloat(elems[1])}, nil
}

func docValues(doc []byte) []bsoncore.Value {
	var out []bsoncore.Value
	it := value.NewIter(doc)
	for {
		_, v, ok := it.Next()
		if !ok {
			return out
		}
		out = append(out, v)
	}
}

func fmtDoc(v bsoncore.Value) string { return value.Format(v) }
