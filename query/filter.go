package query

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/value"
)

// Filter is a compiled find/update/delete filter.
type Filter struct {
	root docExpr
	raw  bsoncore.Document // as given (CompileFilterEnv)
	eqs  []EqualityField
	env  *Env
	// exprErr is the first runtime error of a $expr; Match cannot return
	// it, so callers check Err after matching.
	exprErr error
	// text is the filter's $text, if any.
	text *textExpr
	// textOrClauses is set when the $text is a clause of a top-level $or
	// (as mongod allows): that $or's other clauses, which must each be
	// servable by an index.
	textOrClauses []bsoncore.Document
	// inTopOr is parse state: a clause of a top-level $or is being parsed.
	inTopOr bool
	// near is the filter's $near or $nearSphere, which must be at the
	// top level (or in a top-level $and).
	near *NearPredicate
	// opsDepth is parse state: how many operator documents enclose the
	// one being parsed ($not and $elemMatch nest them; $near may not be
	// nested).
	opsDepth int
	// noNear is set for a $match stage's filter, which refuses $near and
	// $nearSphere as a validator does.
	noNear bool
	// validator is set while compiling a collection validator, which
	// refuses what mongod refuses there ($text, $near, $function).
	validator bool
	// allowWhere is set for a command's own query, the one place mongod
	// runs $where (filter_where.go).
	allowWhere bool
	// js is set when the filter may run JavaScript ($where, $function in
	// $expr), exprs when it has a $expr: MatchContext then passes its
	// context on.
	js, exprs bool
}

// EqualityField is a path pinned to a value by an equality predicate.
type EqualityField struct {
	Path  string
	Value bsoncore.Value
}

// docExpr is a predicate over a whole document.
type docExpr interface{ matchDoc(doc []byte) bool }

type andExpr []docExpr

func (a andExpr) matchDoc(doc []byte) bool {
	for _, e := range a {
		if !e.matchDoc(doc) {
			return false
		}
	}
	return true
}

type orExpr []docExpr

func (o orExpr) matchDoc(doc []byte) bool {
	for _, e := range o {
		if e.matchDoc(doc) {
			return true
		}
	}
	return false
}

type norExpr []docExpr

func (n norExpr) matchDoc(doc []byte) bool { return !orExpr(n).matchDoc(doc) }

type constExpr bool

func (c constExpr) matchDoc([]byte) bool { return bool(c) }

// pathExpr applies an operator tree to the values one path reaches.
type pathExpr struct {
	parts []string
	node  opNode
}

func (p *pathExpr) matchDoc(doc []byte) bool {
	// A top-level field that holds no array reaches every operator as one
	// value: find it once instead of once per operator ({f: {$gte, $lt}}).
	if len(p.parts) == 1 {
		if v, ok := value.LookupField(doc, p.parts[0]); ok && v.Type != bsoncore.TypeArray {
			return p.node.eval(source{single: v})
		}
	}
	return p.node.eval(source{doc: doc, parts: p.parts})
}

// source is what an operator tree evaluates against: either the values a
// path reaches in a document, or a single value ($elemMatch, $pull).
type source struct {
	doc    []byte
	parts  []string
	single bsoncore.Value
}

func (s source) each(fn value.VisitFn) bool {
	if s.parts == nil {
		return fn(s.single, value.KindValue)
	}
	return value.WalkPath(s.doc, s.parts, fn)
}

// opNode is a tree of field operators. Negations wrap the "any value
// matches" of their child, which is why {a: {$ne: 1}} rejects [1, 2].
type opNode interface{ eval(src source) bool }

type opAnd []opNode

func (a opAnd) eval(src source) bool {
	for _, n := range a {
		if !n.eval(src) {
			return false
		}
	}
	return true
}

type opNot struct{ child opNode }

func (n opNot) eval(src source) bool { return !n.child.eval(src) }

// leafNode matches when any value the source yields satisfies the leaf.
type leafNode struct{ leaf leaf }

func (l leafNode) eval(src source) bool { return src.each(l.leaf.matchValue) }

// leaf is a single-value predicate; k says how the value was reached.
type leaf interface {
	matchValue(v bsoncore.Value, k value.VisitKind) bool
}

// CompileFilter validates and compiles a filter document.
func CompileFilter(filter bsoncore.Document) (*Filter, error) {
	return CompileFilterEnv(filter, nil)
}

// CompileFilterEnv compiles a filter with a collation and let variables.
func CompileFilterEnv(filter bsoncore.Document, env *Env) (*Filter, error) {
	f := &Filter{env: env, js: usesJS(filter), raw: filter}
	root, err := f.parseDoc(filter, true)
	if err != nil {
		return nil, err
	}
	f.root = root
	return f, nil
}

// CompilePartialFilter compiles an index's partialFilterExpression under
// the index's collation (nil: simple).
func CompilePartialFilter(filter bsoncore.Document, coll *value.Collation) (*Filter, error) {
	env, err := NewEnv(coll, nil)
	if err != nil {
		return nil, err
	}
	return CompileFilterEnv(filter, env)
}

// Match reports whether doc satisfies the filter.
func (f *Filter) Match(doc bsoncore.Document) bool { return f.root.matchDoc(doc) }

// MatchContext is Match for a caller with the command's context: the
// JavaScript and the $expr it runs stop when ctx ends (maxTimeMS, killOp),
// with the command's error (Err).
func (f *Filter) MatchContext(ctx context.Context, doc bsoncore.Document) bool {
	if !f.js && !f.exprs {
		return f.root.matchDoc(doc)
	}
	prev := f.env.enterContext(&ctxBox{ctx})
	defer f.env.leaveContext(prev)
	return f.root.matchDoc(doc)
}

// Err returns the first runtime error a $expr raised while matching.
func (f *Filter) Err() error { return f.exprErr }

// EqualityFields returns the equality predicates at the top level (or in a
// top-level $and) in filter order; upserts seed new documents from them.
func (f *Filter) EqualityFields() []EqualityField { return f.eqs }

// IDEquality returns the value _id is pinned to by equality, if any.
func (f *Filter) IDEquality() (bsoncore.Value, bool) {
	for _, e := range f.eqs {
		if e.Path == "_id" && e.Value.Type != bsoncore.TypeArray {
			return e.Value, true
		}
	}
	return bsoncore.Value{}, false
}

// parseDoc compiles a filter document. collect is true while the document
// is the top level or a top-level $and, where equalities seed upserts.
func (f *Filter) parseDoc(doc []byte, collect bool) (docExpr, error) {
	if err := bsoncore.Document(doc).Validate(); err != nil {
		return nil, mongoerr.New(mongoerr.InvalidBSON, "invalid filter: %v", err)
	}
	var out andExpr
	it := value.NewIter(doc)
	for {
		k, v, ok := it.Next()
		if !ok {
			break
		}
		key := string(k)
		var e docExpr
		var err error
		if len(key) > 0 && key[0] == '$' {
			e, err = f.parseTopLevel(key, v, collect)
		} else {
			e, err = f.parsePath(key, v, collect)
		}
		if err != nil {
			return nil, err
		}
		if e != nil {
			out = append(out, e)
		}
	}
	if len(out) == 1 {
		return out[0], nil
	}
	return out, nil
}

func (f *Filter) parseTopLevel(name string, v bsoncore.Value, collect bool) (docExpr, error) {
	row, ok := topLevelOps[name]
	switch {
	case !ok:
		return nil, mongoerr.New(mongoerr.BadValue, "unknown top level operator: %s. If you have a field name that starts with a '$' symbol, consider using $getField or $setField.", name)
	case f.validator && name == "$text":
		return nil, mongoerr.New(mongoerr.BadValue, "$text is not allowed in this context")
	case row.refuse != nil:
		return nil, row.refuse(name)
	}
	return row.parse(f, name, v, collect)
}

func parseComment(*Filter, string, bsoncore.Value, bool) (docExpr, error) { return nil, nil }

// parseDBRefField compiles {$ref: v}, {$id: v} or {$db: v}, as mongod
// does: equality on that field, whatever v is (an $elemMatch over DBRefs
// reads {$ref: "c", $id: 5} as two such fields). $id compares under the
// collation, $ref and $db byte for byte.
func parseDBRefField(f *Filter, name string, v bsoncore.Value, collect bool) (docExpr, error) {
	var coll *value.Collation
	if name == "$id" {
		coll = f.env.coll()
	}
	if collect {
		f.eqs = append(f.eqs, EqualityField{Path: name, Value: v})
	}
	return &pathExpr{parts: []string{name}, node: leafNode{eqLeaf{v, coll}}}, nil
}

func parseConst(_ *Filter, name string, v bsoncore.Value, _ bool) (docExpr, error) {
	if !value.IsNumber(v) || value.Compare(v, bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, 1)}) != 0 {
		return nil, mongoerr.New(mongoerr.FailedToParse, "%s must be an integer value of 1", name)
	}
	return constExpr(name == "$alwaysTrue"), nil
}

func parseLogical(f *Filter, name string, v bsoncore.Value, collect bool) (docExpr, error) {
	if v.Type != bsoncore.TypeArray || value.ArrayLen(v.Data) == 0 {
		return nil, mongoerr.New(mongoerr.BadValue, "%s must be a nonempty array", name)
	}
	var subs []docExpr
	var clauses []bsoncore.Document
	topOr, textBefore, outerInTopOr := collect && name == "$or", f.text, f.inTopOr
	textClause := -1
	for i, e := range value.ArrayValues(v.Data) {
		if e.Type != bsoncore.TypeEmbeddedDocument {
			return nil, mongoerr.New(mongoerr.BadValue, "$or/$and/$nor entries need to be full objects")
		}
		f.inTopOr = topOr || (outerInTopOr && name == "$and")
		hadText := f.text != nil
		sub, err := f.parseDoc(e.Data, collect && name == "$and")
		f.inTopOr = outerInTopOr
		if err != nil {
			return nil, err
		}
		if !hadText && f.text != nil {
			textClause = i
		}
		subs = append(subs, sub)
		clauses = append(clauses, e.Data)
	}
	if topOr && textBefore == nil && textClause >= 0 {
		f.textOrClauses = append(clauses[:textClause:textClause], clauses[textClause+1:]...)
	}
	switch name {
	case "$and":
		return andExpr(subs), nil
	case "$or":
		return orExpr(subs), nil
	}
	return norExpr(subs), nil
}

// parsePath compiles {path: value}: an operator document, a regex, or an
// implicit equality.
func (f *Filter) parsePath(path string, v bsoncore.Value, collect bool) (docExpr, error) {
	parts := value.SplitPath(path)
	switch {
	case v.Type == bsoncore.TypeRegex:
		l, err := regexLeafFromValue(v)
		if err != nil {
			return nil, err
		}
		return &pathExpr{parts: parts, node: leafNode{l}}, nil
	case value.IsOperatorDoc(v) && !isDBRef(v):
		nearBefore := f.near
		node, err := f.parseOps(path, v.Data)
		if err != nil {
			return nil, err
		}
		if f.near != nearBefore && !collect {
			return nil, nearNotTopLevel()
		}
		if collect {
			f.collectEq(path, v.Data)
		}
		return &pathExpr{parts: parts, node: node}, nil
	}
	if collect {
		f.eqs = append(f.eqs, EqualityField{Path: path, Value: v})
	}
	return &pathExpr{parts: parts, node: leafNode{eqLeaf{v, f.env.coll()}}}, nil
}

// isDBRef reports a DBRef document, which is a value, not operators: one
// with both $ref and $id, as mongod reads {path: {...}}.
func isDBRef(v bsoncore.Value) bool { return dbRefDoc(v.Data, false) }

// dbRefDoc reports whether doc has the fields of a DBRef: $ref and $id, or
// with incomplete set any of $ref, $id and $db (how $elemMatch tells a
// query on DBRefs from one of operators).
func dbRefDoc(doc []byte, incomplete bool) bool {
	var ref, id, db bool
	it := value.NewIter(doc)
	for {
		k, _, ok := it.Next()
		if !ok {
			break
		}
		switch string(k) {
		case "$ref":
			ref = true
		case "$id":
			id = true
		case "$db":
			db = true
		}
	}
	if incomplete {
		return ref || id || db
	}
	return ref && id
}

// collectEq records {path: {$eq: v}} for upsert seeding.
func (f *Filter) collectEq(path string, ops []byte) {
	if v, ok := value.LookupField(ops, "$eq"); ok && v.Type != bsoncore.TypeRegex && !value.IsOperatorDoc(v) {
		f.eqs = append(f.eqs, EqualityField{Path: path, Value: v})
	}
}
