package geo

import (
	"math"

	"github.com/golang/geo/s1"
	"github.com/golang/geo/s2"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/value"
)

// EarthRadiusMeters is the radius mongod converts radians to meters by.
const EarthRadiusMeters = 6378100.0

// Near is the center and distance bounds of a $near, $nearSphere or
// $geoNear. Distances are in the query's units: meters from a GeoJSON
// point, radians from a legacy pair on the sphere, the plane's units for
// a flat $near.
type Near struct {
	Center    Point2
	Point     s2.Point // the center on the sphere, when Spherical
	Spherical bool
	// Meters: the center was GeoJSON, so distances are in meters.
	Meters   bool
	Min, Max float64 // Max is +Inf when unbounded
}

// ParseNear reads a $near or $nearSphere: arg is its value, maxD and
// minD the sibling $maxDistance and $minDistance (zero Type: none),
// which a GeoJSON form carries inside arg instead.
func ParseNear(op string, arg, maxD, minD bsoncore.Value) (*Near, error) {
	n := &Near{Max: math.Inf(1)}
	if arg.Type == bsoncore.TypeEmbeddedDocument {
		if g, ok := value.LookupField(arg.Data, "$geometry"); ok {
			if err := onlyNearFields(arg.Data); err != nil {
				return nil, err
			}
			if err := n.setGeoJSON(g); err != nil {
				return nil, err
			}
			maxD, _ = value.LookupField(arg.Data, "$maxDistance")
			minD, _ = value.LookupField(arg.Data, "$minDistance")
			return n, n.setBounds(maxD, minD)
		}
	}
	s, _, err := ParsePoint(arg)
	if err != nil {
		return nil, err
	}
	n.Center = *s.Flat
	if op == "$nearSphere" {
		if n.Point, err = spherePoint(n.Center); err != nil {
			return nil, err
		}
		n.Spherical = true
	}
	return n, n.setBounds(maxD, minD)
}

// onlyNearFields refuses a GeoJSON near argument with a field other than
// its point and bounds, rather than ignore it.
func onlyNearFields(doc []byte) error {
	return value.EachField(doc, func(k string, _ bsoncore.Value) error {
		switch k {
		case "$geometry", "$maxDistance", "$minDistance":
			return nil
		}
		return badValue("invalid argument in geo near query: %s", k)
	})
}

// ParseNearPoint reads $geoNear's near: a GeoJSON point (meters, on the
// sphere) or a legacy pair (radians on the sphere when spherical, else
// the plane's units).
func ParseNearPoint(v bsoncore.Value, spherical bool) (*Near, error) {
	n := &Near{Max: math.Inf(1)}
	if v.Type == bsoncore.TypeEmbeddedDocument {
		if t, ok := value.LookupField(v.Data, "type"); ok && t.Type == bsoncore.TypeString {
			return n, n.setGeoJSON(v)
		}
	}
	s, _, err := ParsePoint(v)
	if err != nil {
		return nil, err
	}
	n.Center = *s.Flat
	if spherical {
		if n.Point, err = spherePoint(n.Center); err != nil {
			return nil, err
		}
		n.Spherical = true
	}
	return n, nil
}

func (n *Near) setGeoJSON(g bsoncore.Value) error {
	if g.Type != bsoncore.TypeEmbeddedDocument {
		return badValue("invalid point in geo near query $geometry argument: %s", value.Format(g))
	}
	s, err := ParseGeoJSON(g.Data)
	if err != nil {
		return err
	}
	if s.Flat == nil {
		return badValue("invalid point in geo near query $geometry argument: %s", value.Format(g))
	}
	n.Center, n.Point, n.Spherical, n.Meters = *s.Flat, s.Points[0], true, true
	return nil
}

func (n *Near) setBounds(maxD, minD bsoncore.Value) error {
	var err error
	if maxD.Type != 0 {
		if n.Max, err = distanceArg("$maxDistance", maxD); err != nil {
			return err
		}
	}
	if minD.Type != 0 {
		if n.Min, err = distanceArg("$minDistance", minD); err != nil {
			return err
		}
	}
	return nil
}

func distanceArg(name string, v bsoncore.Value) (float64, error) {
	if !value.IsNumber(v) {
		return 0, badValue("%s must be a number", name)
	}
	d := value.ToFloat(v)
	if !(d >= 0) {
		return 0, badValue("%s must be non-negative", name)
	}
	return d, nil
}

// SetBounds sets the bounds from numbers ($geoNear's minDistance and
// maxDistance, already checked).
func (n *Near) SetBounds(minD, maxD float64) { n.Min, n.Max = minD, maxD }

// Distance is the distance from the center to the nearest point of s,
// in the query's units; ok is false when s has no such distance (a flat
// query and a shape that is not a point, a spherical one and a pair out
// of bounds).
func (n *Near) Distance(s *Shape) (float64, bool) {
	if !n.Spherical {
		if s.Flat == nil {
			return 0, false
		}
		return planarDistance(n.Center, *s.Flat), true
	}
	if s.NoSphere {
		return 0, false
	}
	a := n.angleTo(s)
	if n.Meters {
		return a.Radians() * EarthRadiusMeters, true
	}
	return a.Radians(), true
}

// InRange reports whether a distance is within the bounds.
func (n *Near) InRange(d float64) bool { return d >= n.Min && d <= n.Max }

func (n *Near) angleTo(s *Shape) s1.Angle {
	best := s1.InfAngle()
	for _, p := range s.Points {
		best = min(best, n.Point.Distance(p))
	}
	for _, l := range s.Lines {
		best = min(best, lineDistance(n.Point, *l))
	}
	for _, poly := range s.Polygons {
		if poly.ContainsPoint(n.Point) {
			return 0
		}
		for e := 0; e < poly.NumEdges(); e++ {
			edge := poly.Edge(e)
			best = min(best, s2.DistanceFromSegment(n.Point, edge.V0, edge.V1))
		}
	}
	return best
}

func lineDistance(x s2.Point, pts []s2.Point) s1.Angle {
	best := s1.InfAngle()
	for i := 0; i+1 < len(pts); i++ {
		best = min(best, s2.DistanceFromSegment(x, pts[i], pts[i+1]))
	}
	return best
}

// Radians converts a distance in the query's units to radians.
func (n *Near) Radians(d float64) float64 {
	if n.Meters {
		return d / EarthRadiusMeters
	}
	return d
}
