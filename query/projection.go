package query

import (
	"context"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/value"
)

// Projection is a compiled find projection.
type Projection struct {
	root      *projNode
	inclusion bool
	excludeID bool
	empty     bool
	opts      ProjectionOptions
	// positional is the path of "a.b.$" without its "$" (nil: none).
	positional []string
}

// ProjectionOptions shape a projection: Query enables positional "a.$"
// (find), Stage selects $project's rules (non-numeric values are
// expressions, no $slice/$elemMatch/positional).
type ProjectionOptions struct {
	Env   *Env
	Query *Filter
	Stage bool
}

// projNode is one path component of the projection tree. A node is either
// a terminal action or has children, never both (collisions are errors).
type projNode struct {
	children   map[string]*projNode
	order      []string // children names in specification order
	terminal   bool
	expr       Expr           // computed field
	positional bool           // "a.$": included, then narrowed (selectPositional)
	include    bool           // terminal include (else exclude) when no slice/elemMatch
	slice      *sliceSpec     // $slice
	elemMatch  *elemMatchLeaf // $elemMatch
}

type sliceSpec struct {
	pair        bool // [skip, limit] form
	skip, limit int
}

// CompileProjection validates a projection document.
func CompileProjection(proj bsoncore.Document) (*Projection, error) {
	return CompileProjectionOpts(proj, ProjectionOptions{})
}

// CompileProjectionOpts validates a projection with options.
func CompileProjectionOpts(proj bsoncore.Document, opts ProjectionOptions) (*Projection, error) {
	p := &Projection{root: &projNode{}, opts: opts}
	st := &projState{}
	if err := p.addAll("", proj, st); err != nil {
		return nil, err
	}
	mode, hasElemMatch := st.mode, st.hasElemMatch
	if st.hasExpr && mode < 0 {
		return nil, mongoerr.New(mongoerr.Location31310, "Cannot use expression other than $meta in exclusion projection")
	}
	if st.hasExpr {
		mode = 1
	}
	switch mode {
	case 1:
		p.inclusion = true
	case 0:
		// {_id: 1} or $elemMatch alone make an inclusion projection;
		// $slice alone (or nothing) keeps every other field.
		_, idIncluded := p.root.children["_id"]
		p.inclusion = hasElemMatch || idIncluded
	}
	p.empty = len(p.root.children) == 0 && !p.excludeID
	return p, nil
}

// projState accumulates what the fields of a projection imply.
type projState struct {
	mode                  int // 1 inclusion, -1 exclusion, 0 undecided
	hasElemMatch, hasExpr bool
	positional            bool
}

// addAll adds the fields of a projection document under prefix; a plain
// nested document ({a: {b: 1}}) is the same as dotted paths ("a.b").
func (p *Projection) addAll(prefix string, proj []byte, st *projState) error {
	it := value.NewIter(proj)
	for {
		k, v, ok := it.Next()
		if !ok {
			return nil
		}
		path := prefix + string(k)
		if p.subProjection(v) {
			if len(v.Data) <= 5 {
				return mongoerr.New(mongoerr.Location51270, "An empty sub-projection is not a valid value. Found empty object at path")
			}
			if err := p.addAll(path+".", v.Data, st); err != nil {
				return err
			}
			continue
		}
		if err := p.addField(path, v, st); err != nil {
			return err
		}
	}
}

// subProjection reports whether a projection value is a nested projection
// ({a: {b: 1}}) rather than an expression or one of find's operators: as
// on mongod, any document but one of a single field named like an
// operator, unless that name is unknown yet valid as a field name ($id of
// a DBRef).
func (p *Projection) subProjection(v bsoncore.Value) bool {
	if v.Type != bsoncore.TypeEmbeddedDocument {
		return false
	}
	if value.ArrayLen(v.Data) != 1 || !value.IsOperatorDoc(v) {
		return true
	}
	name := value.FirstKey(v.Data)
	return !p.operatorName(name) && value.CheckFieldPath(strings.TrimSuffix(name, ".$")) == nil
}

// operatorName reports a name a projection takes as an operator: an
// expression's, or $slice and $elemMatch (find's; $project refuses
// $elemMatch as such).
func (p *Projection) operatorName(name string) bool {
	_, expr := exprOps[name]
	return expr || name == "$slice" || name == "$elemMatch"
}

func (p *Projection) addField(path string, v bsoncore.Value, st *projState) error {
	n, err := p.parseProjValue(path, v, st)
	if err != nil {
		return err
	}
	if n.positional {
		st.positional = true
		path = strings.TrimSuffix(path, ".$")
		p.positional = value.SplitPath(path)
	}
	special := n.slice != nil || n.elemMatch != nil || n.expr != nil
	switch {
	case path == "_id" && !special:
		p.excludeID = !n.include
		if !n.include {
			return nil
		}
	case !special:
		if st.mode, err = projMode(st.mode, n.include, path); err != nil {
			return err
		}
	}
	st.hasElemMatch = st.hasElemMatch || n.elemMatch != nil || n.positional
	st.hasExpr = st.hasExpr || (n.expr != nil && !isMetaExpr(n.expr))
	return p.root.insert(path, n)
}

func projMode(mode int, include bool, path string) (int, error) {
	switch {
	case include && mode < 0:
		return 0, mongoerr.New(mongoerr.Location31253, "Cannot do inclusion on field %s in exclusion projection", path)
	case !include && mode > 0:
		return 0, mongoerr.New(mongoerr.Location31254, "Cannot do exclusion on field %s in inclusion projection", path)
	case include:
		return 1, nil
	}
	return -1, nil
}

// ProjectionFlag reads a projection value as a flag: isFlag when v is a
// boolean or a number (not an expression or operator), include when that
// flag keeps the field.
func ProjectionFlag(v bsoncore.Value) (include, isFlag bool) {
	if v.Type != bsoncore.TypeBoolean && !value.IsNumber(v) {
		return false, false
	}
	return value.Truthy(v), true
}

// parseProjValue turns one projection value into a terminal node,
// checking it in mongod's order: where a positional path may stand, then
// what it may be given, then the path itself.
func (p *Projection) parseProjValue(path string, v bsoncore.Value, st *projState) (*projNode, error) {
	positional := strings.HasSuffix(path, ".$")
	if positional && p.opts.Stage {
		// Refused as a find-only feature, whatever else is wrong with it.
		return nil, mongoerr.New(mongoerr.Location31324, "Cannot use positional projection in aggregation projection")
	}
	if strings.Contains(path, ".$.") {
		return nil, mongoerr.New(mongoerr.Location31394, "As of 4.4, it's illegal to specify positional operator in the middle of a path.Positional projection may only be used at the end, for example: a.b.$. If the query previously used a form like a.b.$.d, remove the parts following the '$' and the results will be equivalent.")
	}
	include, isFlag := ProjectionFlag(v)
	if positional {
		switch {
		case v.Type == bsoncore.TypeEmbeddedDocument:
			return nil, mongoerr.New(mongoerr.Location31271, "positional projection cannot be used with an expression or sub object")
		case !isFlag:
			return nil, mongoerr.New(mongoerr.Location31308, "positional projection cannot be used with a literal")
		case !include:
			return nil, mongoerr.New(mongoerr.Location31395, "positional projection cannot be used with exclusion")
		case st.positional:
			return nil, mongoerr.New(mongoerr.Location31276, "Cannot specify more than one positional projection per query.")
		}
		// The path without its ".$" must be a field path: "v..$" ends
		// with a '.', "$.a.$" starts with a '$'.
		if err := value.CheckFieldPath(strings.TrimSuffix(path, ".$")); err != nil {
			return nil, err
		}
		return &projNode{terminal: true, include: true, positional: true}, nil
	}
	if err := value.CheckFieldPath(path); err != nil {
		return nil, err
	}
	if isFlag {
		return &projNode{terminal: true, include: include}, nil
	}
	switch name := value.FirstKey(v.Data); {
	case v.Type != bsoncore.TypeEmbeddedDocument:
	case (name == "$slice" || name == "$elemMatch") && !p.opts.Stage:
		return p.parseFindOperator(path, v)
	case name == "$elemMatch":
		return nil, mongoerr.New(mongoerr.InvalidPipelineOperator, "Cannot use $elemMatch in this context")
	case !p.operatorName(name):
		// Only an operator's name reaches here (subProjection): one
		// that names no expression at the top of a field. Within an
		// expression, an unknown one is Unrecognized (168).
		return nil, mongoerr.New(mongoerr.Location31325, "Unknown expression %s", name)
	}
	x, err := compileExpr(v, p.opts.Env.scope())
	if err != nil {
		return nil, err
	}
	return &projNode{terminal: true, include: true, expr: x}, nil
}

// parseFindOperator parses find's $slice and $elemMatch projections.
func (p *Projection) parseFindOperator(path string, v bsoncore.Value) (*projNode, error) {
	if value.FirstKey(v.Data) == "$slice" {
		arg, _ := value.LookupField(v.Data, "$slice")
		s, err := parseSlice(arg)
		if err != nil {
			return nil, err
		}
		return &projNode{terminal: true, include: true, slice: s}, nil
	}
	if strings.Contains(path, ".") {
		return nil, mongoerr.New(mongoerr.BadValue, "Cannot use $elemMatch projection on a nested field.")
	}
	arg, _ := value.LookupField(v.Data, "$elemMatch")
	em, err := newElemMatch(&Filter{env: p.opts.Env}, path, arg)
	if err != nil {
		return nil, err
	}
	return &projNode{terminal: true, include: true, elemMatch: em}, nil
}

func parseSlice(arg bsoncore.Value) (*sliceSpec, error) {
	if value.IsNumber(arg) {
		return &sliceSpec{limit: int(clampFloat(value.ToFloat(arg)))}, nil
	}
	if arg.Type == bsoncore.TypeArray {
		vals := value.ArrayValues(arg.Data)
		if len(vals) != 2 || !value.IsNumber(vals[0]) || !value.IsNumber(vals[1]) {
			return nil, mongoerr.New(mongoerr.Location28724, "First argument to $slice must be an array, and second argument must be a number")
		}
		limit := int(clampFloat(value.ToFloat(vals[1])))
		if limit <= 0 {
			return nil, mongoerr.New(mongoerr.Location28724, "$slice limit must be positive")
		}
		return &sliceSpec{pair: true, skip: int(clampFloat(value.ToFloat(vals[0]))), limit: limit}, nil
	}
	return nil, mongoerr.New(mongoerr.Location28724, "$slice only supports numbers and [skip, limit] arrays")
}

func clampFloat(f float64) float64 {
	const limit = 1 << 31
	switch {
	case f != f:
		return 0
	case f > limit:
		return limit
	case f < -limit:
		return -limit
	}
	return f
}

// insert adds a terminal node at path, rejecting paths that overlap.
func (n *projNode) insert(path string, leaf *projNode) error {
	parts := value.SplitPath(path)
	cur := n
	for i, part := range parts {
		if cur.terminal {
			return mongoerr.New(mongoerr.Location31249, "Path collision at %s remaining portion %s", path, strings.Join(parts[i:], "."))
		}
		if cur.children == nil {
			cur.children = map[string]*projNode{}
		}
		child, ok := cur.children[part]
		if i == len(parts)-1 {
			if ok {
				return mongoerr.New(mongoerr.Location31250, "Path collision at %s", path)
			}
			cur.children[part] = leaf
			cur.order = append(cur.order, part)
			return nil
		}
		if !ok {
			child = &projNode{}
			cur.children[part] = child
			cur.order = append(cur.order, part)
		}
		cur = child
	}
	return nil
}

// Apply projects doc.
func (p *Projection) Apply(doc bsoncore.Document) (bsoncore.Document, error) {
	return p.apply(&projApply{root: doc})
}

// ApplyContext is Apply for a caller with the command's context: the
// expressions it evaluates stop when ctx ends (maxTimeMS, killOp).
func (p *Projection) ApplyContext(ctx context.Context, doc bsoncore.Document) (bsoncore.Document, error) {
	return p.apply(&projApply{root: doc, stop: ctx})
}

func (p *Projection) apply(a *projApply) (bsoncore.Document, error) {
	if p.empty {
		return a.root, nil
	}
	out := p.applyDoc(a, nil, a.root, p.root, true)
	if p.positional != nil && a.err == nil {
		out = p.selectPositional(a, out)
	}
	return out, a.err
}

// projApply is the per-document state of Apply: the root document that
// expressions and positional matching see, what stops them, and the first
// error.
type projApply struct {
	root bsoncore.Document
	stop context.Context
	ctx  *evalCtx
	err  error
}

func (a *projApply) eval(p *Projection, x Expr) bsoncore.Value {
	if a.ctx == nil {
		a.ctx = newEvalCtx(a.root, p.opts.Env)
		a.ctx.query = p.opts.Query
		a.ctx.budgetOf().ctx = a.stop
	}
	v, err := x.eval(a.ctx)
	if err != nil && a.err == nil {
		a.err = err
	}
	return v
}

// hasComputed reports whether n or a descendant is a computed field.
func (n *projNode) hasComputed() bool {
	if n.expr != nil {
		return true
	}
	for _, c := range n.children {
		if c.hasComputed() {
			return true
		}
	}
	return false
}

// applyDoc appends the projection of a document at node n to dst.
// Computed fields come after the kept ones, in specification order.
func (p *Projection) applyDoc(a *projApply, dst []byte, doc []byte, n *projNode, top bool) []byte {
	idx, dst := bsoncore.AppendDocumentStart(dst)
	var done []string // computed subtrees already emitted by recursion
	it := value.NewIter(doc)
	for {
		k, v, ok := it.Next()
		if !ok {
			break
		}
		key := string(k)
		if top && key == "_id" && n.children[key] == nil {
			// _id is kept in both modes unless explicitly excluded.
			if !p.excludeID {
				dst = bsoncore.AppendValueElement(dst, key, v)
			}
			continue
		}
		child := n.children[key]
		if child != nil && child.expr != nil {
			continue
		}
		if child != nil && !child.terminal && child.hasComputed() &&
			(v.Type == bsoncore.TypeEmbeddedDocument || v.Type == bsoncore.TypeArray) {
			done = append(done, key)
		}
		dst = p.applyField(a, dst, key, v, child)
	}
	return p.appendComputed(a, dst, idx, n, done)
}

// appendComputed emits n's computed fields (and nested documents holding
// computed fields) that the document's own fields did not produce.
func (p *Projection) appendComputed(a *projApply, dst []byte, idx int32, n *projNode, done []string) []byte {
	for _, name := range n.order {
		child := n.children[name]
		switch {
		case child.expr != nil:
			if v := a.eval(p, child.expr); v.Type != 0 {
				dst = bsoncore.AppendValueElement(dst, name, v)
			}
		case !child.terminal && child.hasComputed() && !containsString(done, name):
			dst = bsoncore.AppendDocumentElement(dst, name, p.applyDoc(a, nil, emptyDoc, child, false))
		}
	}
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return dst
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// applyField appends the projected form of one field (or nothing).
func (p *Projection) applyField(a *projApply, dst []byte, key string, v bsoncore.Value, child *projNode) []byte {
	switch {
	case child == nil:
		if p.inclusion {
			return dst
		}
		return bsoncore.AppendValueElement(dst, key, v)
	case child.slice != nil:
		return bsoncore.AppendValueElement(dst, key, child.slice.apply(v))
	case child.elemMatch != nil:
		if v.Type != bsoncore.TypeArray {
			return dst
		}
		for _, e := range value.ArrayValues(v.Data) {
			if child.elemMatch.matchElem(e) {
				return bsoncore.AppendValueElement(dst, key, value.BuildArray([]bsoncore.Value{e}))
			}
		}
		return dst
	case child.terminal:
		if child.include {
			return bsoncore.AppendValueElement(dst, key, v)
		}
		return dst
	}
	switch v.Type {
	case bsoncore.TypeEmbeddedDocument:
		return bsoncore.AppendDocumentElement(dst, key, p.applyDoc(a, nil, v.Data, child, false))
	case bsoncore.TypeArray:
		return bsoncore.AppendArrayElement(dst, key, p.applyArray(a, v.Data, child))
	}
	// A scalar where the projection expects a document: inclusion drops it.
	if p.inclusion {
		return dst
	}
	return bsoncore.AppendValueElement(dst, key, v)
}

// applyArray projects each element of an array reached by a dotted path:
// documents and nested arrays recursively; scalars survive exclusion only.
func (p *Projection) applyArray(a *projApply, arr []byte, n *projNode) []byte {
	idx, dst := bsoncore.AppendArrayStart(nil)
	i := 0
	for _, e := range value.ArrayValues(arr) {
		key := strconv.Itoa(i)
		switch e.Type {
		case bsoncore.TypeEmbeddedDocument:
			dst = bsoncore.AppendDocumentElement(dst, key, p.applyDoc(a, nil, e.Data, n, false))
		case bsoncore.TypeArray:
			dst = bsoncore.AppendArrayElement(dst, key, p.applyArray(a, e.Data, n))
		default:
			if p.inclusion {
				continue
			}
			dst = bsoncore.AppendValueElement(dst, key, e)
		}
		i++
	}
	dst, _ = bsoncore.AppendArrayEnd(dst, idx)
	return dst
}

// findExecutorError is the context mongod gives the errors a find meets
// while it runs.
const findExecutorError = "Executor error during find command :: caused by :: "

// selectPositional narrows the first array on the positional path to the
// element the query matched ("a.$"), as mongod does once the path is
// projected like any included one: it walks the projected document, so an
// array whose elements the projection dropped ("v.foo.$" over an array of
// scalars) has no element there. A path that meets no array is left as
// projected.
func (p *Projection) selectPositional(a *projApply, out bsoncore.Document) bsoncore.Document {
	cur := bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: out}
	for i, part := range p.positional {
		var ok bool
		if cur, ok = value.LookupField(cur.Data, part); !ok {
			return out
		}
		switch cur.Type {
		case bsoncore.TypeEmbeddedDocument:
			continue
		case bsoncore.TypeArray:
		default:
			return out
		}
		pos, matched := 0, false
		if p.opts.Query != nil {
			pos, matched = p.opts.Query.MatchedPosition(a.root)
		}
		if !matched {
			a.err = mongoerr.New(mongoerr.Location51246, findExecutorError+"positional operator '.$' couldn't find a matching element in the array")
			return out
		}
		e, ok := value.ArrayElem(cur.Data, pos)
		if !ok {
			a.err = mongoerr.New(mongoerr.Location51247, findExecutorError+"positional operator '.$' element mismatch")
			return out
		}
		return setField(out, strings.Join(p.positional[:i+1], "."), value.BuildArray([]bsoncore.Value{e}))
	}
	return out
}

// apply slices an array; other values pass through unchanged. A single
// number n keeps the first n (last -n when negative); [skip, limit] skips
// from the front (from the back when negative) and keeps limit.
func (s *sliceSpec) apply(v bsoncore.Value) bsoncore.Value {
	if v.Type != bsoncore.TypeArray {
		return v
	}
	vals := value.ArrayValues(v.Data)
	n := len(vals)
	var start, end int
	switch {
	case !s.pair && s.limit >= 0:
		start, end = 0, min(s.limit, n)
	case !s.pair:
		start, end = max(n+s.limit, 0), n
	default:
		start = s.skip
		if start < 0 {
			start = max(n+start, 0)
		}
		start = min(start, n)
		end = min(start+s.limit, n)
	}
	return value.BuildArray(vals[start:end])
}
