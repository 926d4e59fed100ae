// Package index owns how DumboDB turns BSON values into index keys: the
// order-preserving key encoding (EncodeKey) whose byte order equals
// value.Compare, the rules for what may be an _id, secondary index specs
// (spec.go), the keys a document yields with multikey expansion (keys.go,
// entry.go, text.go, wildcard.go, hashed.go, and geo.go: 2dsphere and 2d
// keys are cells of geo) and the key ranges a predicate scans
// (bounds.go).
package index

import (
	"encoding/binary"
	"math"
	"math/big"

	"github.com/dumbodb/dumbodb/value"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// MaxKeySize caps an encoded key. Keys are stored inside Dolt tuples, whose
// fields and total tuple size are limited (tens of KB at most per chunk
// entry); 4 KiB leaves ample headroom for the rest of the tuple and matches
// the spirit of MongoDB's old 1024-byte index key limit without being
// stricter than real-world _ids need.
const MaxKeySize = 4096

// endMarker terminates documents and arrays. It is below every class byte
// (classes start at 1), so a prefix sorts before a longer value.
const endMarker = 0x00

// EncodeKey appends an order-preserving encoding of v to dst:
// bytes.Compare of two encodings equals value.Compare of the values, and
// values MongoDB considers equal (1, NumberLong(1), 1.0, NumberDecimal("1"),
// -0.0 and 0) encode identically.
//
// Numbers share one class byte and are encoded as the largest float64 not
// above the value (8 order-preserving bytes) plus a tie-break: 0x00 when
// the float64 is exact, else 0x01 and the remainder as a float64. int64
// remainders are exact. Decimal128 is best effort: two decimals that round
// to the same float64 floor and remainder (more than ~30 significant digits
// of agreement), or that lie beyond float64's range, may encode equal or
// out of order.
func EncodeKey(dst []byte, v bsoncore.Value) []byte {
	return EncodeKeyCollated(dst, v, nil)
}

// EncodeKeyCollated is EncodeKey for an index with collation c (nil:
// simple): strings and symbols, also inside documents and arrays, are
// encoded by their collation sort keys (value.Collation.AppendKey), so
// that byte order is the collation's order and strings it finds equal
// encode identically. Every other value encodes as with EncodeKey.
func EncodeKeyCollated(dst []byte, v bsoncore.Value, c *value.Collation) []byte {
	class := value.CanonicalType(v.Type)
	dst = append(dst, byte(class))
	return appendPayload(dst, class, v, c)
}

func appendPayload(dst []byte, class int, v bsoncore.Value, c *value.Collation) []byte {
	switch class {
	case value.ClassNumber:
		return appendNumber(dst, v)
	case value.ClassString:
		if c != nil {
			return c.AppendKey(dst, rawString(v.Data))
		}
		return value.AppendEscaped(dst, rawString(v.Data))
	case value.ClassCode:
		return value.AppendEscaped(dst, rawString(v.Data))
	case value.ClassObject:
		return appendDoc(dst, v.Data, true, c)
	case value.ClassArray:
		return appendDoc(dst, v.Data, false, c)
	case value.ClassBinData:
		dst = binary.BigEndian.AppendUint32(dst, binary.LittleEndian.Uint32(v.Data))
		return append(dst, v.Data[4:]...) // subtype, then bytes
	case value.ClassObjectID:
		return append(dst, v.Data...)
	case value.ClassBool:
		return append(dst, v.Data[0])
	case value.ClassDate:
		return binary.BigEndian.AppendUint64(dst, uint64(v.DateTime())^(1<<63))
	case value.ClassTimestamp:
		t, i := v.Timestamp()
		dst = binary.BigEndian.AppendUint32(dst, t)
		return binary.BigEndian.AppendUint32(dst, i)
	case value.ClassRegex:
		p, o := v.Regex()
		dst = value.AppendEscaped(dst, []byte(p))
		return value.AppendEscaped(dst, []byte(o))
	case value.ClassDBPointer:
		// Ordered by namespace length, then namespace and ObjectId bytes.
		dst = binary.BigEndian.AppendUint32(dst, binary.LittleEndian.Uint32(v.Data))
		return append(dst, v.Data[4:]...)
	case value.ClassCodeWithScope:
		code, scope := v.CodeWithScope()
		dst = value.AppendEscaped(dst, []byte(code))
		return appendDoc(dst, scope, true, nil) // scopes compare binary
	}
	return dst // MinKey, Undefined, Null, MaxKey: the class says it all.
}

func rawString(data []byte) []byte { return data[4 : len(data)-1] }

// appendDoc encodes elements as class byte, field name (objects only),
// payload; field names are C strings, so one 0x00 terminates them.
func appendDoc(dst, doc []byte, names bool, c *value.Collation) []byte {
	rem := doc[4 : len(doc)-1]
	for len(rem) > 0 {
		el, r, ok := bsoncore.ReadElement(rem)
		if !ok {
			break
		}
		rem = r
		v := el.Value()
		class := value.CanonicalType(v.Type)
		dst = append(dst, byte(class))
		if names {
			dst = append(dst, el.KeyBytes()...)
			dst = append(dst, 0)
		}
		dst = appendPayload(dst, class, v, c)
	}
	return append(dst, endMarker)
}

// appendNumber encodes floor-as-float64 plus remainder (see EncodeKey).
func appendNumber(dst []byte, v bsoncore.Value) []byte {
	switch v.Type {
	case bsoncore.TypeDouble:
		return appendFloatKey(dst, v.Double(), 0)
	case bsoncore.TypeInt32:
		return appendFloatKey(dst, float64(v.Int32()), 0)
	case bsoncore.TypeInt64:
		return appendInt64(dst, v.Int64())
	}
	return appendDecimal(dst, value.ExactNumber(v))
}

func appendInt64(dst []byte, i int64) []byte {
	f := float64(i)
	if f >= math.MaxInt64 || int64(f) > i {
		f = math.Nextafter(f, math.Inf(-1))
	}
	return appendFloatKey(dst, f, float64(i-int64(f)))
}

func appendDecimal(dst []byte, e value.Exact) []byte {
	switch {
	case e.NaN:
		return appendFloatKey(dst, math.NaN(), 0)
	case e.Inf != 0:
		return appendFloatKey(dst, math.Inf(e.Inf), 0)
	}
	f, _ := e.Rat.Float64()
	if math.IsInf(f, -1) {
		// Below float64's range: sort above -Inf, by the rounded excess.
		excess, _ := new(big.Rat).Add(e.Rat, new(big.Rat).SetFloat64(math.MaxFloat64)).Float64()
		return appendTie(appendFloat(dst, f), excess)
	}
	if math.IsInf(f, 1) || new(big.Rat).SetFloat64(f).Cmp(e.Rat) > 0 {
		f = math.Nextafter(f, math.Inf(-1))
	}
	rem, _ := new(big.Rat).Sub(e.Rat, new(big.Rat).SetFloat64(f)).Float64()
	return appendFloatKey(dst, f, rem)
}

// appendFloatKey writes f (NaN lowest, -0 as 0) and the remainder tie-break.
func appendFloatKey(dst []byte, f, rem float64) []byte {
	return appendTie(appendFloat(dst, f), rem)
}

func appendTie(dst []byte, rem float64) []byte {
	if rem == 0 {
		return append(dst, 0)
	}
	return appendFloat(append(dst, 1), rem)
}

// appendFloat writes 8 bytes whose unsigned order is float order, with NaN
// (all zero bytes) below -Inf.
func appendFloat(dst []byte, f float64) []byte {
	if math.IsNaN(f) {
		return append(dst, 0, 0, 0, 0, 0, 0, 0, 0)
	}
	if f == 0 {
		f = 0 // folds -0 into +0
	}
	bits := math.Float64bits(f)
	if bits>>63 == 1 {
		bits = ^bits
	} else {
		bits |= 1 << 63
	}
	return binary.BigEndian.AppendUint64(dst, bits)
}
