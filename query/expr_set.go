package query

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/value"
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
			it := value.NewIter(v.Data)
			for _, e, ok := it.Next(); ok; _, e, ok = it.Next() {
				// A set holds its values (keyed by their sort keys):
				// counted as one more copy of them.
				if err := c.grow(name, len(e.Data)); err != nil {
					return bsoncore.Value{}, err
				}
				sets[i].add(e)
			}
		}
		switch name {
		case "$setUnion":
			return setUnion(c, sets)
		case "$setIntersection", "$setDifference":
			return setFilter(c, name, sets)
		case "$setIsSubset":
			ok, err := subset(c, sets[0], sets[1])
			return value.Bool(ok), err
		}
		for _, s := range sets[1:] {
			sub, err := subset(c, sets[0], s)
			if err != nil || !sub {
				return value.Bool(false), err
			}
			if sub, err = subset(c, s, sets[0]); err != nil || !sub {
				return value.Bool(false), err
			}
		}
		return value.Bool(true), nil
	}
}

// setUnion is the values of all sets, each once, in the order first seen.
func setUnion(c *evalCtx, sets []*valueSet) (bsoncore.Value, error) {
	seen := newValueSet(c.env.coll())
	out := newArrayBuilder(c, "$setUnion")
	for _, s := range sets {
		for _, v := range s.vals {
			if seen.has(v) {
				if err := c.step(stepWork); err != nil {
					return bsoncore.Value{}, err
				}
				continue
			}
			seen.add(v)
			if err := out.add(v); err != nil {
				return bsoncore.Value{}, err
			}
		}
	}
	return out.value(), nil
}

// setFilter is the values of the first set in all the others
// ($setIntersection) or not in the second ($setDifference).
func setFilter(c *evalCtx, name string, sets []*valueSet) (bsoncore.Value, error) {
	out := newArrayBuilder(c, name)
	if len(sets) == 0 {
		return out.value(), nil
	}
	for _, v := range sets[0].vals {
		if err := c.step(stepWork); err != nil {
			return bsoncore.Value{}, err
		}
		inAll := true
		for _, s := range sets[1:] {
			inAll = inAll && s.has(v)
		}
		if name == "$setDifference" {
			inAll = !sets[1].has(v)
		}
		if !inAll {
			continue
		}
		if err := out.add(v); err != nil {
			return bsoncore.Value{}, err
		}
	}
	return out.value(), nil
}

func subset(c *evalCtx, a, b *valueSet) (bool, error) {
	for _, v := range a.vals {
		if err := c.step(stepWork); err != nil {
			return false, err
		}
		if !b.has(v) {
			return false, nil
		}
	}
	return true, nil
}

func elementsTrue(name string, any bool) func(*evalCtx, []bsoncore.Value) (bsoncore.Value, error) {
	return func(c *evalCtx, a []bsoncore.Value) (bsoncore.Value, error) {
		if a[0].Type != bsoncore.TypeArray {
			return bsoncore.Value{}, mongoerr.New(mongoerr.Location5159200, "%s's argument must be an array, but is %s", name, exprTypeName(a[0]))
		}
		it := value.NewIter(a[0].Data)
		for _, v, ok := it.Next(); ok; _, v, ok = it.Next() {
			if err := c.step(stepWork); err != nil {
				return bsoncore.Value{}, err
			}
			if exprTruthy(v) == any {
				return value.Bool(any), nil
			}
		}
		return value.Bool(!any), nil
	}
}
