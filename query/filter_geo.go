package query

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/geo"
	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/value"
)

// The geo field operators. Matching parses each value a path reaches as
// a geometry (geo); values that are not one never match, as on
// mongod, where only an index's key extraction rejects them.

// geoWithinLeaf is $geoWithin (and its old name $within). known, when
// set, says a plan already knows the document inside (GeoPredicate).
type geoWithinLeaf struct {
	w     *geo.Within
	known *bool
}

func (l geoWithinLeaf) matchValue(v bsoncore.Value, k value.VisitKind) bool {
	if *l.known {
		return true
	}
	s, ok := geoValue(v, k)
	return ok && l.w.Contains(s)
}

// geoIntersectsLeaf is $geoIntersects; known as for geoWithinLeaf.
type geoIntersectsLeaf struct {
	s     *geo.Shape
	known *bool
}

func (l geoIntersectsLeaf) matchValue(v bsoncore.Value, k value.VisitKind) bool {
	if *l.known {
		return true
	}
	s, ok := geoValue(v, k)
	return ok && geo.Intersects(l.s, s)
}

// nearLeaf is the distance bounds of a $near or $nearSphere; the order
// by distance is the plan's (plan: a geo index is required).
type nearLeaf struct {
	n    *geo.Near
	pred **NearPredicate // the filter's, whose Measured skips the leaf
}

func (l nearLeaf) matchValue(v bsoncore.Value, k value.VisitKind) bool {
	if p := *l.pred; p != nil && p.Measured {
		return true
	}
	s, ok := geoValue(v, k)
	if !ok {
		return false
	}
	d, ok := l.n.Distance(s)
	return ok && l.n.InRange(d)
}

func geoValue(v bsoncore.Value, k value.VisitKind) (*geo.Shape, bool) {
	if k == value.KindMissing {
		return nil, false
	}
	s, err := geo.ParseValue(v)
	return s, err == nil
}

func parseGeoWithin(_ *Filter, _ string, arg bsoncore.Value) (opNode, error) {
	w, err := geo.ParseWithin(arg)
	if err != nil {
		return nil, err
	}
	return leafNode{geoWithinLeaf{w: w, known: new(bool)}}, nil
}

func parseGeoIntersects(_ *Filter, _ string, arg bsoncore.Value) (opNode, error) {
	s, err := geo.ParseIntersects(arg)
	if err != nil {
		return nil, err
	}
	return leafNode{geoIntersectsLeaf{s: s, known: new(bool)}}, nil
}

// NearPredicate is a filter's $near or $nearSphere: the path and its
// center and bounds.
type NearPredicate struct {
	Path string
	Near *geo.Near
	Op   string // "$near" or "$nearSphere"
	// Measured is set by a plan that measures each document itself
	// (Distance and InRange) and so needs Match only for the rest of the
	// filter: the geometry is then parsed once.
	Measured bool
}

// Near returns the filter's $near or $nearSphere, if any.
func (f *Filter) Near() *NearPredicate { return f.near }

// parseNearOps reads $near or $nearSphere with the $maxDistance and
// $minDistance beside it, which belong to it (as $options to $regex).
func (f *Filter) parseNearOps(path string, ops []byte) (opNode, error) {
	var op string
	var arg bsoncore.Value
	for _, name := range []string{"$near", "$nearSphere"} {
		if v, ok := value.LookupField(ops, name); ok {
			if op != "" {
				return nil, tooManyNear()
			}
			op, arg = name, v
		}
	}
	maxD, hasMax := value.LookupField(ops, "$maxDistance")
	minD, hasMin := value.LookupField(ops, "$minDistance")
	if op == "" {
		if hasMax || hasMin {
			return nil, mongoerr.New(mongoerr.BadValue, "$maxDistance and $minDistance need a $near or $nearSphere")
		}
		return nil, nil
	}
	if f.near != nil {
		return nil, tooManyNear()
	}
	if f.opsDepth > 1 {
		return nil, nearNotTopLevel()
	}
	n, err := geo.ParseNear(op, arg, maxD, minD)
	if err != nil {
		return nil, err
	}
	f.near = &NearPredicate{Path: path, Near: n, Op: op}
	return leafNode{nearLeaf{n: n, pred: &f.near}}, nil
}

func tooManyNear() error {
	return mongoerr.New(mongoerr.BadValue, "Too many geoNear expressions")
}

func nearNotTopLevel() error {
	return mongoerr.New(mongoerr.BadValue, "geo $near must be top-level expr")
}

// GeoPredicate is a $geoWithin or $geoIntersects at the top level of a
// filter (or in a top-level $and), which a geo index can bound.
type GeoPredicate struct {
	Path       string
	Within     *geo.Within // $geoWithin
	Intersects *geo.Shape  // $geoIntersects
	// Known, while a plan sets it, makes the predicate hold without
	// parsing the document: the plan knows from the index entry (a leaf
	// cell inside the region) that it does.
	Known *bool
}

// GeoPredicates lists the filter's geo predicates a geo index can serve.
func (f *Filter) GeoPredicates() []GeoPredicate {
	var out []GeoPredicate
	eachConjunctLeaf(f.root, func(path string, l leaf) {
		switch l := l.(type) {
		case geoWithinLeaf:
			out = append(out, GeoPredicate{Path: path, Within: l.w, Known: l.known})
		case geoIntersectsLeaf:
			out = append(out, GeoPredicate{Path: path, Intersects: l.s, Known: l.known})
		}
	})
	return out
}

// Distance is the distance from the center to the nearest geometry a
// document holds at the predicate's path, in the query's units, and that
// geometry's value (for includeLocs); ok is false when it holds none.
func (p *NearPredicate) Distance(doc bsoncore.Document) (d float64, loc bsoncore.Value, ok bool) {
	value.WalkPath(doc, value.SplitPath(p.Path), func(v bsoncore.Value, k value.VisitKind) bool {
		s, isGeo := geoValue(v, k)
		if !isGeo {
			return false
		}
		if dist, has := p.Near.Distance(s); has && (!ok || dist < d) {
			d, loc, ok = dist, v, true
		}
		return false
	})
	return d, loc, ok
}
