package query

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"dumbodb/query/mongoerr"
	"dumbodb/query/value"
)

// Set expressions: $setUnion, $setIntersection, $setDifference,
// $setEquals, $setIsSubset over arrays as sets, and $anyElementTrue,
// $allElementsTrue.

// valueSet is a set of values under Compare equality.
type valueSet struct {
	t    groupTable
	vals []bsoncore.Value
}

func newValueSet(coll *value.Collation) *valueSet {
	return &valueSet{t: groupTable{coll: coll, buckets: map[string][]*group{}}}
}

func (s *valueSet) add(v bsoncore.Value) {
	if !s.has(v) {
		s.t.insert(&group{id: v})
		s.vals = append(s.vals, v)
	}
}

func (s *valueSet) has(v bsoncore.Value) bool { return s.t.find(v) != nil }

func setOp(name string) func(*evalCtx, []bsoncore.Value) (bsoncore.Value, error) {
	return func(c *evalCtx, a []bsoncore.Value) (bsoncore.Value, error) {
		sets := make([]*valueSet, len(a))
		for i, v := range a {
			if nullish(v) && (name == "$setUnion" || name == "$setIntersection" || name == "$setDifference") {
				return value.Null, nil
			}
			if v.Type != bsoncore.TypeArray {
				return bsoncore.Value{}, mongoerr.New(mongoerr.Location17044, "All operands of %s must be arrays. One argument is of type: %s", name, exprTypeName(v))
			}
			sets[i] = newValueSet(c.env.coll())
			for _, e := range value.ArrayValues(v.Data) {
				sets[i].add(e)
			}
		}
		switch name {
		case "$setUnion":
			u := newValueSet(c.env.coll())
			for _, s := range sets {
				for _, v := range s.vals {
					u.add(v)
				}
			}
			return value.BuildArray(u.vals), nil
		case "$setIntersection", "$setDifference":
			var out []bsoncore.Value
			if len(sets) == 0 {
				return value.BuildArray(nil), nil
			}
			for _, v := range sets[0].vals {
				inAll := true
				for _, s := range sets[1:] {
					inAll = inAll && s.has(v)
				}
				if name == "$setDifference" {
					inAll = !sets[1].has(v)
				}
				if inAll {
					out = append(out, v)
				}
			}
			return value.BuildArray(out), nil
		case "$setIsSubset":
			return value.Bool(subset(sets[0], sets[1])), nil
		}
		for _, s := range sets[1:] {
			if !subset(sets[0], s) || !subset(s, sets[0]) {
				return value.Bool(false), nil
			}
		}
		return value.Bool(true), nil
	}
}

func subset(a, b *valueSet) bool {
	for _, v := range a.vals {
		if !b.has(v) {
			return false
		}
	}
	return true
}

func elementsTrue(name string, any bool) func(*evalCtx, []bsoncore.Value) (bsoncore.Value, error) {
	return func(_ *evalCtx, a []bsoncore.Value) (bsoncore.Value, error) {
		if a[0].Type != bsoncore.TypeArray {
			return bsoncore.Value{}, mongoerr.New(mongoerr.Location5159200, "%s's argument must be an array, but is %s", name, exprTypeName(a[0]))
		}
		for _, v := range value.ArrayValues(a[0].Data) {
			if exprTruthy(v) == any {
				return value.Bool(any), nil
			}
		}
		return value.Bool(!any), nil
	}
}
