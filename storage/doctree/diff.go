package doctree

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/dolthub/dolt/go/store/prolly"
	"github.com/dolthub/dolt/go/store/prolly/tree"
	"github.com/dolthub/dolt/go/store/val"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Change is one changed field between two versions of a document; a zero
// From or To (Type 0) is a field missing on that side.
type Change struct {
	Path     string
	From, To bsoncore.Value
}

// ValueDiff compares two values at a dotted path the way the caller
// reports field changes; Diff uses it where positions do not line up.
type ValueDiff func(path string, a, b bsoncore.Value, out *[]Change)

// Diff lists the field changes from a to b. It reads only the segments
// that differ (Dolt's diff skips equal subtrees by hash) and the elements
// they touch: a one-field change in a 16 MB document costs about what it
// costs in a small one. Containers whose elements moved (an element
// inserted or removed before others) are compared whole with compare.
// With atomicArrays, a changed array is one change of the whole array.
func Diff(ctx context.Context, a, b Tree, atomicArrays bool, compare ValueDiff) ([]Change, error) {
	dirty := dirtySet{}
	err := prolly.DiffMaps(ctx, a.m, b.m, false, func(ctx context.Context, d tree.Diff) error {
		for _, item := range []tree.Item{d.From, d.To} {
			if item == nil {
				continue
			}
			key, _ := keyDesc.GetBytes(0, val.Tuple(d.Key))
			seg, _ := valDesc.GetBytes(0, val.Tuple(item))
			if err := dirty.addSegment(key, seg); err != nil {
				return err
			}
		}
		return nil
	})
	if !errors.Is(err, io.EOF) { // DiffMaps ends with io.EOF
		return nil, err
	}
	df := &differ{a: a, b: b, dirty: dirty, atomicArrays: atomicArrays, compare: compare}
	var out []Change
	err = df.container(ctx, nil, "", &out)
	return out, err
}

// dirtySet holds the paths of every token in a changed segment and of
// their ancestors: for each container (by encoded path), its dirty child
// positions.
type dirtySet map[string]map[int]bool

func (s dirtySet) addSegment(key, seg []byte) error {
	r := &reader{slot: make([]int, 0, 16)}
	if err := r.setSegment(key, seg); err != nil {
		return err
	}
	if r.piece > 0 {
		s.addPath(r.slot)
		return nil
	}
	for r.off < len(r.seg) {
		t, err := r.next(context.Background())
		if err != nil {
			return err
		}
		p := t.path
		if t.kind == tokEnd {
			p = p[:len(p)-1]
		}
		s.addPath(p)
	}
	return nil
}

func (s dirtySet) addPath(p []int) {
	key := pathKey(nil, nil)
	for _, i := range p {
		kids := s[string(key)]
		if kids == nil {
			kids = map[int]bool{}
			s[string(key)] = kids
		}
		kids[i] = true
		key = appendIndex(key, i)
	}
}

// children lists the dirty child positions of the container at path.
func (s dirtySet) children(path []int) []int {
	kids := s[string(pathKey(nil, path))]
	out := make([]int, 0, len(kids))
	for i := range kids {
		out = append(out, i)
	}
	sort.Ints(out)
	return out
}

type differ struct {
	a, b         Tree
	dirty        dirtySet
	atomicArrays bool
	compare      ValueDiff
}

// element is one element read at a position: its name and type, and its
// value unless it is a container read for its header only.
type element struct {
	name  string
	typ   bsoncore.Type
	value bsoncore.Value
	found bool
}

// container appends the changes inside the container at path (dotted
// prefix prefix) on both sides.
func (df *differ) container(ctx context.Context, path []int, prefix string, out *[]Change) error {
	var local []Change
	for _, i := range df.dirty.children(path) {
		child := append(append([]int(nil), path...), i)
		ea, eb, err := df.readBoth(ctx, child, false)
		if err != nil {
			return err
		}
		switch {
		case !ea.found && !eb.found:
		case ea.found && eb.found && ea.name != eb.name:
			return df.whole(ctx, path, prefix, out) // elements moved
		case ea.found && eb.found && ea.typ == eb.typ && df.descends(ea.typ):
			if err := df.container(ctx, child, JoinPath(prefix, ea.name), &local); err != nil {
				return err
			}
		default:
			name := ea.name
			if !ea.found {
				name = eb.name
			}
			if err := df.compareAt(ctx, child, JoinPath(prefix, name), &local); err != nil {
				return err
			}
		}
	}
	*out = append(*out, local...)
	return nil
}

// compareAt compares the elements at path whole (one may be missing).
func (df *differ) compareAt(ctx context.Context, path []int, dotted string, out *[]Change) error {
	ea, eb, err := df.readBoth(ctx, path, true)
	if err != nil {
		return err
	}
	switch {
	case !eb.found:
		*out = append(*out, Change{Path: dotted, From: ea.value})
	case !ea.found:
		*out = append(*out, Change{Path: dotted, To: eb.value})
	default:
		df.compare(dotted, ea.value, eb.value, out)
	}
	return nil
}

func (df *differ) descends(t bsoncore.Type) bool {
	return t == bsoncore.TypeEmbeddedDocument || (t == bsoncore.TypeArray && !df.atomicArrays)
}

// whole compares the container at path as a whole.
func (df *differ) whole(ctx context.Context, path []int, prefix string, out *[]Change) error {
	if len(path) == 0 {
		da, err := df.a.Document(ctx)
		if err != nil {
			return err
		}
		db, err := df.b.Document(ctx)
		if err != nil {
			return err
		}
		df.compare("", bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: da},
			bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: db}, out)
		return nil
	}
	ea, eb, err := df.readBoth(ctx, path, true)
	if err != nil {
		return err
	}
	if !ea.found || !eb.found {
		return fmt.Errorf("doctree: container %v vanished", path)
	}
	df.compare(prefix, ea.value, eb.value, out)
	return nil
}

// readElement reads the element at path: whole, or (a container, unless
// whole is set) only its header.
// readBoth reads the element at path on both sides.
func (df *differ) readBoth(ctx context.Context, path []int, whole bool) (element, element, error) {
	ea, err := readElement(ctx, df.a, path, whole)
	if err != nil {
		return element{}, element{}, err
	}
	eb, err := readElement(ctx, df.b, path, whole)
	return ea, eb, err
}

func readElement(ctx context.Context, t Tree, path []int, whole bool) (element, error) {
	r, err := newReader(t.m)
	if err != nil {
		return element{}, err
	}
	if err := r.seek(ctx, path); errors.Is(err, io.EOF) {
		return element{}, nil // past the end of the root
	} else if err != nil {
		return element{}, err
	}
	tok, err := r.next(ctx)
	if err != nil {
		return element{}, unexpectedEOF(err)
	}
	if tok.kind == tokEnd || comparePaths(tok.path, path) != 0 {
		return element{}, nil
	}
	name := tok.name()
	el := element{name: name, typ: bsoncore.Type(tok.data[0]), found: true}
	if tok.kind == tokHeader && !whole {
		return el, nil
	}
	buf := append([]byte(nil), tok.data...)
	if err := r.rest(ctx, tok, &buf); err != nil {
		return element{}, err
	}
	el.value = bsoncore.Value{Type: el.typ, Data: buf[1+len(name)+1:]}
	return el, nil
}

// JoinPath joins a dotted prefix and a field name.
func JoinPath(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}
