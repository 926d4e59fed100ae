package query

import (
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"dumbodb/query/mongoerr"
)

// Projection is a compiled find projection.
type Projection struct {
	root      *projNode
	inclusion bool
	excludeID bool
	empty     bool
}

// projNode is one path component of the projection tree. A node is either
// a terminal action or has children, never both (collisions are errors).
type projNode struct {
	children  map[string]*projNode
	terminal  bool
	include   bool           // terminal include (else exclude) when no slice/elemMatch
	slice     *sliceSpec     // $slice
	elemMatch *elemMatchLeaf // $elemMatch
}

type sliceSpec struct {
	pair        bool // [skip, limit] form
	skip, limit int
}

// CompileProjection validates a projection document.
func CompileProjection(proj bsoncore.Document) (*Projection, error) {
	p := &Projection{root: &projNode{}}
	mode := 0 // 1 inclusion, -1 exclusion, 0 undecided
	hasElemMatch := false
	it := newIter(proj)
	for {
		k, v, ok := it.next()
		if !ok {
			break
		}
		path := string(k)
		n, err := parseProjValue(path, v)
		if err != nil {
			return nil, err
		}
		if path == "_id" && n.slice == nil && n.elemMatch == nil {
			p.excludeID = !n.include
			if !n.include {
				continue
			}
		} else if n.slice == nil && n.elemMatch == nil {
			if mode, err = projMode(mode, n.include, path); err != nil {
				return nil, err
			}
		}
		hasElemMatch = hasElemMatch || n.elemMatch != nil
		if err := p.root.insert(path, n); err != nil {
			return nil, err
		}
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

// parseProjValue turns one projection value into a terminal node.
func parseProjValue(path string, v bsoncore.Value) (*projNode, error) {
	if strings.HasSuffix(path, ".$") || strings.Contains(path, ".$.") {
		return nil, mongoerr.New(mongoerr.NotImplemented, "positional projection '%s' is not supported by DumboDB yet", path)
	}
	if strings.HasPrefix(path, "$") {
		return nil, mongoerr.New(mongoerr.Location16410, "FieldPath field names may not start with '$'. Consider using $getField or $setField.")
	}
	switch {
	case v.Type == bsoncore.TypeBoolean || isNumber(v):
		return &projNode{terminal: true, include: truthy(v)}, nil
	case v.Type == bsoncore.TypeEmbeddedDocument:
		switch firstKey(v.Data) {
		case "$slice":
			arg, _ := lookupField(v.Data, "$slice")
			s, err := parseSlice(arg)
			if err != nil {
				return nil, err
			}
			return &projNode{terminal: true, include: true, slice: s}, nil
		case "$elemMatch":
			if strings.Contains(path, ".") {
				return nil, mongoerr.New(mongoerr.BadValue, "Cannot use $elemMatch projection on a nested field.")
			}
			arg, _ := lookupField(v.Data, "$elemMatch")
			em, err := newElemMatch(path, arg)
			if err != nil {
				return nil, err
			}
			return &projNode{terminal: true, include: true, elemMatch: em}, nil
		}
	}
	return nil, mongoerr.New(mongoerr.NotImplemented, "projection value %s for field '%s' is not supported by DumboDB yet", formatValue(v), path)
}

func parseSlice(arg bsoncore.Value) (*sliceSpec, error) {
	if isNumber(arg) {
		return &sliceSpec{limit: int(clampFloat(toFloat(arg)))}, nil
	}
	if arg.Type == bsoncore.TypeArray {
		vals := arrayValues(arg.Data)
		if len(vals) != 2 || !isNumber(vals[0]) || !isNumber(vals[1]) {
			return nil, mongoerr.New(mongoerr.Location28724, "First argument to $slice must be an array, and second argument must be a number")
		}
		limit := int(clampFloat(toFloat(vals[1])))
		if limit <= 0 {
			return nil, mongoerr.New(mongoerr.Location28724, "$slice limit must be positive")
		}
		return &sliceSpec{pair: true, skip: int(clampFloat(toFloat(vals[0]))), limit: limit}, nil
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
	parts := splitPath(path)
	cur := n
	for i, part := range parts {
		if cur.terminal {
			return mongoerr.New(mongoerr.ConflictingPathsInProjection, "Path collision at %s remaining portion %s", path, strings.Join(parts[i:], "."))
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
			return nil
		}
		if !ok {
			child = &projNode{}
			cur.children[part] = child
		}
		cur = child
	}
	return nil
}

// Apply projects doc.
func (p *Projection) Apply(doc bsoncore.Document) (bsoncore.Document, error) {
	if p.empty {
		return doc, nil
	}
	out := p.applyDoc(nil, doc, p.root, true)
	return out, nil
}

// applyDoc appends the projection of a document at node n to dst.
func (p *Projection) applyDoc(dst []byte, doc []byte, n *projNode, top bool) []byte {
	idx, dst := bsoncore.AppendDocumentStart(dst)
	it := newIter(doc)
	for {
		k, v, ok := it.next()
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
		dst = p.applyField(dst, key, v, n.children[key])
	}
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return dst
}

// applyField appends the projected form of one field (or nothing).
func (p *Projection) applyField(dst []byte, key string, v bsoncore.Value, child *projNode) []byte {
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
		for _, e := range arrayValues(v.Data) {
			if child.elemMatch.matchElem(e) {
				return bsoncore.AppendValueElement(dst, key, buildArray([]bsoncore.Value{e}))
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
		return bsoncore.AppendDocumentElement(dst, key, p.applyDoc(nil, v.Data, child, false))
	case bsoncore.TypeArray:
		return bsoncore.AppendArrayElement(dst, key, p.applyArray(v.Data, child))
	}
	// A scalar where the projection expects a document: inclusion drops it.
	if p.inclusion {
		return dst
	}
	return bsoncore.AppendValueElement(dst, key, v)
}

// applyArray projects each element of an array reached by a dotted path:
// documents and nested arrays recursively; scalars survive exclusion only.
func (p *Projection) applyArray(arr []byte, n *projNode) []byte {
	idx, dst := bsoncore.AppendArrayStart(nil)
	i := 0
	for _, e := range arrayValues(arr) {
		key := strconv.Itoa(i)
		switch e.Type {
		case bsoncore.TypeEmbeddedDocument:
			dst = bsoncore.AppendDocumentElement(dst, key, p.applyDoc(nil, e.Data, n, false))
		case bsoncore.TypeArray:
			dst = bsoncore.AppendArrayElement(dst, key, p.applyArray(e.Data, n))
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

// apply slices an array; other values pass through unchanged. A single
// number n keeps the first n (last -n when negative); [skip, limit] skips
// from the front (from the back when negative) and keeps limit.
func (s *sliceSpec) apply(v bsoncore.Value) bsoncore.Value {
	if v.Type != bsoncore.TypeArray {
		return v
	}
	vals := arrayValues(v.Data)
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
	return buildArray(vals[start:end])
}
