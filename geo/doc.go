// Package geo owns DumboDB's geometry: shapes (shape.go), reading GeoJSON
// and legacy coordinate pairs out of BSON with mongod's validation errors
// (geo_json.go, legacy.go), the relations the query operators test
// (relate.go: $geoWithin, $geoIntersects; flat.go: $box, $polygon,
// $center), distances for $near and $geoNear (near.go), and the cells
// that 2dsphere and 2d index keys and index bounds are made of
// (cells.go, cells_flat.go).
//
// Spherical geometry is github.com/golang/geo's S2 (loops, polygons,
// polylines, caps, cell coverings); only the planar shapes of the legacy
// operators are computed here. It is a leaf below both query (the
// matcher) and index (the keys), so that both agree on what a geometry is.
package geo
