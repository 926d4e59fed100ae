package plan

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/index"
	"github.com/dumbodb/dumbodb/query"
	"github.com/dumbodb/dumbodb/storage"
)

// wildcardPlan bounds a wildcard index by the predicates on one path: the
// path's entries, then the values the predicates allow (as on a multikey
// index, since any document may hold an array there). nil when no
// predicate on a path under the index can be served.
func wildcardPlan(ix *storage.IndexInfo, preds []query.Predicate) (*Plan, int) {
	var best *Plan
	bestScore := 0
	for _, pr := range preds {
		if !ix.Spec.WildcardCovers(pr.Path) || index.HasNumericComponent(pr.Path) || !scalarValues(pr.Values) {
			continue
		}
		ivs, points := fieldIntervals(pr.Path, wildcardPreds(pr.Path, preds), true)
		score := 1
		if points {
			score = 2
		}
		if score <= bestScore {
			continue
		}
		path := bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, pr.Path)}
		p := &Plan{ix: ix, wildPath: pr.Path}
		p.bounds = [][]index.FieldInterval{{index.PointInterval(path, `"`+pr.Path+`"`)}, ivs}
		p.intervals = index.EntryIntervals(p.bounds)
		best, bestScore = p, score
	}
	return best, bestScore
}

// wildcardPreds are the predicates on path whose values the index holds.
func wildcardPreds(path string, preds []query.Predicate) []query.Predicate {
	var out []query.Predicate
	for _, pr := range preds {
		if pr.Path == path && scalarValues(pr.Values) {
			out = append(out, pr)
		}
	}
	return out
}

// scalarValues: wildcard entries hold scalars only, never documents.
func scalarValues(vals []bsoncore.Value) bool {
	for _, v := range vals {
		if v.Type == bsoncore.TypeEmbeddedDocument {
			return false
		}
	}
	return true
}

// wildcardUsable says whether the planner may pick a wildcard index.
func wildcardUsable(ix *storage.IndexInfo) bool {
	_, ok := ix.Spec.Wildcard()
	return ok && !ix.Spec.Hidden && ix.Spec.Partial == nil
}

// bestWildcardPlan is the best wildcard plan among the indexes, if any.
func bestWildcardPlan(indexes []storage.IndexInfo, preds []query.Predicate) *Plan {
	var best *Plan
	bestScore := 0
	for i := range indexes {
		ix := &indexes[i]
		if !wildcardUsable(ix) {
			continue
		}
		if p, score := wildcardPlan(ix, preds); p != nil && score > bestScore {
			best, bestScore = p, score
		}
	}
	return best
}
