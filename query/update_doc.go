package query

import (
	"strconv"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/value"
)

// mnode is a mutable view of a BSON value used while applying updates.
// Containers are expanded lazily: only the documents an update touches are
// decoded, the rest are copied back as raw bytes.
type mnode struct {
	raw      bsoncore.Value
	expanded bool
	isArray  bool
	keys     []string // field names (documents only)
	kids     []*mnode // field values or array elements
	size     int      // bytes of the raw container expand decoded
}

func leafM(v bsoncore.Value) *mnode { return &mnode{raw: v} }

func newDocM() *mnode { return &mnode{expanded: true} }

func (n *mnode) typ() bsoncore.Type {
	if !n.expanded {
		return n.raw.Type
	}
	if n.isArray {
		return bsoncore.TypeArray
	}
	return bsoncore.TypeEmbeddedDocument
}

func (n *mnode) isContainer() bool {
	t := n.typ()
	return t == bsoncore.TypeEmbeddedDocument || t == bsoncore.TypeArray
}

// expand decodes a raw document or array into keys and kids.
func (n *mnode) expand() {
	if n.expanded {
		return
	}
	n.isArray = n.raw.Type == bsoncore.TypeArray
	it := value.NewIter(n.raw.Data)
	for {
		k, v, ok := it.Next()
		if !ok {
			break
		}
		if !n.isArray {
			n.keys = append(n.keys, string(k))
		}
		n.kids = append(n.kids, leafM(v))
	}
	n.expanded = true
	n.size = len(n.raw.Data)
	n.raw = bsoncore.Value{}
}

// value serializes the node.
func (n *mnode) value() bsoncore.Value {
	if !n.expanded {
		return n.raw
	}
	// Sized as before the edit, so that serializing a large document does
	// not grow (and copy) its buffer a dozen times.
	return bsoncore.Value{Type: n.typ(), Data: n.appendBody(make([]byte, 0, n.size+64))}
}

func (n *mnode) appendBody(dst []byte) []byte {
	idx, dst := bsoncore.AppendDocumentStart(dst)
	for i, k := range n.kids {
		key := strconv.Itoa(i)
		if !n.isArray {
			key = n.keys[i]
		}
		dst = k.appendElem(dst, key)
	}
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return dst
}

func (n *mnode) appendElem(dst []byte, key string) []byte {
	if !n.expanded {
		return bsoncore.AppendValueElement(dst, key, n.raw)
	}
	dst = bsoncore.AppendHeader(dst, n.typ(), key)
	return n.appendBody(dst)
}

// child returns the child named by a path component, or nil.
func (n *mnode) child(name string) *mnode {
	n.expand()
	if n.isArray {
		if i, ok := value.ParseIndex(name); ok && i < len(n.kids) {
			return n.kids[i]
		}
		return nil
	}
	for i, k := range n.keys {
		if k == name {
			return n.kids[i]
		}
	}
	return nil
}

// setChild stores c under name: documents replace or append the field,
// arrays set the position, padding with nulls.
func (n *mnode) setChild(name string, c *mnode) {
	n.expand()
	if n.isArray {
		i, _ := value.ParseIndex(name)
		for len(n.kids) <= i {
			n.kids = append(n.kids, leafM(value.Null))
		}
		n.kids[i] = c
		return
	}
	for i, k := range n.keys {
		if k == name {
			n.kids[i] = c
			return
		}
	}
	n.keys = append(n.keys, name)
	n.kids = append(n.kids, c)
}

// removeChild deletes a field; array positions become null, as $unset does.
func (n *mnode) removeChild(name string) {
	n.expand()
	if n.isArray {
		if i, ok := value.ParseIndex(name); ok && i < len(n.kids) {
			n.kids[i] = leafM(value.Null)
		}
		return
	}
	for i, k := range n.keys {
		if k == name {
			n.keys = append(n.keys[:i], n.keys[i+1:]...)
			n.kids = append(n.kids[:i], n.kids[i+1:]...)
			return
		}
	}
}

// navigate returns the container that holds the last path component. With
// create, missing intermediate fields become documents and a path through
// a scalar is an error; without it, nil means the path does not exist.
func navigate(root *mnode, parts []string, create bool) (*mnode, error) {
	cur, curKey := root, ""
	for i := 0; i < len(parts); i++ {
		if err := checkViable(cur, curKey, parts[i], create); err != nil || !cur.isContainer() {
			return nil, err
		}
		if i == len(parts)-1 {
			return cur, nil
		}
		next := cur.child(parts[i])
		if next == nil {
			if !create {
				return nil, nil
			}
			next = newDocM()
			cur.setChild(parts[i], next)
		}
		cur, curKey = next, parts[i]
	}
	return cur, nil
}

// checkViable rejects creating field name inside cur when cur is a scalar,
// or a non-numeric field inside an array.
func checkViable(cur *mnode, curKey, name string, create bool) error {
	if !create {
		return nil
	}
	if cur.isContainer() {
		if cur.typ() != bsoncore.TypeArray {
			return nil
		}
		if _, ok := value.ParseIndex(name); ok {
			return nil
		}
	}
	return mongoerr.New(mongoerr.PathNotViable, "Cannot create field '%s' in element {%s}", name, value.FormatElem(curKey, cur.value()))
}

// getPath returns the node at parts, or nil.
func getPath(root *mnode, parts []string) *mnode {
	parent, _ := navigate(root, parts, false)
	if parent == nil || !parent.isContainer() {
		return nil
	}
	return parent.child(parts[len(parts)-1])
}
