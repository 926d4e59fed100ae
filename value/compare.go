package value

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/big"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Canonical type classes in MongoDB's cross-type sort order. Types sharing a
// class (all numbers; string and symbol) compare by value. Zero is reserved
// as an "end" marker for key encodings, which must sort before every class.
const (
	ClassMinKey = iota + 1
	ClassUndefined
	ClassNull
	ClassNumber
	ClassString
	ClassObject
	ClassArray
	ClassBinData
	ClassObjectID
	ClassBool
	ClassDate
	ClassTimestamp
	ClassRegex
	ClassDBPointer
	ClassCode
	ClassCodeWithScope
	ClassMaxKey
)

// CanonicalType returns t's class. Undefined keeps its own class just below
// null, as mongod's canonicalizeBSONType does, so it never equals null.
func CanonicalType(t bsoncore.Type) int {
	switch t {
	case bsoncore.TypeMinKey:
		return ClassMinKey
	case bsoncore.TypeUndefined:
		return ClassUndefined
	case bsoncore.TypeNull:
		return ClassNull
	case bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDouble, bsoncore.TypeDecimal128:
		return ClassNumber
	case bsoncore.TypeString, bsoncore.TypeSymbol:
		return ClassString
	case bsoncore.TypeEmbeddedDocument:
		return ClassObject
	case bsoncore.TypeArray:
		return ClassArray
	case bsoncore.TypeBinary:
		return ClassBinData
	case bsoncore.TypeObjectID:
		return ClassObjectID
	case bsoncore.TypeBoolean:
		return ClassBool
	case bsoncore.TypeDateTime:
		return ClassDate
	case bsoncore.TypeTimestamp:
		return ClassTimestamp
	case bsoncore.TypeRegex:
		return ClassRegex
	case bsoncore.TypeDBPointer:
		return ClassDBPointer
	case bsoncore.TypeJavaScript:
		return ClassCode
	case bsoncore.TypeCodeWithScope:
		return ClassCodeWithScope
	case bsoncore.TypeMaxKey:
		return ClassMaxKey
	}
	return 0
}

func CmpInt[T int | int64 | uint64 | uint32](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Compare orders two BSON values as MongoDB does with the simple collation.
func Compare(a, b bsoncore.Value) int { return CompareWith(a, b, nil) }

// CompareWith orders two values, comparing strings (also inside documents
// and arrays) with coll; a nil coll is the simple (binary) collation.
func CompareWith(a, b bsoncore.Value, coll *Collation) int {
	ca, cb := CanonicalType(a.Type), CanonicalType(b.Type)
	if ca != cb {
		return CmpInt(ca, cb)
	}
	switch ca {
	case ClassNumber:
		return CompareNumbers(a, b)
	case ClassString:
		if coll != nil {
			return coll.compareStrings(RawString(a), RawString(b))
		}
		return bytes.Compare(RawString(a), RawString(b))
	case ClassCode:
		return bytes.Compare(RawString(a), RawString(b))
	case ClassObject:
		return CompareDocs(a.Data, b.Data, true, coll)
	case ClassArray:
		return CompareDocs(a.Data, b.Data, false, coll)
	case ClassBinData:
		return compareBinary(a.Data, b.Data)
	case ClassObjectID:
		return bytes.Compare(a.Data, b.Data)
	case ClassBool:
		return CmpInt(int(a.Data[0]), int(b.Data[0]))
	case ClassDate:
		return CmpInt(a.DateTime(), b.DateTime())
	case ClassTimestamp:
		at, ai := a.Timestamp()
		bt, bi := b.Timestamp()
		if c := CmpInt(at, bt); c != 0 {
			return c
		}
		return CmpInt(ai, bi)
	case ClassRegex:
		ap, ao := a.Regex()
		bp, bo := b.Regex()
		if c := CompareStrings(ap, bp); c != 0 {
			return c
		}
		return CompareStrings(ao, bo)
	case ClassDBPointer:
		// mongod compares the namespace length first, then the raw bytes.
		if c := CmpInt(len(a.Data), len(b.Data)); c != 0 {
			return c
		}
		return bytes.Compare(a.Data, b.Data)
	case ClassCodeWithScope:
		ac, as := a.CodeWithScope()
		bc, bs := b.CodeWithScope()
		if c := CompareStrings(ac, bc); c != 0 {
			return c
		}
		return CompareDocs(as, bs, true, nil)
	}
	return 0 // MinKey, MaxKey, Null, Undefined: one value per class.
}

func CompareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// CompareDocs is BSONObj::woCompare: per element the canonical type, then the
// field name, then the value; a document that runs out first sorts first.
func CompareDocs(a, b []byte, names bool, coll *Collation) int {
	ia, ib := NewIter(a), NewIter(b)
	for {
		ka, va, oka := ia.Next()
		kb, vb, okb := ib.Next()
		switch {
		case !oka && !okb:
			return 0
		case !oka:
			return -1
		case !okb:
			return 1
		}
		if c := CmpInt(CanonicalType(va.Type), CanonicalType(vb.Type)); c != 0 {
			return c
		}
		if names {
			if c := bytes.Compare(ka, kb); c != 0 {
				return c
			}
		}
		if c := CompareWith(va, vb, coll); c != 0 {
			return c
		}
	}
}

// compareBinary orders BinData by length, then subtype, then bytes.
func compareBinary(a, b []byte) int {
	la, lb := binary.LittleEndian.Uint32(a), binary.LittleEndian.Uint32(b)
	if c := CmpInt(la, lb); c != 0 {
		return c
	}
	if c := CmpInt(int(a[4]), int(b[4])); c != 0 {
		return c
	}
	return bytes.Compare(a[5:], b[5:])
}

// CompareNumbers compares numerically across int32, int64, double and
// decimal128. NaN sorts below every other number and equals NaN.
func CompareNumbers(a, b bsoncore.Value) int {
	if a.Type == bsoncore.TypeDecimal128 || b.Type == bsoncore.TypeDecimal128 {
		return CompareExact(ExactNumber(a), ExactNumber(b))
	}
	if a.Type == bsoncore.TypeDouble || b.Type == bsoncore.TypeDouble {
		if a.Type == bsoncore.TypeDouble && b.Type == bsoncore.TypeDouble {
			return CompareDoubles(a.Double(), b.Double())
		}
		if a.Type == bsoncore.TypeDouble {
			return -compareIntDouble(b.AsInt64(), a.Double())
		}
		return compareIntDouble(a.AsInt64(), b.Double())
	}
	return CmpInt(a.AsInt64(), b.AsInt64())
}

func CompareDoubles(a, b float64) int {
	an, bn := math.IsNaN(a), math.IsNaN(b)
	switch {
	case an && bn:
		return 0
	case an:
		return -1
	case bn:
		return 1
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// compareIntDouble compares exactly; converting the int64 to float64 would
// round values above 2^53.
func compareIntDouble(i int64, d float64) int {
	switch {
	case math.IsNaN(d):
		return 1
	case d >= 9223372036854775808.0:
		return -1
	case d < -9223372036854775808.0:
		return 1
	}
	t := math.Trunc(d)
	if c := CmpInt(i, int64(t)); c != 0 {
		return c
	}
	return CompareDoubles(0, d-t)
}

// Exact is a number as an exact rational, with NaN and infinities flagged.
// Decimal128 comparisons go through it; they are rare, so exactness wins
// over speed.
type Exact struct {
	NaN bool
	Inf int // -1, 0, +1
	Rat *big.Rat
}

// ExactNumber converts any BSON number to an Exact.
func ExactNumber(v bsoncore.Value) Exact {
	switch v.Type {
	case bsoncore.TypeDouble:
		d := v.Double()
		switch {
		case math.IsNaN(d):
			return Exact{NaN: true}
		case math.IsInf(d, 1):
			return Exact{Inf: 1}
		case math.IsInf(d, -1):
			return Exact{Inf: -1}
		}
		return Exact{Rat: new(big.Rat).SetFloat64(d)}
	case bsoncore.TypeDecimal128:
		h, l := v.Decimal128()
		d := bson.NewDecimal128(h, l)
		if d.IsNaN() {
			return Exact{NaN: true}
		}
		if inf := d.IsInf(); inf != 0 {
			return Exact{Inf: inf}
		}
		bi, exp, err := d.BigInt()
		if err != nil {
			return Exact{NaN: true}
		}
		return Exact{Rat: scaleRat(bi, exp)}
	}
	return Exact{Rat: new(big.Rat).SetInt64(v.AsInt64())}
}

// scaleRat returns bi * 10^exp.
func scaleRat(bi *big.Int, exp int) *big.Rat {
	p := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(absInt(exp))), nil)
	if exp >= 0 {
		return new(big.Rat).SetInt(new(big.Int).Mul(bi, p))
	}
	return new(big.Rat).SetFrac(bi, p)
}

func absInt(i int) int {
	if i < 0 {
		return -i
	}
	return i
}

func CompareExact(a, b Exact) int {
	switch {
	case a.NaN && b.NaN:
		return 0
	case a.NaN:
		return -1
	case b.NaN:
		return 1
	case a.Inf != 0 || b.Inf != 0:
		return CmpInt(a.Inf, b.Inf)
	}
	return a.Rat.Cmp(b.Rat)
}

func IsZero(v bsoncore.Value) bool {
	if v.Type == bsoncore.TypeDecimal128 {
		e := ExactNumber(v)
		return e.Rat != nil && e.Rat.Sign() == 0
	}
	return ToFloat(v) == 0
}
