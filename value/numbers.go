package value

import (
	"math"
	"math/big"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// ToFloat converts any BSON number to float64 (decimals rounded), because
// bsoncore's AsFloat64 panics on decimal128.
func ToFloat(v bsoncore.Value) float64 {
	if v.Type != bsoncore.TypeDecimal128 {
		return v.AsFloat64()
	}
	e := ExactNumber(v)
	switch {
	case e.NaN:
		return math.NaN()
	case e.Inf != 0:
		return math.Inf(e.Inf)
	}
	f, _ := e.Rat.Float64()
	return f
}

func Int32(i int32) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, i)}
}

func Int64(i int64) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeInt64, Data: bsoncore.AppendInt64(nil, i)}
}

// Count is a counter as mongod writes one (BSONObjBuilder::appendNumber):
// an int32 when it fits, else an int64, so that JavaScript clients see a
// plain number.
func Count(n int64) bsoncore.Value {
	if n >= math.MinInt32 && n <= math.MaxInt32 {
		return Int32(int32(n))
	}
	return Int64(n)
}

func Double(f float64) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeDouble, Data: bsoncore.AppendDouble(nil, f)}
}

// Arith computes a+b (mul=false) or a*b with MongoDB's promotion rules:
// int32 widens to int64 on overflow, any double makes a double, any
// decimal makes a decimal. int64 overflow has no wider integer, and mongod
// reports it as a failure rather than silently switching to double, so
// ok=false is returned for it.
func Arith(a, b bsoncore.Value, mul bool) (bsoncore.Value, bool) {
	switch {
	case a.Type == bsoncore.TypeDecimal128 || b.Type == bsoncore.TypeDecimal128:
		return decimalArith(a, b, mul)
	case a.Type == bsoncore.TypeDouble || b.Type == bsoncore.TypeDouble:
		if mul {
			return Double(ToFloat(a) * ToFloat(b)), true
		}
		return Double(ToFloat(a) + ToFloat(b)), true
	}
	x, y := a.AsInt64(), b.AsInt64()
	r, overflow := addMul64(x, y, mul)
	if a.Type == bsoncore.TypeInt32 && b.Type == bsoncore.TypeInt32 {
		// Products of two int32s always fit in int64.
		if r >= math.MinInt32 && r <= math.MaxInt32 {
			return Int32(int32(r)), true
		}
		return Int64(r), true
	}
	if overflow {
		return bsoncore.Value{}, false
	}
	return Int64(r), true
}

func addMul64(x, y int64, mul bool) (int64, bool) {
	if !mul {
		r := x + y
		return r, (x > 0 && y > 0 && r < 0) || (x < 0 && y < 0 && r >= 0)
	}
	if x == 0 || y == 0 {
		return 0, false
	}
	r := x * y
	return r, r/y != x || (x == -1 && y == math.MinInt64) || (y == -1 && x == math.MinInt64)
}

// DecimalParts returns v as coefficient*10^exp. Doubles convert with 15
// significant digits, as mongod's Decimal128(double) does.
func DecimalParts(v bsoncore.Value) (*big.Int, int, bool) {
	switch v.Type {
	case bsoncore.TypeDecimal128:
		h, l := v.Decimal128()
		bi, exp, err := bson.NewDecimal128(h, l).BigInt()
		return bi, exp, err == nil
	case bsoncore.TypeDouble:
		d, err := bson.ParseDecimal128(strconv.FormatFloat(v.Double(), 'e', 14, 64))
		if err != nil {
			return nil, 0, false
		}
		bi, exp, err := d.BigInt()
		return bi, exp, err == nil
	}
	return big.NewInt(v.AsInt64()), 0, true
}

func decimalArith(a, b bsoncore.Value, mul bool) (bsoncore.Value, bool) {
	ca, ea, oka := DecimalParts(a)
	cb, eb, okb := DecimalParts(b)
	if !oka || !okb {
		// NaN or infinity: float arithmetic has the same IEEE semantics.
		f := ToFloat(a) + ToFloat(b)
		if mul {
			f = ToFloat(a) * ToFloat(b)
		}
		d, _ := bson.ParseDecimal128(strconv.FormatFloat(f, 'g', -1, 64))
		return Decimal(d), true
	}
	var c *big.Int
	var e int
	if mul {
		c, e = new(big.Int).Mul(ca, cb), ea+eb
	} else {
		e = min(ea, eb)
		c = new(big.Int).Add(ShiftCoefficient(ca, ea-e), ShiftCoefficient(cb, eb-e))
	}
	c, e = RoundCoefficient(c, e)
	d, ok := bson.ParseDecimal128FromBigInt(c, e)
	return Decimal(d), ok
}

func Decimal(d bson.Decimal128) bsoncore.Value {
	h, l := d.GetBytes()
	return bsoncore.Value{Type: bsoncore.TypeDecimal128, Data: bsoncore.AppendDecimal128(nil, h, l)}
}

func ShiftCoefficient(c *big.Int, n int) *big.Int {
	return new(big.Int).Mul(c, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n)), nil))
}

// RoundCoefficient rounds to decimal128's 34 digits, half to even.
func RoundCoefficient(c *big.Int, e int) (*big.Int, int) {
	k := len(new(big.Int).Abs(c).String()) - 34
	if k <= 0 {
		return c, e
	}
	p := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(k)), nil)
	q, r := new(big.Int).QuoRem(new(big.Int).Abs(c), p, new(big.Int))
	if half := r.Lsh(r, 1).Cmp(p); half > 0 || (half == 0 && q.Bit(0) == 1) {
		q.Add(q, big.NewInt(1))
	}
	if c.Sign() < 0 {
		q.Neg(q)
	}
	return RoundCoefficient(q, e+k) // a carry can add a 35th digit
}

// WholeInt64 is v as an int64 when it is a whole number in range: an
// integer, or a double or decimal without a fraction, as mongod's IDL
// parses a safeInt64 field (limit: 1.0 is 1, limit: 42.13 is refused).
func WholeInt64(v bsoncore.Value) (int64, bool) {
	switch v.Type {
	case bsoncore.TypeInt32, bsoncore.TypeInt64:
		return AsInt64(v)
	case bsoncore.TypeDouble:
		f := v.Double()
		if f != math.Trunc(f) || f >= 9.223372036854775807e18 || f < -9.223372036854775808e18 {
			return 0, false
		}
		return int64(f), true
	case bsoncore.TypeDecimal128:
		coef, exp, ok := DecimalParts(v)
		if !ok {
			return 0, false
		}
		ten := big.NewInt(10)
		for ; exp > 0; exp-- {
			coef.Mul(coef, ten)
		}
		for ; exp < 0; exp++ {
			var rem big.Int
			if coef.QuoRem(coef, ten, &rem); rem.Sign() != 0 {
				return 0, false
			}
		}
		if !coef.IsInt64() {
			return 0, false
		}
		return coef.Int64(), true
	}
	return 0, false
}

// AsInt64 reads a BSON number as an int64, as commands read their counts,
// limits and flags: doubles and decimals are truncated; false for other
// types and for doubles that are NaN or out of int64's range.
func AsInt64(v bsoncore.Value) (int64, bool) {
	switch v.Type {
	case bsoncore.TypeInt32:
		return int64(v.Int32()), true
	case bsoncore.TypeInt64:
		return v.Int64(), true
	case bsoncore.TypeDouble:
		f := v.Double()
		if f != f || f > 9.2e18 || f < -9.2e18 {
			return 0, false
		}
		return int64(f), true
	case bsoncore.TypeDecimal128:
		f, ok := v.AsFloat64OK()
		return int64(f), ok
	}
	return 0, false
}

// FloorDiv is a/b rounded towards minus infinity (Go's / truncates towards
// zero): the bin of a date before 1970 or before a reference point.
func FloorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}
