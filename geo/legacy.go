package geo

import (
	"github.com/golang/geo/s2"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/value"
)

// legacyShape reads a legacy coordinate pair, [x, y] or {x: .., y: ..}
// (the first two fields, whatever their names). A pair within
// longitude/latitude bounds is also a point of the sphere.
func legacyShape(v bsoncore.Value, allowExtra bool) (*Shape, error) {
	p, err := flatPair(v, allowExtra)
	if err != nil {
		return nil, err
	}
	s := &Shape{Flat: &p}
	if sp, err := spherePoint(p); err == nil {
		s.Points = []s2.Point{sp}
	} else {
		s.NoSphere = true
	}
	return s, nil
}

// ParsePoint reads a query's point: a legacy pair (no extra elements) or
// a GeoJSON Point; geoJSON reports which.
func ParsePoint(v bsoncore.Value) (s *Shape, geoJSON bool, err error) {
	if v.Type != bsoncore.TypeArray && v.Type != bsoncore.TypeEmbeddedDocument {
		return nil, false, badValue("Point must be an array or object")
	}
	if first, ok := firstValue(v.Data); v.Type == bsoncore.TypeArray || (ok && value.IsNumber(first)) {
		s, err := legacyShape(v, false)
		return s, false, err
	}
	s, err = ParseGeoJSON(v.Data)
	if err != nil {
		return nil, true, err
	}
	if s.Flat == nil {
		return nil, true, badValue("invalid point in geo near query $geometry argument: %s", fmtDoc(v))
	}
	return s, true, nil
}
