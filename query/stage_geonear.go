package query

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/geo"
	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/value"
)

// $geoNear: the first stage of a pipeline, read by the server through
// the planner as a find with {key: {$near...}} and the stage's query
// (GeoNearFilter), which yields the documents nearest first; the stage
// itself adds distanceField and includeLocs to each.

// GeoNear is a compiled $geoNear specification.
type GeoNear struct {
	Key           string // "" until the server names the index's field
	DistanceField string
	IncludeLocs   string
	Multiplier    float64
	Spherical     bool
	near          bsoncore.Value
	query         bsoncore.Document
	minD, maxD    bsoncore.Value
}

// ParseGeoNear reads a $geoNear specification.
func ParseGeoNear(spec bsoncore.Value) (*GeoNear, error) {
	if spec.Type != bsoncore.TypeEmbeddedDocument {
		return nil, mongoerr.New(mongoerr.Location16605, "$geoNear requires a 'near' option as an Array")
	}
	g := &GeoNear{Multiplier: 1}
	err := value.EachField(spec.Data, func(k string, v bsoncore.Value) error {
		switch k {
		case "near":
			g.near = v
		case "distanceField":
			if v.Type != bsoncore.TypeString {
				return mongoerr.New(mongoerr.Location16606, "$geoNear requires a 'distanceField' option as a String")
			}
			g.DistanceField = v.StringValue()
			return value.CheckNoNul(g.DistanceField)
		case "includeLocs":
			if v.Type != bsoncore.TypeString {
				return mongoerr.New(mongoerr.Location16607, "$geoNear requires that 'includeLocs' option is a String")
			}
			g.IncludeLocs = v.StringValue()
			return value.CheckNoNul(g.IncludeLocs)
		case "key":
			if v.Type != bsoncore.TypeString || v.StringValue() == "" {
				return mongoerr.New(mongoerr.TypeMismatch, "$geoNear parameter 'key' must be of type string but found type: %s", value.TypeName(v.Type))
			}
			g.Key = v.StringValue()
		case "spherical":
			g.Spherical = value.Truthy(v)
		case "query":
			if v.Type != bsoncore.TypeEmbeddedDocument {
				return mongoerr.New(mongoerr.TypeMismatch, "query must be an object")
			}
			g.query = v.Data
		case "maxDistance", "minDistance":
			if !value.IsNumber(v) {
				return mongoerr.New(mongoerr.TypeMismatch, "%s must be a number", k)
			}
			if !(value.ToFloat(v) >= 0) {
				return mongoerr.New(mongoerr.BadValue, "%s must be nonnegative", k)
			}
			if k == "maxDistance" {
				g.maxD = v
			} else {
				g.minD = v
			}
		case "distanceMultiplier":
			if !value.IsNumber(v) || !(value.ToFloat(v) >= 0) {
				return mongoerr.New(mongoerr.BadValue, "distanceMultiplier must be a non-negative number")
			}
			g.Multiplier = value.ToFloat(v)
		case "collation":
			return mongoerr.New(mongoerr.Location40227, "$geoNear does not accept the 'collation' parameter. Instead, specify a collation for the entire aggregation command.")
		case "limit", "num":
			return mongoerr.New(mongoerr.BadValue, "$geoNear no longer supports the '%s' parameter. Use a $limit stage instead.", k)
		default:
			return mongoerr.New(mongoerr.BadValue, "Unknown argument to $geoNear: %s", k)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if g.near.Type != bsoncore.TypeArray && g.near.Type != bsoncore.TypeEmbeddedDocument {
		return nil, mongoerr.New(mongoerr.Location16605, "$geoNear requires a 'near' option as an Array")
	}
	if g.DistanceField == "" {
		return nil, mongoerr.New(mongoerr.Location16606, "$geoNear requires a 'distanceField' option as a String")
	}
	return g, nil
}

// Filter is the find a $geoNear reads: its query and a near predicate
// on Key, with the stage's bounds.
func (g *GeoNear) Filter(env *Env) (*Filter, error) {
	f, err := CompileFilterEnv(value.OrEmpty(g.query), env)
	if err != nil {
		return nil, err
	}
	if f.near != nil {
		return nil, mongoerr.New(mongoerr.BadValue, "$geoNear query cannot contain $near or $nearSphere")
	}
	n, err := geo.ParseNearPoint(g.near, g.Spherical)
	if err != nil {
		return nil, err
	}
	if g.maxD.Type != 0 {
		n.Max = value.ToFloat(g.maxD)
	}
	if g.minD.Type != 0 {
		n.Min = value.ToFloat(g.minD)
	}
	op := "$near"
	if n.Spherical {
		op = "$nearSphere"
	}
	f.near = &NearPredicate{Path: g.Key, Near: n, Op: op}
	f.root = andExpr{f.root, &pathExpr{parts: value.SplitPath(g.Key), node: leafNode{nearLeaf{n: n, pred: &f.near}}}}
	if env != nil {
		env.geoNear = f.near
		env.geoNearMultiplier = g.Multiplier
	}
	return f, nil
}

func compileGeoNearStage(spec bsoncore.Value, pc *pipeCtx) (stage, error) {
	switch {
	case !pc.first:
		return nil, mongoerr.New(mongoerr.Location40603, "$geoNear was not the first stage in the pipeline.")
	case pc.within != "":
		return nil, mongoerr.New(mongoerr.NotImplemented, "$geoNear in a %s pipeline is not supported by DumboDB", pc.within)
	}
	g, err := ParseGeoNear(spec)
	if err != nil {
		return nil, err
	}
	if g.Key == "" {
		return nil, mongoerr.New(mongoerr.NoQueryExecutionPlans, "unable to find index for $geoNear query")
	}
	f, err := g.Filter(pc.env)
	if err != nil {
		return nil, err
	}
	return func(in Stream) Stream {
		return mapStream(in, func(d bsoncore.Document) (bsoncore.Document, error) {
			// The server's read matched already; matching again keeps
			// the stage right on any other input.
			if !f.Match(d) {
				return nil, f.Err()
			}
			dist, loc, ok := f.near.Distance(d)
			if !ok {
				return nil, nil
			}
			d = setField(d, g.DistanceField, value.Double(dist*g.Multiplier))
			if g.IncludeLocs != "" {
				d = setField(d, g.IncludeLocs, loc)
			}
			return d, nil
		})
	}, nil
}
