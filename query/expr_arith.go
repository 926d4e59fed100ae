package query

import (
	"math"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/bson"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/value"
)

// Arithmetic expressions. Integer results widen int32 -> int64 -> double
// on overflow, as aggregation does (unlike $inc, which fails).

// widenAdd is a+b or a*b that never fails: int64 overflow becomes double.
func widenArith(a, b bsoncore.Value, mul bool) bsoncore.Value {
	if r, ok := value.Arith(a, b, mul); ok {
		return r
	}
	if mul {
		return value.Double(value.ToFloat(a) * value.ToFloat(b))
	}
	return value.Double(value.ToFloat(a) + value.ToFloat(b))
}

func evalAdd(_ *evalCtx, args []bsoncore.Value) (bsoncore.Value, error) {
	sum := value.Int32(0)
	var date *int64
	for _, a := range args {
		switch {
		case nullish(a):
			return value.Null, nil
		case a.Type == bsoncore.TypeDateTime:
			if date != nil {
				return bsoncore.Value{}, mongoerr.New(mongoerr.Location16612, "only one date allowed in an $add expression")
			}
			d := a.DateTime()
			date = &d
		case value.IsNumber(a):
			sum = widenArith(sum, a, false)
		default:
			return bsoncore.Value{}, mongoerr.New(mongoerr.TypeMismatch, "$add only supports numeric or date types, not %s", value.TypeName(a.Type))
		}
	}
	if date != nil {
		return value.Date(*date + int64(math.Round(value.ToFloat(sum)))), nil
	}
	return sum, nil
}

func evalMultiply(_ *evalCtx, args []bsoncore.Value) (bsoncore.Value, error) {
	prod := value.Int32(1)
	for _, a := range args {
		switch {
		case nullish(a):
			return value.Null, nil
		case !value.IsNumber(a):
			return bsoncore.Value{}, mongoerr.New(mongoerr.Location16555, "$multiply only supports numeric types, not %s", value.TypeName(a.Type))
		}
		prod = widenArith(prod, a, true)
	}
	return prod, nil
}

func evalSubtract(_ *evalCtx, a []bsoncore.Value) (bsoncore.Value, error) {
	x, y := a[0], a[1]
	switch {
	case nullish(x) || nullish(y):
		return value.Null, nil
	case value.IsNumber(x) && value.IsNumber(y):
		return widenArith(x, negate(y), false), nil
	case x.Type == bsoncore.TypeDateTime && y.Type == bsoncore.TypeDateTime:
		return value.Int64(x.DateTime() - y.DateTime()), nil
	case x.Type == bsoncore.TypeDateTime && value.IsNumber(y):
		return value.Date(x.DateTime() - int64(math.Round(value.ToFloat(y)))), nil
	}
	return bsoncore.Value{}, mongoerr.New(mongoerr.TypeMismatch, "can't $subtract %s from %s", value.TypeName(y.Type), value.TypeName(x.Type))
}

// negate returns -v, widening the one integer that has no negation.
func negate(v bsoncore.Value) bsoncore.Value {
	switch v.Type {
	case bsoncore.TypeInt32:
		if v.Int32() == math.MinInt32 {
			return value.Int64(-int64(math.MinInt32))
		}
		return value.Int32(-v.Int32())
	case bsoncore.TypeInt64:
		if v.Int64() == math.MinInt64 {
			return value.Double(-float64(math.MinInt64))
		}
		return value.Int64(-v.Int64())
	case bsoncore.TypeDouble:
		return value.Double(-v.Double())
	}
	r, _ := value.Arith(v, value.Int32(-1), true)
	return r
}

func evalDivide(_ *evalCtx, a []bsoncore.Value) (bsoncore.Value, error) {
	x, y := a[0], a[1]
	switch {
	case nullish(x) || nullish(y):
		return value.Null, nil
	case !value.IsNumber(x) || !value.IsNumber(y):
		return bsoncore.Value{}, mongoerr.New(mongoerr.TypeMismatch, "$divide only supports numeric types, not %s and %s", value.TypeName(x.Type), value.TypeName(y.Type))
	case value.IsZero(y):
		return bsoncore.Value{}, mongoerr.New(mongoerr.BadValue, "can't $divide by zero")
	}
	if x.Type == bsoncore.TypeDecimal128 || y.Type == bsoncore.TypeDecimal128 {
		ex, ey := value.ExactNumber(x), value.ExactNumber(y)
		if ex.Rat != nil && ey.Rat != nil {
			f, _ := ex.Rat.Quo(ex.Rat, ey.Rat).Float64()
			return decimalFromFloat(f), nil
		}
	}
	return value.Double(value.ToFloat(x) / value.ToFloat(y)), nil
}

func evalMod(_ *evalCtx, a []bsoncore.Value) (bsoncore.Value, error) {
	x, y := a[0], a[1]
	switch {
	case nullish(x) || nullish(y):
		return value.Null, nil
	case !value.IsNumber(x) || !value.IsNumber(y):
		return bsoncore.Value{}, mongoerr.New(mongoerr.Location16611, "$mod only supports numeric types, not %s and %s", value.TypeName(x.Type), value.TypeName(y.Type))
	case value.IsZero(y):
		return bsoncore.Value{}, mongoerr.New(mongoerr.Location16610, "can't $mod by 0")
	}
	switch {
	case x.Type == bsoncore.TypeDecimal128 || y.Type == bsoncore.TypeDecimal128:
		return decimalFromFloat(math.Mod(value.ToFloat(x), value.ToFloat(y))), nil
	case x.Type == bsoncore.TypeDouble || y.Type == bsoncore.TypeDouble:
		return value.Double(math.Mod(value.ToFloat(x), value.ToFloat(y))), nil
	case x.Type == bsoncore.TypeInt32 && y.Type == bsoncore.TypeInt32:
		if y.Int32() == -1 {
			return value.Int32(0), nil
		}
		return value.Int32(x.Int32() % y.Int32()), nil
	}
	if y.AsInt64() == -1 {
		return value.Int64(0), nil
	}
	return value.Int64(x.AsInt64() % y.AsInt64()), nil
}

// unaryMath applies f to one number. keepInt keeps integer inputs integral
// ($abs, $ceil, ...), where the others always yield doubles.
func unaryMath(name string, f func(float64) float64, keepInt bool) func(*evalCtx, []bsoncore.Value) (bsoncore.Value, error) {
	return func(_ *evalCtx, a []bsoncore.Value) (bsoncore.Value, error) {
		x := a[0]
		switch {
		case nullish(x):
			return value.Null, nil
		case !value.IsNumber(x):
			return bsoncore.Value{}, mongoerr.New(mongoerr.Location28765, "%s only supports numeric types, not %s", name, value.TypeName(x.Type))
		}
		if len(a) == 2 {
			return roundPlaces(name, x, a[1])
		}
		switch x.Type {
		case bsoncore.TypeInt32:
			if !keepInt {
				break
			}
			if name == "$abs" && x.Int32() == math.MinInt32 {
				return value.Int64(-int64(math.MinInt32)), nil
			}
			return value.Int32(int32(f(float64(x.Int32())))), nil
		case bsoncore.TypeInt64:
			if !keepInt {
				break
			}
			if name == "$abs" && x.Int64() == math.MinInt64 {
				return bsoncore.Value{}, mongoerr.New(mongoerr.Location28680, "can't take $abs of long long min")
			}
			if name == "$abs" && x.Int64() < 0 {
				return value.Int64(-x.Int64()), nil
			}
			return x, nil
		case bsoncore.TypeDecimal128:
			return decimalFromFloat(f(value.ToFloat(x))), nil
		}
		if !keepInt && (name == "$sqrt" || name == "$ln" || name == "$log10") && value.ToFloat(x) < 0 {
			return bsoncore.Value{}, mongoerr.New(mongoerr.Location28714, "%s's argument must be greater than or equal to 0", name)
		}
		return value.Double(f(value.ToFloat(x))), nil
	}
}

// roundPlaces is $round/$trunc with a place count.
func roundPlaces(name string, x, places bsoncore.Value) (bsoncore.Value, error) {
	if !value.IsNumber(places) {
		return bsoncore.Value{}, mongoerr.New(mongoerr.Location51081, "%s requires \"place\" argument to be an integer between -20 and 100", name)
	}
	p := int(value.ToFloat(places))
	if p < -20 || p > 100 {
		return bsoncore.Value{}, mongoerr.New(mongoerr.Location51083, "cannot apply %s with precision value %d value must be in [-20, 100]", name, p)
	}
	scale := math.Pow10(p)
	f := math.Trunc
	if name == "$round" {
		f = math.RoundToEven
	}
	r := f(value.ToFloat(x)*scale) / scale
	switch x.Type {
	case bsoncore.TypeInt32:
		return value.Int32(int32(r)), nil
	case bsoncore.TypeInt64:
		return value.Int64(int64(r)), nil
	case bsoncore.TypeDecimal128:
		return decimalFromFloat(r), nil
	}
	return value.Double(r), nil
}

func evalPow(_ *evalCtx, a []bsoncore.Value) (bsoncore.Value, error) {
	x, y := a[0], a[1]
	switch {
	case nullish(x) || nullish(y):
		return value.Null, nil
	case !value.IsNumber(x) || !value.IsNumber(y):
		return bsoncore.Value{}, mongoerr.New(mongoerr.Location28762, "$pow's base must be numeric, not %s", value.TypeName(x.Type))
	case value.IsZero(x) && value.ToFloat(y) < 0:
		return bsoncore.Value{}, mongoerr.New(mongoerr.Location28764, "$pow cannot take a base of 0 and a negative exponent")
	}
	r := math.Pow(value.ToFloat(x), value.ToFloat(y))
	intTypes := (x.Type == bsoncore.TypeInt32 || x.Type == bsoncore.TypeInt64) &&
		(y.Type == bsoncore.TypeInt32 || y.Type == bsoncore.TypeInt64) && value.ToFloat(y) >= 0
	switch {
	case intTypes && x.Type == bsoncore.TypeInt32 && y.Type == bsoncore.TypeInt32 && r >= math.MinInt32 && r <= math.MaxInt32:
		return value.Int32(int32(r)), nil
	case intTypes && math.Abs(r) < 1<<63:
		return value.Int64(int64(r)), nil
	case x.Type == bsoncore.TypeDecimal128 || y.Type == bsoncore.TypeDecimal128:
		return decimalFromFloat(r), nil
	}
	return value.Double(r), nil
}

// decimalFromFloat converts a double result back to decimal128 for
// operators computed in floating point.
func decimalFromFloat(f float64) bsoncore.Value {
	d, _ := bson.ParseDecimal128(strconv.FormatFloat(f, 'g', 15, 64))
	return value.Decimal(d)
}
