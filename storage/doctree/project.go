package doctree

import (
	"context"
	"encoding/binary"
	"fmt"
	"strings"
)

// Fields is the set of dotted paths a partial read keeps. A field that is
// kept has all of its value; an array on a path is kept whole.
type Fields struct {
	whole    bool
	children map[string]*Fields
}

// NewFields builds the set of paths; "" or a nil list keeps everything.
func NewFields(paths []string) *Fields {
	root := &Fields{children: map[string]*Fields{}}
	for _, p := range paths {
		if p == "" {
			return &Fields{whole: true}
		}
		root.add(strings.Split(p, "."))
	}
	return root
}

func (f *Fields) add(parts []string) {
	if f.whole {
		return
	}
	if len(parts) == 0 {
		f.whole, f.children = true, nil
		return
	}
	c := f.children[parts[0]]
	if c == nil {
		c = &Fields{children: map[string]*Fields{}}
		f.children[parts[0]] = c
	}
	c.add(parts[1:])
}

// Whole reports whether the set keeps the whole document.
func (f *Fields) Whole() bool { return f == nil || f.whole }

// Project returns a document holding only the fields f keeps, in document
// order; it reads only the segments those fields (and the keys of the
// elements before them in each container) lie in.
func (t Tree) Project(ctx context.Context, f *Fields) ([]byte, error) {
	if f.Whole() {
		return t.Document(ctx)
	}
	r, err := newReader(t.m)
	if err == nil {
		err = r.startAt(ctx, 0)
	}
	if err != nil {
		return nil, err
	}
	if tok, err := r.next(ctx); err != nil || tok.kind != tokRoot {
		return nil, fmt.Errorf("doctree %s: no root header: %v", t.Addr(), err)
	}
	out := make([]byte, 4, 256)
	if out, err = r.projectBody(ctx, f, out, nil); err != nil {
		return nil, err
	}
	binary.LittleEndian.PutUint32(out, uint32(len(out)))
	return out, nil
}

// projectBody copies the kept elements of the container the reader is in,
// and its terminator, to out.
//
// It stops reading a container once every name f keeps there was found:
// with duplicate names (which MongoDB's drivers do not produce) only the
// first of each is kept, as a look-up by name would find.
func (r *reader) projectBody(ctx context.Context, f *Fields, out []byte, container []int) ([]byte, error) {
	found := make(map[string]bool, len(f.children))
	for {
		if len(found) == len(f.children) {
			return append(out, 0), r.skipRest(ctx, container)
		}
		tok, err := r.next(ctx)
		if err != nil {
			return nil, unexpectedEOF(err)
		}
		if tok.kind == tokEnd {
			return append(out, 0), nil
		}
		name := tok.name()
		sub, kept := f.children[name]
		if found[name] {
			kept = false
		} else if kept {
			found[name] = true
		}
		switch {
		case !kept:
			err = r.rest(ctx, tok, nil)
		case sub.whole || tok.kind != tokHeader || tok.data[0] == 0x04:
			out = append(out, tok.data...)
			err = r.rest(ctx, tok, &out)
		default:
			start := len(out) + len(tok.data) - 4
			out = append(out, tok.data...)
			if out, err = r.projectBody(ctx, sub, out, append([]int(nil), tok.path...)); err == nil {
				binary.LittleEndian.PutUint32(out[start:], uint32(len(out)-start))
			}
		}
		if err != nil {
			return nil, err
		}
	}
}

// skipRest moves the reader past the rest of the container at path (the
// root: nothing follows it).
func (r *reader) skipRest(ctx context.Context, container []int) error {
	if len(container) == 0 {
		return nil
	}
	sibling := append([]int(nil), container...)
	sibling[len(sibling)-1]++
	return r.seek(ctx, sibling)
}
