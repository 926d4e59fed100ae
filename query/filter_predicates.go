package query

import (
	"strings"

	"github.com/dumbodb/dumbodb/value"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Predicate is a condition on one path that an index can serve: it holds
// at the top level of a filter (or inside a top-level $and), so every
// matching document satisfies it.
type Predicate struct {
	Path string
	Op   string // "$eq", "$in", "$lt", "$lte", "$gt", "$gte"
	// Values: one for $eq and comparisons, the list for $in. Arrays, null,
	// regexes, NaN and MinKey/MaxKey never appear: their matching does not
	// follow index order (arrays match whole or per element, null matches
	// missing fields), so the planner leaves them to the filter.
	Values []bsoncore.Value
}

// IndexablePredicates lists the predicates of the filter that index bounds
// can express. Under a collation, those whose values are collation
// sensitive (CollationSensitive) fit only an index with the same
// collation; the planner decides.
func (f *Filter) IndexablePredicates() []Predicate {
	var out []Predicate
	eachConjunctLeaf(f.root, func(path string, l leaf) {
		if p, ok := leafPredicate(path, l); ok {
			out = append(out, p)
		}
	})
	return out
}

// eachConjunctLeaf calls fn with every leaf predicate the filter requires
// of a path: those joined by $and (explicit or implicit), not those under
// $or, $nor or $not, which an index cannot bound alone.
func eachConjunctLeaf(e docExpr, fn func(path string, l leaf)) {
	switch x := e.(type) {
	case andExpr:
		for _, c := range x {
			eachConjunctLeaf(c, fn)
		}
	case *pathExpr:
		eachConjunctNodeLeaf(strings.Join(x.parts, "."), x.node, fn)
	}
}

func eachConjunctNodeLeaf(path string, n opNode, fn func(path string, l leaf)) {
	switch x := n.(type) {
	case opAnd:
		for _, c := range x {
			eachConjunctNodeLeaf(path, c, fn)
		}
	case leafNode:
		fn(path, x.leaf)
	}
}

var cmpNames = map[cmpOp]string{opLT: "$lt", opLTE: "$lte", opGT: "$gt", opGTE: "$gte"}

func leafPredicate(path string, l leaf) (Predicate, bool) {
	switch x := l.(type) {
	case eqLeaf:
		if indexableValue(x.v) {
			return Predicate{Path: path, Op: "$eq", Values: []bsoncore.Value{x.v}}, true
		}
	case cmpLeaf:
		if !x.nan && indexableValue(x.v) {
			return Predicate{Path: path, Op: cmpNames[x.op], Values: []bsoncore.Value{x.v}}, true
		}
	case *inLeaf:
		if len(x.regexes) > 0 {
			return Predicate{}, false
		}
		for _, v := range x.vals {
			if !indexableValue(v) {
				return Predicate{}, false
			}
		}
		return Predicate{Path: path, Op: "$in", Values: x.vals}, true
	}
	return Predicate{}, false
}

// Collation is the filter's collation (nil: simple).
func (f *Filter) Collation() *value.Collation { return f.env.coll() }

// CollationSensitive reports whether a collation can change how v compares:
// strings and symbols, and documents and arrays, which may hold them.
func CollationSensitive(v bsoncore.Value) bool {
	switch v.Type {
	case bsoncore.TypeString, bsoncore.TypeSymbol, bsoncore.TypeEmbeddedDocument, bsoncore.TypeArray:
		return true
	}
	return false
}

// Sensitive reports whether any of the predicate's values is
// CollationSensitive.
func (p Predicate) Sensitive() bool {
	for _, v := range p.Values {
		if CollationSensitive(v) {
			return true
		}
	}
	return false
}

func indexableValue(v bsoncore.Value) bool {
	switch v.Type {
	case bsoncore.TypeArray, bsoncore.TypeNull, bsoncore.TypeUndefined, bsoncore.TypeRegex,
		bsoncore.TypeMinKey, bsoncore.TypeMaxKey:
		return false
	}
	return !(value.IsNumber(v) && value.ExactNumber(v).NaN)
}

// ExactPredicates is IndexablePredicates when they say everything the
// filter says (a conjunction of indexable conditions and nothing else),
// so that index bounds built from them select exactly the matching
// documents of a non-multikey index; ok is false otherwise.
func (f *Filter) ExactPredicates() (preds []Predicate, ok bool) {
	preds = []Predicate{}
	if !exactPredicates(f.root, &preds) {
		return nil, false
	}
	return preds, true
}

func exactPredicates(e docExpr, out *[]Predicate) bool {
	switch x := e.(type) {
	case andExpr:
		for _, c := range x {
			if !exactPredicates(c, out) {
				return false
			}
		}
		return true
	case *pathExpr:
		return exactNodePredicates(strings.Join(x.parts, "."), x.node, out)
	}
	return false
}

func exactNodePredicates(path string, n opNode, out *[]Predicate) bool {
	switch x := n.(type) {
	case opAnd:
		for _, c := range x {
			if !exactNodePredicates(path, c, out) {
				return false
			}
		}
		return true
	case leafNode:
		p, ok := leafPredicate(path, x.leaf)
		if ok {
			*out = append(*out, p)
		}
		return ok
	}
	return false
}

// Paths lists the document paths the filter reads; ok is false when it
// reads the document in other ways ($expr, $jsonSchema), so no list of
// paths bounds what it needs.
func (f *Filter) Paths() (paths []string, ok bool) {
	paths = []string{}
	return paths, filterPaths(f.root, &paths)
}

func filterPaths(e docExpr, out *[]string) bool {
	switch x := e.(type) {
	case andExpr:
		for _, c := range x {
			if !filterPaths(c, out) {
				return false
			}
		}
		return true
	case orExpr:
		for _, c := range x {
			if !filterPaths(c, out) {
				return false
			}
		}
		return true
	case norExpr:
		return filterPaths(orExpr(x), out)
	case *pathExpr:
		*out = append(*out, strings.Join(x.parts, "."))
		return true
	}
	return false
}
