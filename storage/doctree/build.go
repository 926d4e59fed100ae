package doctree

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"github.com/dolthub/dolt/go/store/prolly"
	"github.com/dolthub/dolt/go/store/prolly/tree"
	"github.com/dolthub/dolt/go/store/val"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Segment sizes (docs/format/doctree.md).
const (
	minSegment = 512
	maxSegment = 4096
	pieceSize  = 4096
	// cutScale makes the chance of a cut after a token len(token)/1024.
	cutScale = 22
	// smallContainer: a document or array of at most this many bytes is
	// one token, so no cut falls inside it; it spares tokenizing (and
	// hashing) every element of documents made of small parts.
	smallContainer = 256
)

var (
	keyDesc  = val.NewTupleDescriptor(val.Type{Enc: val.ByteStringEnc})
	valDesc  = val.NewTupleDescriptor(val.Type{Enc: val.ByteStringEnc})
	crcTable = crc32.MakeTable(crc32.Castagnoli)
)

// segment is one map entry: the key of its first token and its bytes, a
// slice of the document.
type segment struct {
	key  []byte
	data []byte
}

// token is one run of document bytes with a position path (valid only
// during the callback).
type token struct {
	path   []int
	end    bool // a container's terminator
	header bool // a container header (root header included)
	data   []byte
}

// walkTokens calls fn for every token of doc in byte order.
func walkTokens(doc []byte, fn func(token) error) error {
	if len(doc) < 5 || int(binary.LittleEndian.Uint32(doc)) != len(doc) || doc[len(doc)-1] != 0 {
		return fmt.Errorf("doctree: not a BSON document")
	}
	if err := fn(token{header: true, data: doc[:4]}); err != nil {
		return err
	}
	path := make([]int, 0, 16)
	return walkBody(doc[4:], path, fn)
}

// walkBody walks the elements of a container body (its bytes after the
// length, terminator included).
func walkBody(body []byte, path []int, fn func(token) error) error {
	depth := len(path)
	path = append(path, 0)
	for off, i := 0, 0; ; i++ {
		if off >= len(body) {
			return fmt.Errorf("doctree: container without terminator")
		}
		path[depth] = i
		if body[off] == 0 {
			if off != len(body)-1 {
				return fmt.Errorf("doctree: bytes after a terminator")
			}
			return fn(token{path: path, end: true, data: body[off:]})
		}
		n, hdr, err := elementSize(body[off:], true)
		if err != nil {
			return err
		}
		el := body[off : off+n]
		if hdr == 0 || n <= smallContainer {
			if err := fn(token{path: path, data: el}); err != nil {
				return err
			}
		} else {
			if err := fn(token{path: path, header: true, data: el[:hdr]}); err != nil {
				return err
			}
			if err := walkBody(el[hdr:], path, fn); err != nil {
				return err
			}
		}
		off += n
	}
}

// elementSize returns the size of the element at the start of b and, for a
// document or array, the size of its header (0 for scalars). A container
// may extend past b unless complete is set.
func elementSize(b []byte, complete bool) (size, header int, err error) {
	t := bsoncore.Type(b[0])
	nameEnd := 1
	for nameEnd < len(b) && b[nameEnd] != 0 {
		nameEnd++
	}
	if nameEnd >= len(b) {
		return 0, 0, fmt.Errorf("doctree: element key without terminator")
	}
	v := b[nameEnd+1:]
	if t == bsoncore.TypeEmbeddedDocument || t == bsoncore.TypeArray {
		if len(v) < 4 {
			return 0, 0, fmt.Errorf("doctree: truncated container")
		}
		n := int(int32(binary.LittleEndian.Uint32(v)))
		if n < 5 || (complete && n > len(v)) {
			return 0, 0, fmt.Errorf("doctree: container length %d out of range", n)
		}
		return nameEnd + 1 + n, nameEnd + 1 + 4, nil
	}
	_, rest, ok := bsoncore.ReadValue(v, t)
	if !ok {
		return 0, 0, fmt.Errorf("doctree: invalid value of type %v", t)
	}
	return len(b) - len(rest), 0, nil
}

// cutAfter decides, from the token's bytes and position path alone,
// whether a segment of segLen bytes ends after it. The path is part of the
// hash because documents repeat tokens: von Neumann ordinals hold a few
// dozen distinct ones, and a hash of the bytes alone could miss all of
// them, leaving only the size limit to cut, which never resynchronises
// after a length change.
func cutAfter(tok []byte, path []int, segLen int) bool {
	if segLen >= maxSegment {
		return true
	}
	if segLen < minSegment {
		return false
	}
	limit := uint64(len(tok)) << cutScale
	return uint64(tokenHash(tok, path)) < limit
}

// tokenHash is CRC-32C of the token mixed with its path (FNV-1a style,
// 64-bit, folded to 32 bits). Part of the format: changing it changes
// every tree's chunking (though not its meaning).
func tokenHash(tok []byte, path []int) uint32 {
	h := uint64(crc32.Checksum(tok, crcTable)) ^ 0xcbf29ce484222325
	for _, i := range path {
		h = (h ^ uint64(i)) * 0x100000001b3
	}
	return uint32(h>>32) ^ uint32(h)
}

// segments splits doc into its segments, in key order.
func segments(doc []byte) ([]segment, error) {
	var out []segment
	var cur segment
	flush := func() {
		if cur.data != nil {
			out = append(out, cur)
			cur = segment{}
		}
	}
	base := 0 // offset of cur.data in doc
	err := walkTokens(doc, func(t token) error {
		start := offsetIn(doc, t.data)
		if !t.header && !t.end && len(t.data) > maxSegment {
			flush()
			key := tokenKey(t)
			for k, off := 0, 0; off < len(t.data); k, off = k+1, off+pieceSize {
				pk := appendIndex(append(append([]byte(nil), key...), pieceComp), k)
				out = append(out, segment{key: pk, data: t.data[off:min(off+pieceSize, len(t.data))]})
			}
			return nil
		}
		if cur.data == nil {
			cur.key, base = tokenKey(t), start
		}
		cur.data = doc[base : start+len(t.data)]
		if cutAfter(t.data, t.path, len(cur.data)) {
			flush()
		}
		return nil
	})
	flush()
	return out, err
}

func tokenKey(t token) []byte {
	if t.end { // its slot is the index after the last child
		return append(pathKey(nil, t.path[:len(t.path)-1]), endComp)
	}
	return pathKey(nil, t.path)
}

// offsetIn returns where sub starts inside doc (sub is a slice of doc).
func offsetIn(doc, sub []byte) int {
	return cap(doc) - cap(sub)
}

// Build writes doc as a doctree and returns its map.
func Build(ctx context.Context, ns tree.NodeStore, doc []byte) (prolly.Map, error) {
	segs, err := segments(doc)
	if err != nil {
		return prolly.Map{}, err
	}
	src := &segmentTuples{ns: ns, segs: segs}
	m, err := prolly.NewMapFromTupleIter(ctx, ns, keyDesc, valDesc, src)
	if err == nil {
		err = src.err
	}
	return m, err
}

// segmentTuples feeds segments to Dolt's chunker as tuples.
type segmentTuples struct {
	ns     tree.NodeStore
	segs   []segment
	err    error
	kb, vb *val.TupleBuilder // reused: Build recycles them
}

func (s *segmentTuples) Next(ctx context.Context) (val.Tuple, val.Tuple) {
	if len(s.segs) == 0 || s.err != nil {
		return nil, nil
	}
	seg := s.segs[0]
	s.segs = s.segs[1:]
	if s.kb == nil {
		s.kb, s.vb = val.NewTupleBuilder(keyDesc, s.ns), val.NewTupleBuilder(valDesc, s.ns)
	}
	s.kb.PutByteString(0, seg.key)
	k, err := s.kb.Build(s.ns.Pool())
	if err != nil {
		s.err = err
		return nil, nil
	}
	s.vb.PutByteString(0, seg.data)
	v, err := s.vb.Build(s.ns.Pool())
	if err != nil {
		s.err = err
		return nil, nil
	}
	return k, v
}

// KeyTuple is k as a map key of one byte string: the keys of a doctree,
// and of every map the storage engine keeps (docs/format/root.md).
func KeyTuple(ns tree.NodeStore, k []byte) (val.Tuple, error) {
	b := val.NewTupleBuilder(keyDesc, ns)
	b.PutByteString(0, k)
	return b.Build(ns.Pool())
}
