package storage

import (
	"encoding/binary"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// docRope is a large document held as its top-level elements, each a
// slice shared with the versions it came from: an update of a few fields
// (fieldupdate.go) copies the blocks of the elements it changes, not the
// document nor its element list. A rope is never modified once an edit
// holds it.
//
// Elements have positions that never move within a rope's lineage (the
// versions made from one stored document): a replaced element keeps its
// position, a removed one leaves a tombstone (nil), new ones are
// appended. So the name index is shared by every version, and a version
// costs a few kilobytes: the states kept for reads at past times hold
// one each (history.go). A checkpoint writes the document out, and the
// next update makes a fresh rope from it.
type docRope struct {
	blocks [][]bsoncore.Element // ropeBlock positions each, the last one partly
	live   []int32              // the live elements of each block
	n      int                  // positions, tombstones included
	size   int                  // the document's BSON length
	// names maps the names of the elements at positions before indexed;
	// the positions after (appended since) are searched one by one. A
	// name whose element was removed maps to its tombstone.
	names   map[string]int
	indexed int
}

const (
	// ropeBlock is how many positions a block holds: a version copies
	// ropeBlock*24 bytes for each block it changes, and the block list.
	ropeBlock = 128
	// ropeTailMax is how many appended positions a rope searches one by
	// one before a version indexes them.
	ropeTailMax = 32
)

// newRope splits doc into its top-level elements (sharing doc's bytes)
// and indexes their names. It returns nil for a document that repeats a
// top-level name: which of the two an update path means is for the whole
// document's update to say.
func newRope(doc []byte) (*docRope, error) {
	elems, err := bsoncore.Document(doc).Elements()
	if err != nil {
		return nil, fmt.Errorf("large document: %w", err)
	}
	return ropeOfElements(elems, len(doc)), nil
}

// ropeOfElements is the rope of a document of size bytes and those
// top-level elements (nil if a name repeats).
func ropeOfElements(elems []bsoncore.Element, size int) *docRope {
	r := &docRope{n: len(elems), size: size}
	for lo := 0; lo < len(elems); lo += ropeBlock {
		hi := min(lo+ropeBlock, len(elems))
		r.blocks = append(r.blocks, elems[lo:hi:hi]) // appends copy
		r.live = append(r.live, int32(hi-lo))
	}
	r.reindex()
	if len(r.names) != len(elems) {
		return nil
	}
	return r
}

// at is the element at position p (nil: removed).
func (r *docRope) at(p int) bsoncore.Element { return r.blocks[p/ropeBlock][p%ropeBlock] }

// reindex maps the name of every live element to its position.
func (r *docRope) reindex() {
	r.names = make(map[string]int, r.n)
	for p := range r.n {
		if e := r.at(p); e != nil {
			r.names[e.Key()] = p
		}
	}
	r.indexed = r.n
}

// liveBefore counts the live elements before position p: p's index in
// the document.
func (r *docRope) liveBefore(p int) int {
	n := 0
	for b := range p / ropeBlock {
		n += int(r.live[b])
	}
	if p/ropeBlock < len(r.blocks) {
		for _, e := range r.blocks[p/ropeBlock][:p%ropeBlock] {
			if e != nil {
				n++
			}
		}
	}
	return n
}

// bytes assembles the document.
func (r *docRope) bytes() []byte {
	out := make([]byte, 4, r.size)
	binary.LittleEndian.PutUint32(out, uint32(r.size))
	for _, blk := range r.blocks {
		for _, e := range blk {
			out = append(out, e...)
		}
	}
	return append(out, 0)
}

// find returns the position of the live element named name, or -1.
func (r *docRope) find(name string) int {
	for p := r.indexed; p < r.n; p++ {
		if e := r.at(p); e != nil && elementNamed(e, name) {
			return p
		}
	}
	if p, ok := r.names[name]; ok && r.at(p) != nil {
		return p
	}
	return -1
}

// elementNamed reports whether e's name is name, without allocating.
func elementNamed(e bsoncore.Element, name string) bool {
	return len(e) > len(name)+1 && string(e[1:1+len(name)]) == name && e[1+len(name)] == 0
}

// partial is the document of the rope's elements named in names, in the
// rope's order, and their positions.
func (r *docRope) partial(names []string) (bsoncore.Document, []int) {
	var pos []int
	for _, n := range names {
		if p := r.find(n); p >= 0 && !containsInt(pos, p) {
			pos = append(pos, p)
		}
	}
	sortInts(pos)
	idx, doc := bsoncore.AppendDocumentStart(nil)
	for _, p := range pos {
		doc = append(doc, r.at(p)...)
	}
	doc, _ = bsoncore.AppendDocumentEnd(doc, idx)
	return doc, pos
}

func containsInt(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// sortInts sorts a handful of positions in place.
func sortInts(s []int) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// elemSplice is one change of a rope, in positions: at a live element's
// position, del 1 and ins nil removes it, del 1 and one element of the
// same name replaces it; at the rope's end (at == n, del 0), ins are
// appended.
type elemSplice struct {
	at, del int
	ins     []bsoncore.Element
}

// splice returns the rope the splices (in position order) make. The new
// rope shares every block the splices do not touch, and the name index.
func (r *docRope) splice(splices []elemSplice) *docRope {
	out := &docRope{blocks: append([][]bsoncore.Element(nil), r.blocks...), live: append([]int32(nil), r.live...),
		n: r.n, size: r.size, names: r.names, indexed: r.indexed}
	owned := map[int]bool{} // blocks this version copied
	block := func(b int) []bsoncore.Element {
		if !owned[b] {
			nb := make([]bsoncore.Element, len(out.blocks[b]), ropeBlock)
			copy(nb, out.blocks[b])
			out.blocks[b], owned[b] = nb, true
		}
		return out.blocks[b]
	}
	for _, s := range splices {
		if s.at < r.n {
			blk := block(s.at / ropeBlock)
			out.size -= len(blk[s.at%ropeBlock])
			blk[s.at%ropeBlock] = nil
			if len(s.ins) == 1 {
				blk[s.at%ropeBlock] = s.ins[0]
				out.size += len(s.ins[0])
			} else {
				out.live[s.at/ropeBlock]--
			}
			continue
		}
		for _, e := range s.ins {
			out.add(e, block)
		}
	}
	if out.n-out.indexed > ropeTailMax {
		out.reindex()
	}
	return out
}

// heldApart is the memory r holds that next, the rope spliced from it,
// does not share: its block list, the blocks next copied with the
// elements they held that next does not, and its name index if next made
// its own. An element's bytes are counted as its length, though the
// buffer it lies in may be larger.
func (r *docRope) heldApart(next *docRope) int64 {
	const sliceHeader, ropeStruct, nameEntry = 24, 96, 48
	n := int64(ropeStruct + cap(r.blocks)*sliceHeader + cap(r.live)*4)
	if r.indexed != next.indexed {
		n += int64(len(r.names)) * nameEntry
	}
	for b, blk := range r.blocks {
		var nextBlk []bsoncore.Element
		if b < len(next.blocks) {
			nextBlk = next.blocks[b]
		}
		if len(blk) > 0 && len(nextBlk) > 0 && &blk[0] == &nextBlk[0] {
			continue // shared
		}
		n += int64(cap(blk)) * sliceHeader
		for i, e := range blk {
			if len(e) > 0 && !(i < len(nextBlk) && len(nextBlk[i]) > 0 && &e[0] == &nextBlk[i][0]) {
				n += int64(len(e))
			}
		}
	}
	return n
}

// add appends e at a new position.
func (r *docRope) add(e bsoncore.Element, block func(int) []bsoncore.Element) {
	b := r.n / ropeBlock
	if b == len(r.blocks) {
		r.blocks = append(r.blocks, make([]bsoncore.Element, 0, ropeBlock))
		r.live = append(r.live, 0)
	}
	r.blocks[b] = append(block(b), e)
	r.live[b]++
	r.n++
	r.size += len(e)
}
