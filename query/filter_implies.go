package query

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/value"
)

// Implies reports whether every document the filter matches also matches
// cond, a partial index's partialFilterExpression compared under the
// index's collation coll: the test that lets the planner read a partial
// index without missing documents. Like mongod's, it reasons on the
// structure of the two, condition by condition, and answers false when it
// cannot tell: each top-level condition of cond (or of its top-level
// $and) must be a top-level condition of the filter byte for byte, or
// follow from one of the filter's conjunctive conditions on the same path:
// an equality or $in whose values all lie in cond's range or list, a range
// inside cond's range, or any such condition for {$exists: true}.
func (f *Filter) Implies(cond bsoncore.Document, coll *value.Collation) bool {
	have := map[string]bool{}
	eachTopCondition(f.raw, func(el bsoncore.Element) { have[string(el)] = true })
	preds := f.IndexablePredicates()
	sameColl := f.Collation().Equal(coll)
	implied := true
	eachTopCondition(cond, func(el bsoncore.Element) {
		if implied && !have[string(el)] {
			implied = conditionImplied(el, preds, sameColl, coll)
		}
	})
	return implied
}

// eachTopCondition calls fn with each top-level condition of doc, those of
// a top-level $and's clauses in its place.
func eachTopCondition(doc bsoncore.Document, fn func(el bsoncore.Element)) {
	els, _ := doc.Elements()
	for _, el := range els {
		if el.Key() != "$and" || el.Value().Type != bsoncore.TypeArray {
			fn(el)
			continue
		}
		vals, _ := el.Value().Array().Values()
		for _, v := range vals {
			if d, ok := v.DocumentOK(); ok {
				eachTopCondition(d, fn)
			}
		}
	}
}

// conditionImplied reports whether the filter's predicates imply one
// condition of a partial filter. Values a collation may compare
// differently count only when the query's collation is the index's.
func conditionImplied(el bsoncore.Element, preds []Predicate, sameColl bool, coll *value.Collation) bool {
	doc := bsoncore.NewDocumentBuilder().AppendValue(el.Key(), el.Value()).Build()
	if path, ok := existsTrue(el); ok {
		return hasPredicateOn(preds, path, sameColl)
	}
	sub, err := CompilePartialFilter(doc, coll)
	if err != nil {
		return false
	}
	want, ok := sub.ExactPredicates()
	if !ok || len(want) == 0 {
		return false
	}
	for _, w := range want {
		if !predicateImplied(w, preds, sameColl, coll) {
			return false
		}
	}
	return true
}

// existsTrue recognises {path: {$exists: true}} (any true value).
func existsTrue(el bsoncore.Element) (string, bool) {
	d, ok := el.Value().DocumentOK()
	if !ok {
		return "", false
	}
	els, _ := d.Elements()
	if len(els) != 1 || els[0].Key() != "$exists" {
		return "", false
	}
	return el.Key(), value.Truthy(els[0].Value())
}

// hasPredicateOn reports an indexable predicate on path: none matches a
// missing field (their values are never null), so each implies $exists.
func hasPredicateOn(preds []Predicate, path string, sameColl bool) bool {
	for _, p := range preds {
		if p.Path == path && (sameColl || !p.Sensitive()) {
			return true
		}
	}
	return false
}

func predicateImplied(w Predicate, preds []Predicate, sameColl bool, coll *value.Collation) bool {
	if !sameColl && w.Sensitive() {
		return false
	}
	for _, p := range preds {
		if p.Path == w.Path && (sameColl || !p.Sensitive()) && predicateWithin(p, w, coll) {
			return true
		}
	}
	return false
}

// predicateWithin reports whether every value p admits is admitted by w,
// two predicates on one path. Comparisons hold within one type class, as
// a query's do (a range over numbers matches no string).
func predicateWithin(p, w Predicate, coll *value.Collation) bool {
	switch p.Op {
	case "$eq", "$in":
		for _, v := range p.Values {
			if !admits(w, v, coll) {
				return false
			}
		}
		return true
	}
	if w.Op == "$eq" || w.Op == "$in" || !sameClass(p.Values[0], w.Values[0]) {
		return false
	}
	c := value.CompareWith(p.Values[0], w.Values[0], coll)
	switch p.Op + w.Op {
	case "$gt$gt", "$gt$gte", "$gte$gte", "$lt$lt", "$lt$lte", "$lte$lte":
		return lowerBound(p.Op) && c >= 0 || !lowerBound(p.Op) && c <= 0
	case "$gte$gt":
		return c > 0
	case "$lte$lt":
		return c < 0
	}
	return false
}

func lowerBound(op string) bool { return op == "$gt" || op == "$gte" }

// admits reports whether the value v satisfies w.
func admits(w Predicate, v bsoncore.Value, coll *value.Collation) bool {
	if w.Op == "$eq" || w.Op == "$in" {
		for _, x := range w.Values {
			if value.CompareWith(v, x, coll) == 0 {
				return true
			}
		}
		return false
	}
	if !sameClass(v, w.Values[0]) {
		return false
	}
	c := value.CompareWith(v, w.Values[0], coll)
	switch w.Op {
	case "$gt":
		return c > 0
	case "$gte":
		return c >= 0
	case "$lt":
		return c < 0
	}
	return c <= 0 // $lte
}

func sameClass(a, b bsoncore.Value) bool {
	return value.CanonicalType(a.Type) == value.CanonicalType(b.Type)
}
