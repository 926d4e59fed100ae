package doctree

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/dolthub/dolt/go/store/hash"
	"github.com/dolthub/dolt/go/store/prolly"
	"github.com/dolthub/dolt/go/store/prolly/tree"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Tree is one stored document.
type Tree struct{ m prolly.Map }

// Load opens the doctree whose root node is addr.
func Load(ctx context.Context, ns tree.NodeStore, addr hash.Hash) (Tree, error) {
	nd, err := ns.Read(ctx, addr)
	if err != nil {
		return Tree{}, fmt.Errorf("doctree %s: %w", addr, err)
	}
	return Tree{m: prolly.NewMap(nd, ns, keyDesc, valDesc)}, nil
}

// FromMap wraps a map written by Build.
func FromMap(m prolly.Map) Tree { return Tree{m: m} }

// Addr is the address of the tree's root node.
func (t Tree) Addr() hash.Hash { return t.m.HashOf() }

// Map is the tree's prolly map.
func (t Tree) Map() prolly.Map { return t.m }

// Document returns the whole document: its segments, concatenated.
func (t Tree) Document(ctx context.Context) ([]byte, error) {
	it, err := t.m.IterAll(ctx)
	if err != nil {
		return nil, err
	}
	var out []byte
	for {
		_, v, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		seg, _ := valDesc.GetBytes(0, v)
		if out == nil && len(seg) >= 4 {
			out = make([]byte, 0, binary.LittleEndian.Uint32(seg))
		}
		out = append(out, seg...)
	}
	if len(out) < 5 || int(binary.LittleEndian.Uint32(out)) != len(out) {
		return nil, fmt.Errorf("doctree %s: reassembled %d bytes, not a document", t.Addr(), len(out))
	}
	return out, nil
}

// TopElements returns the document's top-level elements and its length.
// An element that lies within one segment is a slice of the tree's node
// (nodes are never modified); one that spans segments (a large container,
// a long value cut into pieces) is copied out. It costs a walk of the
// segments, not the copy of the whole document that Document makes.
func (t Tree) TopElements(ctx context.Context) ([]bsoncore.Element, int, error) {
	it, err := t.m.IterAll(ctx)
	if err != nil {
		return nil, 0, err
	}
	var elems []bsoncore.Element
	var pending []byte // the start of an element that spans segments
	size, done := -1, false
	for {
		_, v, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, 0, err
		}
		b, _ := valDesc.GetBytes(0, v)
		if size < 0 {
			if len(b) < 4 {
				return nil, 0, fmt.Errorf("doctree %s: a first segment of %d bytes", t.Addr(), len(b))
			}
			size, b = int(binary.LittleEndian.Uint32(b)), b[4:]
		}
		owned := pending != nil // b is a buffer of ours, not the node's
		if owned {
			b, pending = append(pending, b...), nil
		}
		for len(b) > 0 && !done {
			if b[0] == 0 { // the root's terminator
				done = true
				break
			}
			e, rest, ok := bsoncore.ReadElement(b)
			switch {
			case ok:
				elems, b = append(elems, e), rest
				continue
			case owned: // the tail of our buffer: grow it in place
				pending = b
			default:
				pending = append([]byte(nil), b...)
			}
			break
		}
	}
	if !done || pending != nil || size < 5 {
		return nil, 0, fmt.Errorf("doctree %s: the segments end inside the document", t.Addr())
	}
	return elems, size, nil
}

// tokKind classifies what a reader returns.
type tokKind uint8

const (
	tokRoot   tokKind = iota // the root header
	tokScalar                // a whole scalar element
	tokHeader                // a document or array header
	tokEnd                   // a container's terminator
	tokPiece                 // piece 0 of a split scalar (the rest follow)
)

// rtok is a token as a reader yields it. path and data are valid until the
// reader moves.
type rtok struct {
	kind tokKind
	path []int
	data []byte
	size int // a container's whole size, header included
}

// name is the element's key.
func (t rtok) name() string {
	for i := 1; i < len(t.data); i++ {
		if t.data[i] == 0 {
			return string(t.data[1:i])
		}
	}
	return ""
}

// endSlot stands for "after the last child" in a slot path.
const endSlot = 1 << 62

// reader walks a tree's tokens in document order.
type reader struct {
	m     prolly.Map
	count uint64
	iter  prolly.MapIter
	seg   []byte
	off   int
	slot  []int // path of the token at off
	root  bool  // the token at off is the root header
	piece int   // >= 0: the segment is piece n of the scalar at slot
	tpath []int // the path of the last token returned
	seeks int   // nested seeks in progress
}

// maxSeekDepth bounds nested seeks: one per container level at most.
const maxSeekDepth = 4 * 128

// newReader opens a reader; it reads nothing until startAt or seek.
func newReader(m prolly.Map) (*reader, error) {
	n, err := m.Count()
	if err != nil {
		return nil, err
	}
	return &reader{m: m, count: uint64(n), slot: make([]int, 0, 16)}, nil
}

// startAt positions the reader at the start of segment ord.
func (r *reader) startAt(ctx context.Context, ord uint64) error {
	it, err := r.m.IterOrdinalRange(ctx, ord, r.count)
	if err != nil {
		return err
	}
	r.iter = it
	return r.loadSegment(ctx)
}

// loadSegment moves to the next segment and derives the state from its key.
func (r *reader) loadSegment(ctx context.Context) error {
	k, v, err := r.iter.Next(ctx)
	if err != nil {
		return err // io.EOF at the end of the document
	}
	key, _ := keyDesc.GetBytes(0, k)
	seg, _ := valDesc.GetBytes(0, v)
	return r.setSegment(key, seg)
}

// setSegment makes seg, keyed key, the reader's current segment.
func (r *reader) setSegment(key, seg []byte) error {
	r.seg, r.off = seg, 0
	path, kind, n, err := parseKey(key, r.slot)
	if err != nil {
		return err
	}
	r.slot, r.root, r.piece = path, false, -1
	switch kind {
	case kindEnd:
		r.slot = append(r.slot, endSlot)
	case kindPiece:
		r.piece = n
	default:
		r.root = len(path) == 0
	}
	return nil
}

// next returns the token at the reader and moves past it. A piece 0 token
// is followed by its other pieces, which next skips over.
func (r *reader) next(ctx context.Context) (rtok, error) {
	for r.off >= len(r.seg) || r.piece > 0 {
		if err := r.loadSegment(ctx); err != nil {
			return rtok{}, err
		}
	}
	r.tpath = append(r.tpath[:0], r.slot...)
	switch {
	case r.piece == 0:
		t := rtok{kind: tokPiece, path: r.tpath, data: r.seg}
		r.off = len(r.seg)
		return t, nil
	case r.root:
		t := rtok{kind: tokRoot, data: r.seg[:4], size: int(binary.LittleEndian.Uint32(r.seg))}
		r.off, r.root, r.slot = 4, false, append(r.slot[:0], 0)
		return t, nil
	case r.seg[r.off] == 0:
		t := rtok{kind: tokEnd, path: r.tpath, data: r.seg[r.off : r.off+1]}
		r.off++
		r.slot = r.slot[:len(r.slot)-1]
		if len(r.slot) > 0 {
			r.slot[len(r.slot)-1]++
		}
		return t, nil
	}
	size, hdr, err := elementSize(r.seg[r.off:], false)
	if err != nil {
		return rtok{}, err
	}
	if hdr > 0 {
		t := rtok{kind: tokHeader, path: r.tpath, data: r.seg[r.off : r.off+hdr], size: size}
		r.off += hdr
		r.slot = append(r.slot, 0)
		return t, nil
	}
	t := rtok{kind: tokScalar, path: r.tpath, data: r.seg[r.off : r.off+size]}
	r.off += size
	r.slot[len(r.slot)-1]++
	return t, nil
}

// rest consumes the remainder of the element t began (a container's
// children and terminator, a split scalar's other pieces), appending its
// bytes to out when out is not nil.
func (r *reader) rest(ctx context.Context, t rtok, out *[]byte) error {
	depth := len(t.path)
	switch t.kind {
	case tokScalar:
		return nil
	case tokPiece:
		return r.restOfPieces(ctx, t.path, out)
	}
	body := t.size - len(t.data)
	if r.off+body <= len(r.seg) { // it ends in this segment
		if out != nil {
			*out = append(*out, r.seg[r.off:r.off+body]...)
		}
		r.off += body
		r.slot = r.slot[:depth]
		r.slot[depth-1]++
		return nil
	}
	if out == nil {
		sibling := append([]int(nil), t.path...)
		sibling[depth-1]++
		return r.seek(ctx, sibling)
	}
	for {
		c, err := r.next(ctx)
		if err != nil {
			return unexpectedEOF(err)
		}
		*out = append(*out, c.data...)
		if c.kind == tokPiece {
			if err := r.restOfPieces(ctx, c.path, out); err != nil {
				return err
			}
		}
		if c.kind == tokEnd && len(c.path) == depth+1 {
			return nil
		}
	}
}

// restOfPieces reads pieces 1.. of the scalar at path.
func (r *reader) restOfPieces(ctx context.Context, path []int, out *[]byte) error {
	want := append([]int(nil), path...)
	for {
		err := r.loadSegment(ctx)
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("doctree: document ends inside a scalar")
		}
		if err != nil {
			return err
		}
		if r.piece <= 0 || comparePaths(r.slot, want) != 0 {
			return nil // the next token starts this segment
		}
		if out != nil {
			*out = append(*out, r.seg...)
		}
		r.off = len(r.seg)
	}
}

// seek positions the reader at the first token whose slot is at or after
// target, starting from the segment holding target's key.
func (r *reader) seek(ctx context.Context, target []int) error {
	// seek and rest call each other for containers that span segments; a
	// damaged tree must not recurse without end (a stack overflow kills
	// the process).
	if r.seeks++; r.seeks > maxSeekDepth {
		return fmt.Errorf("doctree: seek does not converge (damaged tree?)")
	}
	defer func() { r.seeks-- }()
	k, err := KeyTuple(r.m.NodeStore(), pathKey(nil, target))
	if err != nil {
		return err
	}
	ord, err := r.m.GetOrdinalForKey(ctx, k)
	if err != nil {
		return err
	}
	if ord > 0 {
		ord--
	}
	if err := r.startAt(ctx, ord); err != nil {
		return err
	}
	for {
		if r.off >= len(r.seg) || r.piece > 0 {
			if err := r.loadSegment(ctx); err != nil {
				return err
			}
			continue
		}
		if !r.root && comparePaths(r.slot, target) >= 0 {
			return nil
		}
		t, err := r.next(ctx)
		if err != nil {
			return err
		}
		if t.kind == tokHeader && !within(target, t.path) {
			if err := r.rest(ctx, t, nil); err != nil {
				return err
			}
		}
		if t.kind == tokPiece && comparePaths(r.slot, target) < 0 {
			if err := r.restOfPieces(ctx, t.path, nil); err != nil {
				return err
			}
		}
	}
}

func unexpectedEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return fmt.Errorf("doctree: document ends early")
	}
	return err
}
