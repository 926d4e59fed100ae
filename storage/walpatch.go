package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Patch records (docs/format/wal.md, "Patches"): a put that replaces a
// large document is logged as the splices that turn the old document into
// the new one, when they are much smaller than it.
const (
	// patchMinBytes: below it a whole document costs the log little.
	patchMinBytes = 16 << 10
	// patchMaxShare: a patch is logged only if it is at most this part of
	// the new document (1/4).
	patchMaxShare = 4
)

// errPatchMismatch: a patch met a document other than the one it was made
// from. The log and the replayed state disagree; recovery stops.
var errPatchMismatch = errors.New("log patch does not fit the document it applies to")

// splice replaces del bytes of the base at off with ins.
type splice struct {
	off, del int
	ins      []byte
}

// encodePatch returns the encoded splices from base to doc, or nil when
// doc is small or the patch would not be much smaller than doc.
func encodePatch(base, doc []byte) []byte {
	if len(doc) < patchMinBytes || base == nil {
		return nil
	}
	var d bsonDiff
	if !d.container(base, doc, 0) {
		return nil
	}
	limit := len(doc) / patchMaxShare
	var out []byte
	pos := 0
	for _, s := range d.splices {
		out = binary.AppendUvarint(out, uint64(s.off-pos))
		out = binary.AppendUvarint(out, uint64(s.del))
		out = binary.AppendUvarint(out, uint64(len(s.ins)))
		out = append(out, s.ins...)
		if len(out) > limit {
			return nil
		}
		pos = s.off + s.del
	}
	return out
}

// applyPatch rebuilds the document a patch was made for from its base.
func applyPatch(base, patch []byte, baseLen int, sum uint32) ([]byte, error) {
	if len(base) != baseLen {
		return nil, fmt.Errorf("%w: base of %d bytes, made for %d", errPatchMismatch, len(base), baseLen)
	}
	out := make([]byte, 0, len(base)+len(patch))
	pos := 0
	for p := patch; len(p) > 0; {
		gap, del, ins, rest, ok := nextSplice(p, len(base)-pos)
		if !ok {
			return nil, fmt.Errorf("%w: a malformed splice", errPatchMismatch)
		}
		out = append(out, base[pos:pos+gap]...)
		out = append(out, ins...)
		pos += gap + del
		p = rest
	}
	out = append(out, base[pos:]...)
	if crc32.Checksum(out, castagnoli) != sum {
		return nil, fmt.Errorf("%w: checksum differs", errPatchMismatch)
	}
	return out, nil
}

// nextSplice reads the splice at the start of p, of a patch (units:
// bytes) or a field record (units: elements): the units it keeps and
// removes of the left still unread in the base, the bytes it inserts,
// and the rest of p. ok is false for a malformed or truncated splice or
// one past the base's end.
func nextSplice(p []byte, left int) (gap, del int, ins, rest []byte, ok bool) {
	g, n1 := binary.Uvarint(p)
	d, n2 := binary.Uvarint(p[max(n1, 0):])
	n, n3 := binary.Uvarint(p[max(n1+n2, 0):])
	head := n1 + n2 + n3
	if n1 <= 0 || n2 <= 0 || n3 <= 0 || uint64(len(p)-head) < n ||
		g > uint64(left) || d > uint64(left)-g {
		return 0, 0, nil, nil, false
	}
	return int(g), int(d), p[head : head+int(n)], p[head+int(n):], true
}

// bsonDiff gathers the splices between two BSON containers, walking their
// elements in order.
type bsonDiff struct{ splices []splice }

func (d *bsonDiff) add(off, del int, ins []byte) {
	d.splices = append(d.splices, splice{off: off, del: del, ins: ins})
}

// container adds the splices turning the document or array a (at offset
// off of the base) into b. It reports false for bytes that are not BSON
// containers; the caller then logs the whole document.
func (d *bsonDiff) container(a, b []byte, off int) bool {
	if bytes.Equal(a, b) {
		return true
	}
	olds, err1 := bsoncore.Document(a).Elements()
	news, err2 := bsoncore.Document(b).Elements()
	if err1 != nil || err2 != nil {
		return false
	}
	if !bytes.Equal(a[:4], b[:4]) {
		d.add(off, 4, b[:4])
	}
	pos := off + 4 // base offset of olds[i]
	i, j := 0, 0
	var oldAt, newAt map[string]int
	for i < len(olds) && j < len(news) {
		o, n := olds[i], news[j]
		if bytes.Equal(o.KeyBytes(), n.KeyBytes()) {
			if !d.element(o, n, pos) {
				return false
			}
			pos += len(o)
			i, j = i+1, j+1
			continue
		}
		if oldAt == nil {
			oldAt, newAt = positions(olds), positions(news)
		}
		if removeFirst(o.Key(), n.Key(), i, j, oldAt, newAt) {
			d.add(pos, len(o), nil)
			pos += len(o)
			i++
		} else {
			d.add(pos, 0, n)
			j++
		}
	}
	for ; i < len(olds); i++ {
		d.add(pos, len(olds[i]), nil)
		pos += len(olds[i])
	}
	for ; j < len(news); j++ {
		d.add(pos, 0, news[j]) // before a's terminating zero
	}
	return true
}

// element adds the splices turning element o (at base offset pos) into n,
// which has the same key: none if equal, a descent if both are
// containers, else a replacement of the whole element.
func (d *bsonDiff) element(o, n bsoncore.Element, pos int) bool {
	if bytes.Equal(o, n) {
		return true
	}
	ov, nv := o.Value(), n.Value()
	if ov.Type == nv.Type && (ov.Type == bsoncore.TypeEmbeddedDocument || ov.Type == bsoncore.TypeArray) {
		return d.container(ov.Data, nv.Data, pos+len(o)-len(ov.Data))
	}
	d.add(pos, len(o), n)
	return true
}

// removeFirst decides, where olds[i] (key o) and news[j] (key n) differ,
// whether to remove the old element (true) or insert the new one: remove
// it if it is not among the new elements still to come, insert if the
// new one is not among the old ones still to come, else take whichever
// step the other element is nearer to, so that one field moved elsewhere
// costs its removal and insertion, not a replacement of every field
// between.
func removeFirst(o, n string, i, j int, oldAt, newAt map[string]int) bool {
	oNext, oLater := newAt[o]
	nNext, nLater := oldAt[n]
	oLater = oLater && oNext > j
	nLater = nLater && nNext > i
	switch {
	case !oLater:
		return true
	case !nLater:
		return false
	default:
		return oNext-j >= nNext-i
	}
}

// positions maps each field name to the index of its first element.
func positions(els []bsoncore.Element) map[string]int {
	m := make(map[string]int, len(els))
	for k, el := range els {
		if _, dup := m[el.Key()]; !dup {
			m[el.Key()] = k
		}
	}
	return m
}
