package query

import (
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/value"
)

// Positional update paths: "a.$" (the array position the query matched),
// "a.$[]" (every element) and "a.$[id]" (the elements the array filter
// named id matches). They are resolved per document into concrete paths
// before the modifier runs, so the modifiers themselves only ever see
// plain paths.

// arrayFilter is one compiled entry of arrayFilters.
type arrayFilter struct {
	id   string
	f    *Filter
	used bool
}

// matches reports whether an array element satisfies the filter: the
// filter's paths start with the identifier, so the element is matched as
// the value of a one-field document {id: element}.
func (a *arrayFilter) matches(e bsoncore.Value) bool {
	doc := bsoncore.NewDocumentBuilder().AppendValue(a.id, e).Build()
	return a.f.Match(doc)
}

// compileArrayFilters parses the arrayFilters option.
func compileArrayFilters(docs []bsoncore.Document, env *Env) (map[string]*arrayFilter, error) {
	out := map[string]*arrayFilter{}
	for _, d := range docs {
		id, err := arrayFilterID(d)
		if err != nil {
			return nil, err
		}
		if _, dup := out[id]; dup {
			return nil, mongoerr.New(mongoerr.FailedToParse, "Found multiple array filters with the same top-level field name %s", id)
		}
		f, err := CompileFilterEnv(d, env)
		if err != nil {
			return nil, err
		}
		out[id] = &arrayFilter{id: id, f: f}
	}
	return out, nil
}

// arrayFilterID finds the identifier every top-level path of an array
// filter starts with (looking inside $and/$or/$nor).
func arrayFilterID(d bsoncore.Document) (string, error) {
	id := ""
	var walk func(doc []byte) error
	walk = func(doc []byte) error {
		it := value.NewIter(doc)
		for {
			k, v, ok := it.Next()
			if !ok {
				return nil
			}
			key := string(k)
			if strings.HasPrefix(key, "$") {
				if v.Type == bsoncore.TypeArray {
					for _, sub := range value.ArrayValues(v.Data) {
						if sub.Type == bsoncore.TypeEmbeddedDocument {
							if err := walk(sub.Data); err != nil {
								return err
							}
						}
					}
				}
				continue
			}
			first, _, _ := strings.Cut(key, ".")
			if id != "" && first != id {
				return mongoerr.New(mongoerr.FailedToParse, "Error parsing array filter :: caused by :: Expected a single top-level field name, found '%s' and '%s'", id, first)
			}
			id = first
		}
	}
	if err := walk(d); err != nil {
		return "", err
	}
	if id == "" {
		return "", mongoerr.New(mongoerr.FailedToParse, "Cannot use an expression without a top-level field name in arrayFilters")
	}
	if err := validateIdentifier(id); err != nil {
		return "", err
	}
	return id, nil
}

// validateIdentifier: an identifier is alphanumeric, starting lowercase.
func validateIdentifier(id string) error {
	ok := id != "" && id[0] >= 'a' && id[0] <= 'z'
	for i := 0; ok && i < len(id); i++ {
		c := id[i]
		ok = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
	}
	if !ok {
		return mongoerr.New(mongoerr.BadValue, "Error parsing array filter :: caused by :: The top-level field name must be an alphanumeric string beginning with a lowercase letter, found '%s'", id)
	}
	return nil
}

// positionalKind classifies a path component.
func positionalKind(p string) (kind byte, id string) {
	switch {
	case p == "$":
		return '$', ""
	case p == "$[]":
		return '*', ""
	case strings.HasPrefix(p, "$[") && strings.HasSuffix(p, "]"):
		return '[', p[2 : len(p)-1]
	}
	return 0, ""
}

// checkPositionalPath validates the positional components of an update
// path and marks the array filters it uses.
func (u *Update) checkPositionalPath(path string, parts []string) (bool, error) {
	positional, dollars := false, 0
	for i, p := range parts {
		kind, id := positionalKind(p)
		switch kind {
		case 0:
			// Any other name, $-prefixed ones too ("a.$each"), is a field
			// (MongoDB 5.0+); checkTopDollarFields limits where.
			continue
		case '$':
			dollars++
			if dollars > 1 {
				return false, mongoerr.New(mongoerr.BadValue, "Too many positional (i.e. '$') elements found in path '%s'", path)
			}
		case '[':
			af, ok := u.arrayFilters[id]
			if !ok {
				return false, mongoerr.New(mongoerr.BadValue, "No array filter found for identifier '%s' in path '%s'", id, path)
			}
			af.used = true
		}
		if i == 0 {
			return false, mongoerr.New(mongoerr.BadValue, "Cannot have array filter identifier (i.e. '$[<id>]') element in the first position in path '%s'", path)
		}
		positional = true
	}
	return positional, nil
}

// checkArrayFiltersUsed rejects array filters no path refers to.
func (u *Update) checkArrayFiltersUsed(update bsoncore.Value) error {
	for _, af := range u.arrayFilters {
		if !af.used {
			return mongoerr.New(mongoerr.FailedToParse, "The array filter for identifier '%s' was not used in the update %s", af.id, value.Format(update))
		}
	}
	return nil
}

// expandPaths resolves op's positional components against the current
// document, returning the concrete paths to apply the modifier to.
func (c *applyCtx) expandPaths(u *Update, op *updateOp) ([][]string, error) {
	var out [][]string
	err := c.expandFrom(u, op, c.root, 0, make([]string, 0, len(op.parts)), &out)
	return out, err
}

func (c *applyCtx) expandFrom(u *Update, op *updateOp, node *mnode, i int, prefix []string, out *[][]string) error {
	if i == len(op.parts) {
		*out = append(*out, append([]string(nil), prefix...))
		return nil
	}
	p := op.parts[i]
	kind, id := positionalKind(p)
	switch kind {
	case 0:
		return c.expandFrom(u, op, childOf(node, p), i+1, append(prefix, p), out)
	case '$':
		pos, err := c.matchedPosition(u)
		if err != nil {
			return err
		}
		s := strconv.Itoa(pos)
		return c.expandFrom(u, op, childOf(node, s), i+1, append(prefix, s), out)
	}
	if node == nil {
		return mongoerr.New(mongoerr.BadValue, "The path '%s' must exist in the document in order to apply array updates.", strings.Join(op.parts[:i], "."))
	}
	if node.typ() != bsoncore.TypeArray {
		return mongoerr.New(mongoerr.BadValue, "Cannot apply array updates to non-array element %s", value.FormatElem(op.parts[i-1], node.value()))
	}
	node.expand()
	for j, e := range node.kids {
		if kind == '[' && !u.arrayFilters[id].matches(e.value()) {
			continue
		}
		if err := c.expandFrom(u, op, e, i+1, append(prefix, strconv.Itoa(j)), out); err != nil {
			return err
		}
	}
	return nil
}

func childOf(n *mnode, name string) *mnode {
	if n == nil || !n.isContainer() {
		return nil
	}
	return n.child(name)
}

// matchedPosition is the array index the query matched in the original
// document, which "$" stands for.
func (c *applyCtx) matchedPosition(u *Update) (int, error) {
	if u.query != nil && !c.isInsert {
		if pos, ok := u.query.MatchedPosition(c.original); ok {
			return pos, nil
		}
	}
	return 0, mongoerr.New(mongoerr.BadValue, "The positional operator did not find the match needed from the query.")
}

// MatchedPosition returns the index of the first array element through
// which the filter matched doc: what positional "$" refers to in updates
// and projections.
func (f *Filter) MatchedPosition(doc bsoncore.Document) (int, bool) {
	return positionIn(f.root, doc)
}

func positionIn(e docExpr, doc []byte) (int, bool) {
	switch x := e.(type) {
	case andExpr:
		for _, sub := range x {
			if pos, ok := positionIn(sub, doc); ok {
				return pos, true
			}
		}
	case orExpr:
		for _, sub := range x {
			if sub.matchDoc(doc) {
				return positionIn(sub, doc)
			}
		}
	case *pathExpr:
		return pathPosition(doc, x.parts, x.node)
	}
	return 0, false
}

// pathPosition finds the first array on the path and the first of its
// elements through which node matches.
func pathPosition(doc []byte, parts []string, node opNode) (int, bool) {
	cur := bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: doc}
	for k := 0; k <= len(parts); k++ {
		if cur.Type == bsoncore.TypeArray {
			for i, e := range value.ArrayValues(cur.Data) {
				if elemMatchesRest(e, parts[k:], node) {
					return i, true
				}
			}
			return 0, false
		}
		if k == len(parts) || cur.Type != bsoncore.TypeEmbeddedDocument {
			return 0, false
		}
		var ok bool
		if cur, ok = value.LookupField(cur.Data, parts[k]); !ok {
			return 0, false
		}
	}
	return 0, false
}

func elemMatchesRest(e bsoncore.Value, rest []string, node opNode) bool {
	if len(rest) > 0 {
		return e.Type == bsoncore.TypeEmbeddedDocument && node.eval(source{doc: e.Data, parts: rest})
	}
	if ln, ok := node.(leafNode); ok {
		if em, ok := ln.leaf.(*elemMatchLeaf); ok {
			return em.matchElem(e)
		}
	}
	return node.eval(source{single: e})
}
