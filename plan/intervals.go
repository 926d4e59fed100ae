package plan

import (
	"bytes"
	"sort"

	"github.com/dumbodb/dumbodb/index"
	"github.com/dumbodb/dumbodb/query"
	"github.com/dumbodb/dumbodb/value"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// The key intervals an index plan scans: from the predicates of its
// fields, under its collation, hashed fields by their values' hashes.

// hashedIntervals bounds a hashed field: an equality ($eq, $in) by the
// hashes of its values, anything else not at all (hashes keep no order).
// The filter still runs on what the scan fetches: hashes collide.
func hashedIntervals(path string, preds []query.Predicate) ([]index.FieldInterval, bool) {
	for _, pr := range preds {
		if pr.Path != path || (pr.Op != "$eq" && pr.Op != "$in") {
			continue
		}
		out := make([]index.FieldInterval, 0, len(pr.Values))
		for _, v := range pr.Values {
			out = append(out, index.PointInterval(index.HashedPoint(v), index.ShellValue(index.HashedPoint(v))))
		}
		return dedupePoints(out), true
	}
	return []index.FieldInterval{index.FullInterval()}, false
}

// dedupePoints sorts point intervals and drops repeats (values that hash
// alike, such as 1 and 1.5).
func dedupePoints(ivs []index.FieldInterval) []index.FieldInterval {
	sort.Slice(ivs, func(i, j int) bool { return bytes.Compare(ivs[i].Lo, ivs[j].Lo) < 0 })
	out := ivs[:0]
	for _, iv := range ivs {
		if len(out) == 0 || !bytes.Equal(out[len(out)-1].Lo, iv.Lo) {
			out = append(out, iv)
		}
	}
	return out
}

func fullFor(f index.Field) index.FieldInterval {
	if f.Desc {
		return index.FullInterval().Descending()
	}
	return index.FullInterval()
}

// fieldIntervals intersects the predicates on one path; points reports
// that the result is a set of single values. On a multikey index only one
// predicate bounds a field: different elements may satisfy different ones.
func fieldIntervals(path string, preds []query.Predicate, multikey bool) ([]index.FieldInterval, bool) {
	return collatedFieldIntervals(path, preds, multikey, nil)
}

// collatedFieldIntervals is fieldIntervals in the key space of an index
// with collation c (nil: simple).
func collatedFieldIntervals(path string, preds []query.Predicate, multikey bool, c *value.Collation) ([]index.FieldInterval, bool) {
	var points []index.FieldInterval
	rng := index.FullInterval()
	ranged := false
	for _, pr := range preds {
		if pr.Path != path {
			continue
		}
		switch pr.Op {
		case "$eq", "$in":
			if points == nil || !multikey {
				points = intersectPoints(points, pr.Values, c)
			}
		default:
			if !ranged || !multikey {
				rng = rng.Intersect(rangeOf(pr, c))
				ranged = true
			}
		}
	}
	if points == nil {
		return []index.FieldInterval{rng}, false
	}
	if !multikey && ranged {
		points = filterPoints(points, rng)
	}
	return points, true
}

func rangeOf(pr query.Predicate, c *value.Collation) index.FieldInterval {
	v := pr.Values[0]
	text := index.ShellValue(v)
	switch pr.Op {
	case "$gt":
		return index.CollatedRangeInterval(v, c, true, false, text)
	case "$gte":
		return index.CollatedRangeInterval(v, c, true, true, text)
	case "$lt":
		return index.CollatedRangeInterval(v, c, false, false, text)
	}
	return index.CollatedRangeInterval(v, c, false, true, text)
}

// intersectPoints is the point intervals of vals, kept to those already in
// cur when cur is set (an empty, non-nil result matches nothing).
func intersectPoints(cur []index.FieldInterval, vals []bsoncore.Value, c *value.Collation) []index.FieldInterval {
	out := []index.FieldInterval{}
	for _, v := range vals {
		iv := index.CollatedPointInterval(v, c, index.ShellValue(v))
		if cur == nil || containsPoint(cur, iv) {
			out = append(out, iv)
		}
	}
	return out
}

func containsPoint(list []index.FieldInterval, iv index.FieldInterval) bool {
	for _, x := range list {
		if bytes.Equal(x.Lo, iv.Lo) {
			return true
		}
	}
	return false
}

func filterPoints(points []index.FieldInterval, rng index.FieldInterval) []index.FieldInterval {
	out := []index.FieldInterval{}
	for _, p := range points {
		if !p.Intersect(rng).Empty() {
			out = append(out, p)
		}
	}
	return out
}
