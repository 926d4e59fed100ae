package query

import (
	"math/rand/v2"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/value"
)

// Values that are not read from the document: $meta reads per-document
// metadata (the text score of a $text query; the other kinds evaluate to
// missing), $rand draws a number.

var metaKinds = map[string]bool{
	"textScore": true, "searchScore": true, "searchHighlights": true, "searchScoreDetails": true,
	"indexKey": true, "recordId": true, "sortKey": true, "randVal": true,
	"geoNearDistance": true, "geoNearPoint": true, "vectorSearchScore": true, "score": true,
}

type metaExpr struct{ kind string }

func compileMeta(_ string, arg bsoncore.Value, _ *compileScope) (Expr, error) {
	if arg.Type != bsoncore.TypeString || !metaKinds[arg.StringValue()] {
		return nil, mongoerr.New(mongoerr.Location17308, "Unsupported argument to $meta: %s", value.Format(arg))
	}
	return metaExpr{arg.StringValue()}, nil
}

func (m metaExpr) eval(c *evalCtx) (bsoncore.Value, error) {
	if m.kind == "textScore" {
		q := (*Filter)(nil)
		if c != nil {
			q = c.query
			if (q == nil || !q.HasText()) && c.env != nil {
				q = c.env.textQuery
			}
		}
		if q != nil && q.HasText() {
			score, _ := q.TextScore(c.root.Data)
			return bsoncore.Value{Type: bsoncore.TypeDouble, Data: bsoncore.AppendDouble(nil, score)}, nil
		}
		return bsoncore.Value{}, mongoerr.New(mongoerr.Location40218, "query requires text score metadata, but it is not available")
	}
	if m.kind == "geoNearDistance" || m.kind == "geoNearPoint" {
		return geoNearMeta(c, m.kind == "geoNearPoint")
	}
	return bsoncore.Value{}, nil
}

// geoNearMeta measures the document against the $geoNear of the
// pipeline, or the $near of the find: the distance (times
// distanceMultiplier) or the location it was measured to. The document
// is measured as it is at this stage, so a stage that dropped the
// location leaves the metadata missing.
func geoNearMeta(c *evalCtx, point bool) (bsoncore.Value, error) {
	if c == nil {
		return bsoncore.Value{}, nil
	}
	np, mult := (*NearPredicate)(nil), 1.0
	if c.query != nil && c.query.near != nil {
		np = c.query.near
	} else if c.env != nil && c.env.geoNear != nil {
		np, mult = c.env.geoNear, c.env.geoNearMultiplier
	}
	if np == nil || c.root.Type != bsoncore.TypeEmbeddedDocument {
		return bsoncore.Value{}, nil
	}
	d, loc, ok := np.Distance(c.root.Data)
	switch {
	case !ok:
		return bsoncore.Value{}, nil
	case point:
		return loc, nil
	}
	return value.Double(d * mult), nil
}

// isMetaExpr reports a $meta projection, which exclusion projections allow.
func isMetaExpr(x Expr) bool {
	_, ok := x.(metaExpr)
	return ok
}

// randExpr is $rand: a double in [0, 1).
type randExpr struct{}

func compileRand(_ string, arg bsoncore.Value, _ *compileScope) (Expr, error) {
	if arg.Type != bsoncore.TypeEmbeddedDocument || value.ArrayLen(arg.Data) != 0 {
		return nil, mongoerr.New(mongoerr.Location3040501, "$rand does not currently accept arguments")
	}
	return randExpr{}, nil
}

func (randExpr) eval(*evalCtx) (bsoncore.Value, error) { return value.Double(rand.Float64()), nil }
