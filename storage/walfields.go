package storage

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Field records (docs/format/wal.md, "Field records"): an update applied
// to a large document's top-level fields is logged as element splices of
// the document it replaces.

// encodeFieldSplices returns the record's splices (s) and the CRC-32C of
// the elements they remove (x), for splices of base, turning the rope's
// positions into the document's element indexes.
func encodeFieldSplices(base *docRope, splices []elemSplice) (s []byte, sum uint32) {
	next := 0 // the document index after the previous splice
	for _, sp := range splices {
		at := base.liveBefore(sp.at)
		s = binary.AppendUvarint(s, uint64(at-next))
		s = binary.AppendUvarint(s, uint64(sp.del))
		n := 0
		for _, e := range sp.ins {
			n += len(e)
		}
		s = binary.AppendUvarint(s, uint64(n))
		for _, e := range sp.ins {
			s = append(s, e...)
		}
		if sp.del > 0 {
			sum = crc32.Update(sum, castagnoli, base.at(sp.at))
		}
		next = at + sp.del
	}
	return s, sum
}

// applyFieldSplices rebuilds the document a field record was made for from
// its base.
func applyFieldSplices(base, s []byte, baseLen int, sum uint32) ([]byte, error) {
	if len(base) != baseLen {
		return nil, fmt.Errorf("%w: base of %d bytes, made for %d", errPatchMismatch, len(base), baseLen)
	}
	elems, err := bsoncore.Document(base).Elements()
	if err != nil {
		return nil, fmt.Errorf("%w: base: %v", errPatchMismatch, err)
	}
	out := make([]byte, 4, len(base)+len(s))
	var removed uint32
	pos := 0
	for p := s; len(p) > 0; {
		gap, del, ins, rest, ok := nextSplice(p, len(elems)-pos)
		if !ok {
			return nil, fmt.Errorf("%w: a malformed field splice", errPatchMismatch)
		}
		for _, e := range elems[pos : pos+gap] {
			out = append(out, e...)
		}
		for _, e := range elems[pos+gap : pos+gap+del] {
			removed = crc32.Update(removed, castagnoli, e)
		}
		if !wholeElements(ins) {
			return nil, fmt.Errorf("%w: a field splice inserts bytes that are not whole elements", errPatchMismatch)
		}
		out = append(out, ins...)
		pos += gap + del
		p = rest
	}
	for _, e := range elems[pos:] {
		out = append(out, e...)
	}
	if removed != sum {
		return nil, fmt.Errorf("%w: the removed elements' checksum differs", errPatchMismatch)
	}
	out = append(out, 0)
	binary.LittleEndian.PutUint32(out, uint32(len(out)))
	return out, nil
}

// wholeElements reports whether b is a run of whole BSON elements.
func wholeElements(b []byte) bool {
	for len(b) > 0 {
		e, rest, ok := bsoncore.ReadElement(b)
		if !ok || e.Validate() != nil {
			return false
		}
		b = rest
	}
	return true
}
