package server_test

// A seeded generator of random BSON documents for the large-document tests
// (e2e_largedoc_test.go): every BSON type with its edge values, random key
// order, nesting to MongoDB's limit, long arrays, wide documents and large
// single values, built with bsoncore so the tests can compare the bytes the
// server returns with the bytes that went in.

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dumbodb/dumbodb/internal/fuzzbson"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// ldSeedEnv overrides the generator's seed, to replay a failing run.
const ldSeedEnv = "DUMBO_LARGEDOC_SEED"

// ldMaxDepth is MongoDB's documented nesting limit of 100 levels of documents
// and arrays. Levels count from the top-level document's fields (level 1 is
// a subdocument of the top level), so the deepest value is inside 101
// documents, the top-level one included: the generous reading of the limit.
const ldMaxDepth = 100

// ldSeed returns the seed of this run (from ldSeedEnv, or the clock) and logs
// how to replay it.
func ldSeed(t *testing.T) uint64 {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv(ldSeedEnv); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: %v", ldSeedEnv, s, err)
		}
		seed = v
	}
	t.Logf("seed %d (replay with %s=%d)", seed, ldSeedEnv, seed)
	return seed
}

type ldGen struct {
	r *rand.Rand
}

func newLDGen(seed uint64) *ldGen {
	return &ldGen{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// ldTypes are all BSON types a document can hold (the deprecated ones too).
var ldTypes = fuzzbson.Types

var ldDoubles = []float64{
	0, math.Copysign(0, -1), math.NaN(), math.Float64frombits(0x7ff8000000000001), // quiet NaN, payload
	math.Float64frombits(0x7ff0000000000001), math.Float64frombits(0xfff8000000000000), // signalling, negative
	math.Inf(1), math.Inf(-1), math.MaxFloat64, -math.MaxFloat64, math.SmallestNonzeroFloat64,
	1, -1, 0.1, 1e300, 9007199254740993,
}

// ldDecimals are edge values of decimal128 as (high, low) bits, parsed once
// (ParseDecimal128 is slow).
var ldDecimals = func() [][2]uint64 {
	var out [][2]uint64
	for _, s := range []string{"0", "-0", "NaN", "-NaN", "Infinity", "-Infinity", "1.000", "-1E-6176",
		"9.999999999999999999999999999999999E+6144", "0E+300", "123456789012345678901234567890.1234"} {
		d, err := bson.ParseDecimal128(s)
		if err != nil {
			panic(err)
		}
		h, l := d.GetBytes()
		out = append(out, [2]uint64{h, l})
	}
	return out
}()

var ldBinarySubtypes = []byte{0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x80, 0xff}

var ldWords = []string{"", "a", "é", "ключ", "键", "𝄞", "x.y", "$x", "$", "0", "1", "10", "_id", "a b", "\t", "~", "-1", "00"}

// key returns a random field name: usually short ASCII, sometimes Unicode, with
// dots or a leading $, numeric (which a path index must not take for an array
// index), empty or long.
func (g *ldGen) key() string {
	switch g.r.IntN(12) {
	case 0:
		return ldWords[g.r.IntN(len(ldWords))]
	case 1:
		return ldWords[g.r.IntN(len(ldWords))] + ldWords[g.r.IntN(len(ldWords))] + strconv.Itoa(g.r.IntN(100))
	case 2:
		return strings.Repeat("k", 1+g.r.IntN(300))
	case 3:
		return strconv.Itoa(g.r.IntN(1000))
	default:
		const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_"
		b := make([]byte, 1+g.r.IntN(12))
		for i := range b {
			b[i] = letters[g.r.IntN(len(letters))]
		}
		return string(b)
	}
}

// keys hands out field names unique within one document.
type ldKeys struct {
	g    *ldGen
	seen map[string]bool
}

func (g *ldGen) keys(reserved ...string) *ldKeys {
	k := &ldKeys{g: g, seen: map[string]bool{}}
	for _, r := range reserved {
		k.seen[r] = true
	}
	return k
}

func (k *ldKeys) next() string {
	for i := 0; ; i++ {
		key := k.g.key()
		if i > 20 {
			key += "#" + strconv.Itoa(len(k.seen))
		}
		if !k.seen[key] {
			k.seen[key] = true
			return key
		}
	}
}

// text returns n bytes of valid UTF-8: mostly ASCII, some multi-byte runes and
// now and then a NUL (legal inside BSON strings).
func (g *ldGen) text(n int) string {
	b := g.bytes(n)
	for i := range b {
		b[i] = 'a' + b[i]%26
	}
	for i := 0; i < n; i += 1 + g.r.IntN(256) {
		switch r := g.r.IntN(16); {
		case r == 0 && i+4 <= n:
			copy(b[i:], "𝄞")
			i += 3
		case r == 1 && i+2 <= n:
			copy(b[i:], "é")
			i++
		case r == 2:
			b[i] = 0
		}
	}
	return string(b)
}

// cstring returns ASCII without NUL (regex patterns and options are C strings).
func (g *ldGen) cstring(n int) string {
	const chars = `abc.*+?^$\d[]()|{}-xyz/ `
	b := make([]byte, n)
	for i := range b {
		b[i] = chars[g.r.IntN(len(chars))]
	}
	return string(b)
}

func (g *ldGen) bytes(n int) []byte {
	b := make([]byte, n)
	for i := 0; i < n; i += 8 {
		var w [8]byte
		binary.LittleEndian.PutUint64(w[:], g.r.Uint64())
		copy(b[i:], w[:])
	}
	return b
}

func (g *ldGen) oid() [12]byte {
	var o [12]byte
	copy(o[:], g.bytes(12))
	return o
}

// small returns a random size, biased to small ones, of at most max.
func (g *ldGen) small(max int) int {
	if max <= 0 {
		return 0
	}
	switch g.r.IntN(8) {
	case 0:
		return 0
	case 1:
		return g.r.IntN(max + 1)
	default:
		return g.r.IntN(min(max, 24) + 1)
	}
}

// binary returns a binary payload of about n bytes of the given subtype; the
// old binary subtype 2 repeats its length inside the payload.
func (g *ldGen) binary(subtype byte, n int) []byte {
	switch subtype {
	case 0x02:
		b := binary.LittleEndian.AppendUint32(nil, uint32(n))
		return append(b, g.bytes(n)...)
	case 0x03, 0x04, 0x05:
		return g.bytes(16)
	}
	return g.bytes(n)
}

// appendScalar appends an element of a type other than document and array
// (code with scope gets a small scope); maxLen bounds its strings and
// binaries. A value that would be large is only chosen when it fits budget.
func (g *ldGen) appendScalar(dst []byte, key string, t bsoncore.Type, maxLen, depth int) []byte {
	switch t {
	case bsoncore.TypeDouble:
		if g.r.IntN(2) == 0 {
			return bsoncore.AppendDoubleElement(dst, key, ldDoubles[g.r.IntN(len(ldDoubles))])
		}
		return bsoncore.AppendDoubleElement(dst, key, math.Float64frombits(g.r.Uint64()))
	case bsoncore.TypeString:
		return bsoncore.AppendStringElement(dst, key, g.text(g.small(maxLen)))
	case bsoncore.TypeBinary:
		st := ldBinarySubtypes[g.r.IntN(len(ldBinarySubtypes))]
		return bsoncore.AppendBinaryElement(dst, key, st, g.binary(st, g.small(maxLen)))
	case bsoncore.TypeUndefined:
		return bsoncore.AppendUndefinedElement(dst, key)
	case bsoncore.TypeObjectID:
		return bsoncore.AppendObjectIDElement(dst, key, g.oid())
	case bsoncore.TypeBoolean:
		return bsoncore.AppendBooleanElement(dst, key, g.r.IntN(2) == 0)
	case bsoncore.TypeDateTime:
		dts := []int64{0, -1, math.MinInt64, math.MaxInt64, 1700000000000, int64(g.r.Uint64())}
		return bsoncore.AppendDateTimeElement(dst, key, dts[g.r.IntN(len(dts))])
	case bsoncore.TypeNull:
		return bsoncore.AppendNullElement(dst, key)
	case bsoncore.TypeRegex:
		var opts []byte
		for _, o := range "ilmsux" {
			if g.r.IntN(3) == 0 {
				opts = append(opts, byte(o))
			}
		}
		return bsoncore.AppendRegexElement(dst, key, g.cstring(g.small(min(maxLen, 200))), string(opts))
	case bsoncore.TypeDBPointer:
		return bsoncore.AppendDBPointerElement(dst, key, "db."+g.text(g.small(20)), g.oid())
	case bsoncore.TypeJavaScript:
		return bsoncore.AppendJavaScriptElement(dst, key, "function(){return "+g.text(g.small(maxLen))+"}")
	case bsoncore.TypeSymbol:
		return bsoncore.AppendSymbolElement(dst, key, g.text(g.small(maxLen)))
	case bsoncore.TypeCodeWithScope:
		scope := g.doc(depth+1, 40+g.small(200), 3)
		return bsoncore.AppendCodeWithScopeElement(dst, key, "x + "+g.text(g.small(30)), scope)
	case bsoncore.TypeInt32:
		vs := []int32{0, -1, 1, math.MinInt32, math.MaxInt32, int32(g.r.Uint32())}
		return bsoncore.AppendInt32Element(dst, key, vs[g.r.IntN(len(vs))])
	case bsoncore.TypeTimestamp:
		ts := [][2]uint32{{0, 0}, {math.MaxUint32, math.MaxUint32}, {1, 0}, {g.r.Uint32(), g.r.Uint32()}}
		v := ts[g.r.IntN(len(ts))]
		return bsoncore.AppendTimestampElement(dst, key, v[0], v[1])
	case bsoncore.TypeInt64:
		vs := []int64{0, -1, math.MinInt64, math.MaxInt64, 1 << 53, int64(g.r.Uint64())}
		return bsoncore.AppendInt64Element(dst, key, vs[g.r.IntN(len(vs))])
	case bsoncore.TypeDecimal128:
		if g.r.IntN(2) == 0 {
			d := ldDecimals[g.r.IntN(len(ldDecimals))]
			return bsoncore.AppendDecimal128Element(dst, key, d[0], d[1])
		}
		return bsoncore.AppendDecimal128Element(dst, key, g.r.Uint64(), g.r.Uint64())
	case bsoncore.TypeMinKey:
		return bsoncore.AppendMinKeyElement(dst, key)
	case bsoncore.TypeMaxKey:
		return bsoncore.AppendMaxKeyElement(dst, key)
	}
	panic(fmt.Sprintf("appendScalar of %v", t))
}

// appendValue appends one element of a random type, of at most budget bytes
// (dst is returned unchanged when nothing fits). Containers recurse with a
// share of the budget while depth (the nesting level of the element's value)
// stays within ldMaxDepth.
func (g *ldGen) appendValue(dst []byte, key string, depth, budget int) []byte {
	start := len(dst)
	headroom := budget - (2 + len(key))
	if headroom < 0 {
		return dst
	}
	t := ldTypes[g.r.IntN(len(ldTypes))]
	container := t == bsoncore.TypeEmbeddedDocument || t == bsoncore.TypeArray || t == bsoncore.TypeCodeWithScope
	if container && (depth > ldMaxDepth || headroom < 64) {
		t = bsoncore.TypeInt32
	}
	switch t {
	case bsoncore.TypeEmbeddedDocument:
		dst = bsoncore.AppendDocumentElement(dst, key, g.doc(depth, g.share(headroom), 0))
	case bsoncore.TypeArray:
		dst = bsoncore.AppendArrayElement(dst, key, g.array(depth, g.share(headroom), 0))
	default:
		dst = g.appendScalar(dst, key, t, min(headroom, 64), depth)
	}
	if len(dst)-start > budget { // a fixed-size value or a scope that did not fit
		dst = bsoncore.AppendNullElement(dst[:start], key)
		if len(dst)-start > budget {
			dst = dst[:start]
		}
	}
	return dst
}

// share picks a budget for a nested container: mostly small, sometimes most
// of what is left.
func (g *ldGen) share(headroom int) int {
	switch g.r.IntN(10) {
	case 0:
		return headroom
	case 1, 2:
		return g.r.IntN(headroom + 1)
	default:
		return min(headroom, 16+g.r.IntN(400))
	}
}

// doc returns a document of at most budget bytes at nesting level depth, of
// random elements; maxFields > 0 bounds the number of fields.
func (g *ldGen) doc(depth, budget, maxFields int) bsoncore.Document {
	budget = max(budget, 5)
	keys := g.keys()
	idx, out := bsoncore.AppendDocumentStart(nil)
	for n := 0; maxFields <= 0 || n < maxFields; n++ {
		left := budget - len(out) - 1
		if left < 8 || g.r.IntN(40) == 0 {
			break
		}
		before := len(out)
		out = g.appendValue(out, keys.next(), depth+1, left)
		if len(out) == before {
			break
		}
	}
	out, _ = bsoncore.AppendDocumentEnd(out, idx)
	return out
}

// array is doc with keys "0", "1", ...; its elements are often of one type.
func (g *ldGen) array(depth, budget, maxElems int) bsoncore.Document {
	budget = max(budget, 5)
	idx, out := bsoncore.AppendArrayStart(nil)
	uniform := g.r.IntN(3) == 0
	t := ldTypes[g.r.IntN(len(ldTypes))]
	for n := 0; maxElems <= 0 || n < maxElems; n++ {
		left := budget - len(out) - 1
		if left < 8 || g.r.IntN(60) == 0 {
			break
		}
		before := len(out)
		key := strconv.Itoa(n)
		if uniform && t != bsoncore.TypeEmbeddedDocument && t != bsoncore.TypeArray && t != bsoncore.TypeCodeWithScope {
			out = g.appendScalar(out, key, t, min(left/2, 32), depth+1)
			if len(out)-before > left {
				out = out[:before]
			}
		} else {
			out = g.appendValue(out, key, depth+1, left)
		}
		if len(out) == before {
			break
		}
	}
	out, _ = bsoncore.AppendArrayEnd(out, idx)
	return out
}

// fill returns a document (or array) of at most budget bytes, packed close to
// it: random elements, nested containers among them, until it is full.
func (g *ldGen) fill(depth, budget int, asArray bool) bsoncore.Document {
	var idx int32
	var out []byte
	if asArray {
		idx, out = bsoncore.AppendArrayStart(nil)
	} else {
		idx, out = bsoncore.AppendDocumentStart(nil)
	}
	keys := g.keys()
	for n := 0; ; n++ {
		left := budget - len(out) - 1
		if left < 32 {
			break
		}
		key := strconv.Itoa(n)
		if !asArray {
			key = keys.next()
		}
		before := len(out)
		if depth < ldMaxDepth && left > 4096 && g.r.IntN(50) == 0 {
			sub := min(left-len(key)-2, 1024+g.r.IntN(64<<10))
			if g.r.IntN(2) == 0 {
				out = bsoncore.AppendArrayElement(out, key, g.fill(depth+1, sub, true))
			} else {
				out = bsoncore.AppendDocumentElement(out, key, g.fill(depth+1, sub, false))
			}
		} else {
			out = g.appendValue(out, key, depth+1, left)
		}
		if len(out) == before {
			break
		}
	}
	if asArray {
		out, _ = bsoncore.AppendArrayEnd(out, idx)
	} else {
		out, _ = bsoncore.AppendDocumentEnd(out, idx)
	}
	return out
}

// allTypes returns a document holding every BSON type, in random order.
func (g *ldGen) allTypes(depth int) bsoncore.Document {
	keys := g.keys()
	idx, out := bsoncore.AppendDocumentStart(nil)
	for _, i := range g.r.Perm(len(ldTypes)) {
		switch t := ldTypes[i]; t {
		case bsoncore.TypeEmbeddedDocument:
			out = bsoncore.AppendDocumentElement(out, keys.next(), g.doc(depth+1, 200, 5))
		case bsoncore.TypeArray:
			out = bsoncore.AppendArrayElement(out, keys.next(), g.array(depth+1, 200, 5))
		default:
			out = g.appendScalar(out, keys.next(), t, 40, depth+1)
		}
	}
	out, _ = bsoncore.AppendDocumentEnd(out, idx)
	return out
}

// deep returns a chain of documents and arrays nested down to level
// ldMaxDepth when the chain starts at level depth; every level holds a few
// scalars around the next one.
func (g *ldGen) deep(depth int, asArray bool) bsoncore.Document {
	var idx int32
	var out []byte
	if asArray {
		idx, out = bsoncore.AppendArrayStart(nil)
	} else {
		idx, out = bsoncore.AppendDocumentStart(nil)
	}
	keys := g.keys()
	n := g.r.IntN(4)
	at := g.r.IntN(n + 1)
	for i := 0; i <= n; i++ {
		key := strconv.Itoa(i)
		if !asArray {
			key = keys.next()
		}
		switch {
		case i == at && depth < ldMaxDepth:
			if g.r.IntN(2) == 0 {
				out = bsoncore.AppendArrayElement(out, key, g.deep(depth+1, true))
			} else {
				out = bsoncore.AppendDocumentElement(out, key, g.deep(depth+1, false))
			}
		case i == at:
			out = bsoncore.AppendStringElement(out, key, "bottom")
		default:
			t := ldTypes[g.r.IntN(len(ldTypes))]
			if t == bsoncore.TypeEmbeddedDocument || t == bsoncore.TypeArray || t == bsoncore.TypeCodeWithScope {
				t = bsoncore.TypeString
			}
			out = g.appendScalar(out, key, t, 20, depth+1)
		}
	}
	if asArray {
		out, _ = bsoncore.AppendArrayEnd(out, idx)
	} else {
		out, _ = bsoncore.AppendDocumentEnd(out, idx)
	}
	return out
}

// longArray returns an array of n small elements of one or several types.
func (g *ldGen) longArray(depth, n int) bsoncore.Document {
	idx, out := bsoncore.AppendArrayStart(nil)
	mode := g.r.IntN(4)
	for i := range n {
		key := strconv.Itoa(i)
		switch mode {
		case 0:
			out = bsoncore.AppendInt32Element(out, key, int32(g.r.Uint32()))
		case 1:
			out = bsoncore.AppendStringElement(out, key, g.text(g.r.IntN(8)))
		case 2:
			d := bsoncore.NewDocumentBuilder().AppendInt32("i", int32(i)).AppendString("s", g.text(g.r.IntN(4))).Build()
			out = bsoncore.AppendDocumentElement(out, key, d)
		default:
			t := ldTypes[g.r.IntN(len(ldTypes))]
			if t == bsoncore.TypeEmbeddedDocument || t == bsoncore.TypeArray || t == bsoncore.TypeCodeWithScope {
				t = bsoncore.TypeNull
			}
			out = g.appendScalar(out, key, t, 8, depth+1)
		}
	}
	out, _ = bsoncore.AppendArrayEnd(out, idx)
	return out
}

// wide returns a document of n fields of small scalars.
func (g *ldGen) wide(depth, n int) bsoncore.Document {
	keys := g.keys()
	idx, out := bsoncore.AppendDocumentStart(nil)
	for range n {
		t := ldTypes[g.r.IntN(len(ldTypes))]
		if t == bsoncore.TypeEmbeddedDocument || t == bsoncore.TypeArray || t == bsoncore.TypeCodeWithScope {
			t = bsoncore.TypeInt64
		}
		out = g.appendScalar(out, keys.next(), t, 12, depth+1)
	}
	out, _ = bsoncore.AppendDocumentEnd(out, idx)
	return out
}

// ldDoc is a generated document and what went into it (for the log).
type ldDoc struct {
	raw      bsoncore.Document
	features []string
}

// document returns a document of exactly size bytes whose first field is
// _id: id, or just {_id: id} when size is 0. Its other top-level fields come
// in random order: every BSON type, and as the size allows a deep chain,
// a long array, large strings and binaries, a wide subdocument or many
// top-level fields, random nested content, and a string that makes the size
// exact.
func (g *ldGen) document(id bsoncore.Value, size int) ldDoc {
	return g.documentAll(id, size, false)
}

// documentAll is document; with all, it has every feature that fits, not
// some by chance.
func (g *ldGen) documentAll(id bsoncore.Value, size int, all bool) ldDoc {
	idElem := bsoncore.AppendValueElement(nil, "_id", id)
	if size == 0 {
		return ldDoc{raw: bsoncore.BuildDocument(nil, idElem), features: []string{"only _id"}}
	}
	const padKey = "~exact~"
	keys := g.keys("_id", padKey)
	var elems [][]byte
	var features []string
	used := 5 + len(idElem)
	add := func(feature string, el []byte) bool {
		if used+len(el)+len(padKey)+7 > size {
			return false
		}
		elems = append(elems, el)
		used += len(el)
		if feature != "" {
			features = append(features, feature)
		}
		return true
	}
	// addFields adds the fields of d as top-level fields, but for names taken.
	addFields := func(d bsoncore.Document) {
		els, _ := d.Elements()
		for _, el := range els {
			if !keys.seen[el.Key()] && add("", el) {
				keys.seen[el.Key()] = true
			}
		}
	}
	// Every type at the top level, and once more nested.
	addFields(g.allTypes(0))
	add("allTypes", bsoncore.AppendDocumentElement(nil, keys.next(), g.allTypes(1)))
	maybe := func(n int) bool { return all || g.r.IntN(n) == 0 }
	if all || g.r.IntN(3) != 0 {
		add("deep", bsoncore.AppendDocumentElement(nil, keys.next(), g.deep(1, false)))
	}
	if maybe(3) {
		add("deep array", bsoncore.AppendArrayElement(nil, keys.next(), g.deep(1, true)))
	}
	left := func() int { return size - used }
	if left() > 200<<10 && (all || g.r.IntN(3) != 0) {
		n := 10_000 + g.r.IntN(90_001)
		n = min(n, left()/30)
		if n >= 10_000 {
			add(fmt.Sprintf("array of %d", n), bsoncore.AppendArrayElement(nil, keys.next(), g.longArray(1, n)))
		}
	}
	// Large single values: with all, a string and a binary first.
	for k := 0; left() > 200<<10 && (all && k < 2 || g.r.IntN(2) == 0); k++ {
		n := (64 << 10) + 1 + g.r.IntN(min(left()/2, 2<<20))
		asString := g.r.IntN(2) == 0
		if all && k < 2 {
			asString = k == 0
		}
		if asString {
			add(fmt.Sprintf("string of %d", n), bsoncore.AppendStringElement(nil, keys.next(), g.text(n)))
		} else {
			st := ldBinarySubtypes[g.r.IntN(len(ldBinarySubtypes))]
			if st >= 0x03 && st <= 0x05 {
				st = 0x00
			}
			add(fmt.Sprintf("binary %#x of %d", st, n), bsoncore.AppendBinaryElement(nil, keys.next(), st, g.binary(st, n)))
		}
	}
	if left() > 100<<10 && maybe(2) {
		n := 1000 + g.r.IntN(4001)
		n = min(n, left()/40)
		if n >= 1000 {
			add(fmt.Sprintf("wide subdocument of %d", n), bsoncore.AppendDocumentElement(nil, keys.next(), g.wide(1, n)))
		}
	}
	if left() > 100<<10 && maybe(2) {
		n := 1000 + g.r.IntN(4001)
		n = min(n, left()/40)
		if n >= 1000 {
			addFields(g.wide(0, n))
			features = append(features, fmt.Sprintf("%d top-level fields", n))
		}
	}
	// Random content up to the size: nested fill blocks and loose fields.
	for left() > len(padKey)+7+64 {
		room := left() - (len(padKey) + 7)
		key := keys.next()
		var el []byte
		switch {
		case room > 1<<20 && g.r.IntN(3) == 0:
			// Now and then a large value, which keeps the biggest
			// documents quick to build.
			n := min(room/2, 64<<10+g.r.IntN(1<<20))
			if g.r.IntN(2) == 0 {
				el = bsoncore.AppendStringElement(nil, key, g.text(n))
			} else {
				el = bsoncore.AppendBinaryElement(nil, key, 0x00, g.bytes(n))
			}
		case room > 8192 && g.r.IntN(4) != 0:
			sub := min(room-len(key)-2, 4096+g.r.IntN(max(room/3, 1)))
			if g.r.IntN(3) == 0 {
				el = bsoncore.AppendArrayElement(nil, key, g.fill(1, sub, true))
			} else {
				el = bsoncore.AppendDocumentElement(nil, key, g.fill(1, sub, false))
			}
		default:
			el = g.appendValue(nil, key, 1, min(room, 512))
		}
		if len(el) == 0 || !add("", el) {
			break
		}
	}
	// The exact-size string, then everything but _id in random order.
	n := size - used - (len(padKey) + 7)
	if n < 0 {
		panic(fmt.Sprintf("generator overshot: %d bytes over %d", -n, size))
	}
	elems = append(elems, bsoncore.AppendStringElement(nil, padKey, g.text(n)))
	g.r.Shuffle(len(elems), func(i, j int) { elems[i], elems[j] = elems[j], elems[i] })
	raw := bsoncore.BuildDocument(make([]byte, 0, size), append([][]byte{idElem}, elems...)...)
	if len(raw) != size {
		panic(fmt.Sprintf("built %d bytes, want %d", len(raw), size))
	}
	keepTopLevelTimestamps(raw)
	return ldDoc{raw: raw, features: features}
}

// keepTopLevelTimestamps turns each top-level Timestamp(0, 0) of raw
// into Timestamp(1, 0) in place: an insert fills a top-level empty
// timestamp with the current time, as mongod does, and these documents
// must come back as they were sent.
func keepTopLevelTimestamps(raw []byte) {
	els, _ := bsoncore.Document(raw).Elements()
	for _, el := range els {
		if t, i, ok := el.Value().TimestampOK(); ok && t == 0 && i == 0 {
			data := el.Value().Data // a view of raw's bytes: increment, then seconds
			data[4] = 1
		}
	}
}

// ldDiff describes where got first differs from want, two documents, as a
// path and the two values; "" when they are equal.
func ldDiff(want, got []byte) string {
	if bytes.Equal(want, got) {
		return ""
	}
	if d := ldDiffDoc("", want, got); d != "" {
		return d
	}
	return fmt.Sprintf("documents of %d and %d bytes differ", len(want), len(got))
}

func ldDiffDoc(path string, want, got bsoncore.Document) string {
	we, err1 := want.Elements()
	ge, err2 := got.Elements()
	if err1 != nil || err2 != nil {
		return fmt.Sprintf("%s: unreadable (%v, %v)", path, err1, err2)
	}
	for i := 0; i < min(len(we), len(ge)); i++ {
		p := path + "." + we[i].Key()
		if we[i].Key() != ge[i].Key() {
			return fmt.Sprintf("%s: field %d is %q, want %q", path, i, ge[i].Key(), we[i].Key())
		}
		wv, gv := we[i].Value(), ge[i].Value()
		if wv.Type != gv.Type {
			return fmt.Sprintf("%s: type %v, want %v", p, gv.Type, wv.Type)
		}
		if bytes.Equal(wv.Data, gv.Data) {
			continue
		}
		if wv.Type == bsoncore.TypeEmbeddedDocument || wv.Type == bsoncore.TypeArray {
			if d := ldDiffDoc(p, wv.Data, gv.Data); d != "" {
				return d
			}
		}
		return fmt.Sprintf("%s: %s, want %s", p, ldShort(gv), ldShort(wv))
	}
	if len(we) != len(ge) {
		return fmt.Sprintf("%s: %d fields, want %d", path, len(ge), len(we))
	}
	return ""
}

func ldShort(v bsoncore.Value) string {
	s := v.String()
	if len(s) > 120 {
		s = s[:120] + fmt.Sprintf("... (%d bytes)", len(v.Data))
	}
	return s
}
