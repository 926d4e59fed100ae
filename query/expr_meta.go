package query

import (
	"math/rand/v2"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"dumbodb/query/mongoerr"
	"dumbodb/query/value"
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
		return nil, mongoerr.New(mongoerr.Code(17308), "Unsupported argument to $meta: %s", value.Format(arg))
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
	return bsoncore.Value{}, nil
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
		return nil, mongoerr.New(mongoerr.Code(3040501), "$rand does not currently accept arguments")
	}
	return randExpr{}, nil
}

func (randExpr) eval(*evalCtx) (bsoncore.Value, error) { return value.Double(rand.Float64()), nil }
