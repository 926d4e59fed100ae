package query

import (
	"math"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/bson"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"dumbodb/query/mongoerr"
)

// Arithmetic expressions. Integer results widen int32 -> int64 -> double
// on overflow, as aggregation does (unlike $inc, which fails).

func init() {
	regOp("$add", 0, -1, evalAdd)
	regOp("$multiply", 0, -1, evalMultiply)
	regOp("$subtract", 2, 2, evalSubtract)
	regOp("$divide", 2, 2, evalDivide)
	regOp("$mod", 2, 2, evalMod)
	regOp("$abs", 1, 1, unaryMath("$abs", math.Abs, true))
	regOp("$ceil", 1, 1, unaryMath("$ceil", math.Ceil, true))
	regOp("$floor", 1, 1, unaryMath("$floor", math.Floor, true))
	regOp("$trunc", 1, 2, unaryMath("$trunc", math.Trunc, true))
	regOp("$round", 1, 2, unaryMath("$round", math.RoundToEven, true))
	regOp("$sqrt", 1, 1, unaryMath("$sqrt", math.Sqrt, false))
	regOp("$exp", 1, 1, unaryMath("$exp", math.Exp, false))
	regOp("$ln", 1, 1, unaryMath("$ln", math.Log, false))
	regOp("$log10", 1, 1, unaryMath("$log10", math.Log10, false))
	regOp("$pow", 2, 2, evalPow)
}

// widenAdd is a+b or a*b that never fails: int64 overflow becomes double.
func widenArith(a, b bsoncore.Value, mul bool) bsoncore.Value {
	if r, ok := arith(a, b, mul); ok {
		return r
	}
	if mul {
		return mkDouble(toFloat(a) * toFloat(b))
	}
	return mkDouble(toFloat(a) + toFloat(b))
}

func evalAdd(_ *evalCtx, args []bsoncore.Value) (bsoncore.Value, error) {
	sum := mkInt32(0)
	var date *int64
	for _, a := range args {
		switch {
		case nullish(a):
			return nullValue, nil
		case a.Type == bsoncore.TypeDateTime:
			if date != nil {
				return bsoncore.Value{}, mongoerr.New(mongoerr.Code(16612), "only one date allowed in an $add expression")
			}
			d := a.DateTime()
			date = &d
		case isNumber(a):
			sum = widenArith(sum, a, false)
		default:
			return bsoncore.Value{}, mongoerr.New(mongoerr.TypeMismatch, "$add only supports numeric or date types, not %s", TypeName(a.Type))
		}
	}
	if date != nil {
		return mkDate(*date + int64(math.Round(toFloat(sum)))), nil
	}
	return sum, nil
}

func mkDate(ms int64) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeDateTime, Data: bsoncore.AppendDateTime(nil, ms)}
}

func evalMultiply(_ *evalCtx, args []bsoncore.Value) (bsoncore.Value, error) {
	prod := mkInt32(1)
	for _, a := range args {
		switch {
		case nullish(a):
			return nullValue, nil
		case !isNumber(a):
			return bsoncore.Value{}, mongoerr.New(mongoerr.Code(16555), "$multiply only supports numeric types, not %s", TypeName(a.Type))
		}
		prod = widenArith(prod, a, true)
	}
	return prod, nil
}

func evalSubtract(_ *evalCtx, a []bsoncore.Value) (bsoncore.Value, error) {
	x, y := a[0], a[1]
	switch {
	case nullish(x) || nullish(y):
		return nullValue, nil
	case isNumber(x) && isNumber(y):
		return widenArith(x, negate(y), false), nil
	case x.Type == bsoncore.TypeDateTime && y.Type == bsoncore.TypeDateTime:
		return mkInt64(x.DateTime() - y.DateTime()), nil
	case x.Type == bsoncore.TypeDateTime && isNumber(y):
		return mkDate(x.DateTime() - int64(math.Round(toFloat(y)))), nil
	}
	return bsoncore.Value{}, mongoerr.New(mongoerr.TypeMismatch, "can't $subtract %s from %s", TypeName(y.Type), TypeName(x.Type))
}

// negate returns -v, widening the one integer that has no negation.
func negate(v bsoncore.Value) bsoncore.Value {
	switch v.Type {
	case bsoncore.TypeInt32:
		if v.Int32() == math.MinInt32 {
			return mkInt64(-int64(math.MinInt32))
		}
		return mkInt32(-v.Int32())
	case bsoncore.TypeInt64:
		if v.Int64() == math.MinInt64 {
			return mkDouble(-float64(math.MinInt64))
		}
		return mkInt64(-v.Int64())
	case bsoncore.TypeDouble:
		return mkDouble(-v.Double())
	}
	r, _ := arith(v, mkInt32(-1), true)
	return r
}

func evalDivide(_ *evalCtx, a []bsoncore.Value) (bsoncore.Value, error) {
	x, y := a[0], a[1]
	switch {
	case nullish(x) || nullish(y):
		return nullValue, nil
	case !isNumber(x) || !isNumber(y):
		return bsoncore.Value{}, mongoerr.New(mongoerr.TypeMismatch, "$divide only supports numeric types, not %s and %s", TypeName(x.Type), TypeName(y.Type))
	case isZeroNumber(y):
		return bsoncore.Value{}, mongoerr.New(mongoerr.BadValue, "can't $divide by zero")
	}
	if x.Type == bsoncore.TypeDecimal128 || y.Type == bsoncore.TypeDecimal128 {
		ex, ey := ExactNumber(x), ExactNumber(y)
		if ex.Rat != nil && ey.Rat != nil {
			f, _ := ex.Rat.Quo(ex.Rat, ey.Rat).Float64()
			return decimalFromFloat(f), nil
		}
	}
	return mkDouble(toFloat(x) / toFloat(y)), nil
}

func evalMod(_ *evalCtx, a []bsoncore.Value) (bsoncore.Value, error) {
	x, y := a[0], a[1]
	switch {
	case nullish(x) || nullish(y):
		return nullValue, nil
	case !isNumber(x) || !isNumber(y):
		return bsoncore.Value{}, mongoerr.New(mongoerr.Code(16611), "$mod only supports numeric types, not %s and %s", TypeName(x.Type), TypeName(y.Type))
	case isZeroNumber(y):
		return bsoncore.Value{}, mongoerr.New(mongoerr.Code(16610), "can't $mod by 0")
	}
	switch {
	case x.Type == bsoncore.TypeDecimal128 || y.Type == bsoncore.TypeDecimal128:
		return decimalFromFloat(math.Mod(toFloat(x), toFloat(y))), nil
	case x.Type == bsoncore.TypeDouble || y.Type == bsoncore.TypeDouble:
		return mkDouble(math.Mod(toFloat(x), toFloat(y))), nil
	case x.Type == bsoncore.TypeInt32 && y.Type == bsoncore.TypeInt32:
		if y.Int32() == -1 {
			return mkInt32(0), nil
		}
		return mkInt32(x.Int32() % y.Int32()), nil
	}
	if y.AsInt64() == -1 {
		return mkInt64(0), nil
	}
	return mkInt64(x.AsInt64() % y.AsInt64()), nil
}

// unaryMath applies f to one number. keepInt keeps integer inputs integral
// ($abs, $ceil, ...), where the others always yield doubles.
func unaryMath(name string, f func(float64) float64, keepInt bool) func(*evalCtx, []bsoncore.Value) (bsoncore.Value, error) {
	return func(_ *evalCtx, a []bsoncore.Value) (bsoncore.Value, error) {
		x := a[0]
		switch {
		case nullish(x):
			return nullValue, nil
		case !isNumber(x):
			return bsoncore.Value{}, mongoerr.New(mongoerr.Code(28765), "%s only supports numeric types, not %s", name, TypeName(x.Type))
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
				return mkInt64(-int64(math.MinInt32)), nil
			}
			return mkInt32(int32(f(float64(x.Int32())))), nil
		case bsoncore.TypeInt64:
			if !keepInt {
				break
			}
			if name == "$abs" && x.Int64() == math.MinInt64 {
				return bsoncore.Value{}, mongoerr.New(mongoerr.Code(28680), "can't take $abs of long long min")
			}
			if name == "$abs" && x.Int64() < 0 {
				return mkInt64(-x.Int64()), nil
			}
			return x, nil
		case bsoncore.TypeDecimal128:
			return decimalFromFloat(f(toFloat(x))), nil
		}
		if !keepInt && (name == "$sqrt" || name == "$ln" || name == "$log10") && toFloat(x) < 0 {
			return bsoncore.Value{}, mongoerr.New(mongoerr.Code(28714), "%s's argument must be greater than or equal to 0", name)
		}
		return mkDouble(f(toFloat(x))), nil
	}
}

// roundPlaces is $round/$trunc with a place count.
func roundPlaces(name string, x, places bsoncore.Value) (bsoncore.Value, error) {
	if !isNumber(places) {
		return bsoncore.Value{}, mongoerr.New(mongoerr.Code(51081), "%s requires \"place\" argument to be an integer between -20 and 100", name)
	}
	p := int(toFloat(places))
	if p < -20 || p > 100 {
		return bsoncore.Value{}, mongoerr.New(mongoerr.Code(51083), "cannot apply %s with precision value %d value must be in [-20, 100]", name, p)
	}
	scale := math.Pow10(p)
	f := math.Trunc
	if name == "$round" {
		f = math.RoundToEven
	}
	r := f(toFloat(x)*scale) / scale
	switch x.Type {
	case bsoncore.TypeInt32:
		return mkInt32(int32(r)), nil
	case bsoncore.TypeInt64:
		return mkInt64(int64(r)), nil
	case bsoncore.TypeDecimal128:
		return decimalFromFloat(r), nil
	}
	return mkDouble(r), nil
}

func evalPow(_ *evalCtx, a []bsoncore.Value) (bsoncore.Value, error) {
	x, y := a[0], a[1]
	switch {
	case nullish(x) || nullish(y):
		return nullValue, nil
	case !isNumber(x) || !isNumber(y):
		return bsoncore.Value{}, mongoerr.New(mongoerr.Code(28762), "$pow's base must be numeric, not %s", TypeName(x.Type))
	case isZeroNumber(x) && toFloat(y) < 0:
		return bsoncore.Value{}, mongoerr.New(mongoerr.Code(28764), "$pow cannot take a base of 0 and a negative exponent")
	}
	r := math.Pow(toFloat(x), toFloat(y))
	intTypes := (x.Type == bsoncore.TypeInt32 || x.Type == bsoncore.TypeInt64) &&
		(y.Type == bsoncore.TypeInt32 || y.Type == bsoncore.TypeInt64) && toFloat(y) >= 0
	switch {
	case intTypes && x.Type == bsoncore.TypeInt32 && y.Type == bsoncore.TypeInt32 && r >= math.MinInt32 && r <= math.MaxInt32:
		return mkInt32(int32(r)), nil
	case intTypes && math.Abs(r) < 1<<63:
		return mkInt64(int64(r)), nil
	case x.Type == bsoncore.TypeDecimal128 || y.Type == bsoncore.TypeDecimal128:
		return decimalFromFloat(r), nil
	}
	return mkDouble(r), nil
}

// decimalFromFloat converts a double result back to decimal128 for
// operators computed in floating point.
func decimalFromFloat(f float64) bsoncore.Value {
	d, _ := bson.ParseDecimal128(strconv.FormatFloat(f, 'g', 15, 64))
	return decimalValue(d)
}
