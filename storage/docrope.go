package storage

import (
	"encoding/binary"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// docRope is a large document held as its top-level elements, each a
// slice shared with the versions it came from: an update of a few fields
// (fieldupdate.go) copies the element list and the fields it changes, not
// the document's bytes. A rope is never modified once an edit holds it.
type docRope struct {
	elems []bsoncore.Element // the top-level elements, in order
	size  int                // the document's BSON length
	// names maps the names of elems[:indexed] to their positions; the
	// elements after indexed (appended since) are searched one by one.
	// Versions whose first indexed elements stay in place share it.
	names   map[string]int
	indexed int
}

// ropeTailMax is how many appended elements a rope searches one by one
// before an update indexes them.
const ropeTailMax = 32

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
	r := &docRope{elems: elems, size: size}
	if !r.reindex() {
		return nil
	}
	return r
}

// reindex maps every element's name to its position, and reports false
// when a name repeats.
func (r *docRope) reindex() bool {
	r.names = make(map[string]int, len(r.elems))
	r.indexed = len(r.elems)
	for i, e := range r.elems {
		r.names[e.Key()] = i
	}
	return len(r.names) == len(r.elems)
}

// bytes assembles the document.
func (r *docRope) bytes() []byte {
	out := make([]byte, 4, r.size)
	binary.LittleEndian.PutUint32(out, uint32(r.size))
	for _, e := range r.elems {
		out = append(out, e...)
	}
	return append(out, 0)
}

// find returns the position of the element named name, or -1.
func (r *docRope) find(name string) int {
	for i := r.indexed; i < len(r.elems); i++ {
		if elementNamed(r.elems[i], name) {
			return i
		}
	}
	if i, ok := r.names[name]; ok {
		return i
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
		if i := r.find(n); i >= 0 && !containsInt(pos, i) {
			pos = append(pos, i)
		}
	}
	sortInts(pos)
	idx, doc := bsoncore.AppendDocumentStart(nil)
	for _, i := range pos {
		doc = append(doc, r.elems[i]...)
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

// elemSplice replaces del elements at position at (of the old rope) with
// ins, whole elements.
type elemSplice struct {
	at, del int
	ins     []bsoncore.Element
}

// splice returns the rope the splices (in position order, not
// overlapping) make. The new rope shares every element the splices keep.
func (r *docRope) splice(splices []elemSplice) *docRope {
	size, count := r.size, len(r.elems)
	for _, s := range splices {
		for _, e := range r.elems[s.at : s.at+s.del] {
			size -= len(e)
		}
		for _, e := range s.ins {
			size += len(e)
		}
		count += len(s.ins) - s.del
	}
	out := &docRope{elems: make([]bsoncore.Element, 0, count), size: size}
	pos := 0
	for _, s := range splices {
		out.elems = append(out.elems, r.elems[pos:s.at]...)
		out.elems = append(out.elems, s.ins...)
		pos = s.at + s.del
	}
	out.elems = append(out.elems, r.elems[pos:]...)
	if count-r.indexed <= ropeTailMax && r.keepsIndexed(splices) {
		out.names, out.indexed = r.names, r.indexed
	} else {
		out.reindex() // splices add only names the rope lacks: none repeats
	}
	return out
}

// keepsIndexed reports whether the splices leave every indexed name at
// its position: they replace indexed elements one for one by elements of
// the same names, and insert or remove only after them.
func (r *docRope) keepsIndexed(splices []elemSplice) bool {
	for _, s := range splices {
		if s.at >= r.indexed {
			continue
		}
		if s.del != len(s.ins) || s.at+s.del > r.indexed {
			return false
		}
		for k, e := range s.ins {
			if r.elems[s.at+k].Key() != e.Key() {
				return false
			}
		}
	}
	return true
}
