package index

import (
	"strings"
	"sync"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// coverNode is one component of the key paths a covered entry keeps: a
// leaf keeps its whole value, an inner node the fields below it.
type coverNode struct {
	children map[string]*coverNode // nil for a leaf
}

type coverCache struct {
	coverOnce sync.Once
	cover     *coverNode
	partsOnce sync.Once
	parts     [][]string // each key field's path, split at its dots
}

// fieldParts is each key field's path split into its components, computed
// once: key extraction walks them for every document.
func (s *Spec) fieldParts() [][]string {
	s.partsOnce.Do(func() {
		s.parts = make([][]string, len(s.Fields))
		for i, f := range s.Fields {
			s.parts[i] = strings.Split(f.Path, ".")
		}
	})
	return s.parts
}

// coverTree is the key paths as a tree (and _id only when it is a key
// field); nil when one key path is a prefix of another, which an inclusion
// projection refuses as a path collision.
func (s *Spec) coverTree() *coverNode {
	s.coverOnce.Do(func() {
		root := &coverNode{children: map[string]*coverNode{}}
		for _, f := range s.Fields {
			if !root.add(strings.Split(f.Path, ".")) {
				return
			}
		}
		s.cover = root
	})
	return s.cover
}

// add inserts one path and reports false on a collision.
func (n *coverNode) add(parts []string) bool {
	child, ok := n.children[parts[0]]
	last := len(parts) == 1
	switch {
	case ok && (last || child.children == nil):
		return false
	case !ok && last:
		n.children[parts[0]] = &coverNode{}
		return true
	case !ok:
		child = &coverNode{children: map[string]*coverNode{}}
		n.children[parts[0]] = child
	}
	return child.add(parts[1:])
}

// project keeps, in document order, the fields of doc on the key paths, as
// an inclusion projection of those paths does: a leaf's value whole, a
// sub-document reduced to the paths below it (empty if none are there),
// nothing for a scalar where a path goes on. It returns nil when an array
// lies on a path (such a document is multikey and keeps no covered values).
func (n *coverNode) project(doc bsoncore.Document) []byte {
	if len(doc) < 5 {
		return nil
	}
	idx, out := bsoncore.AppendDocumentStart(make([]byte, 0, 64))
	// The elements are read in place: no list of them, no key strings.
	for rest := doc[4 : len(doc)-1]; len(rest) > 0; {
		el, next, ok := bsoncore.ReadElement(rest)
		if !ok {
			return nil
		}
		rest = next
		child, ok := n.children[string(el.KeyBytes())]
		if !ok {
			continue
		}
		v := el.Value()
		switch {
		case child.children == nil:
			out = append(out, el...)
		case v.Type == bsoncore.TypeArray:
			return nil
		case v.Type == bsoncore.TypeEmbeddedDocument:
			sub := child.project(v.Data)
			if sub == nil {
				return nil
			}
			out = bsoncore.AppendDocumentElement(out, string(el.KeyBytes()), sub)
		}
	}
	out, _ = bsoncore.AppendDocumentEnd(out, idx)
	return out
}
