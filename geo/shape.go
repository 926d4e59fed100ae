package geo

import (
	"github.com/golang/geo/s2"
)

// Shape is one stored or queried geometry, split into its parts: a
// GeoJSON MultiPoint is several points, a GeometryCollection any mix.
type Shape struct {
	Points   []s2.Point
	Lines    []*s2.Polyline
	Polygons []*s2.Polygon
	// Flat is the point's planar coordinates when the shape is a single
	// point (a legacy pair or a GeoJSON Point): the flat operators and 2d
	// indexes see only those.
	Flat *Point2
	// NoSphere marks a legacy pair outside longitude/latitude bounds: it
	// has no place on the sphere, so spherical operators never match it.
	NoSphere bool
}

// Point2 is a point of the plane (legacy x, y; GeoJSON lng, lat).
type Point2 struct{ X, Y float64 }

// IsPoint reports whether the shape is a single point.
func (s *Shape) IsPoint() bool {
	return s.Flat != nil
}

// Region is what the spherical relations and coverings need of a part.
func (s *Shape) regions() []s2.Region {
	var out []s2.Region
	for _, p := range s.Points {
		out = append(out, s2.CellFromPoint(p))
	}
	for _, l := range s.Lines {
		out = append(out, l)
	}
	for _, p := range s.Polygons {
		out = append(out, p)
	}
	return out
}
