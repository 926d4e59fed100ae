package query

import (
	"math"
	"math/big"
	"math/bits"
	"sort"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/value"
)

// $bucketAuto's granularity: bucket boundaries rounded to a series of
// preferred numbers (Renard, E, 1-2-5) or to powers of two, as mongod's
// GranularityRounders. roundUp gives the smallest series number strictly
// above a value, roundDown the largest strictly below; 0 stays 0.

var preferredSeries = map[string][]float64{
	"R5":    {10, 16, 25, 40, 63},
	"R10":   {100, 125, 160, 200, 250, 315, 400, 500, 630, 800},
	"R20":   {100, 112, 125, 140, 160, 180, 200, 224, 250, 280, 315, 355, 400, 450, 500, 560, 630, 710, 800, 900},
	"R40":   {100, 106, 112, 118, 125, 132, 140, 150, 160, 170, 180, 190, 200, 212, 224, 236, 250, 265, 280, 300, 315, 355, 375, 400, 425, 450, 475, 500, 530, 560, 600, 630, 670, 710, 750, 800, 850, 900, 950},
	"R80":   {103, 109, 115, 122, 128, 136, 145, 155, 165, 175, 185, 195, 206, 218, 230, 243, 258, 272, 290, 307, 325, 345, 365, 387, 412, 437, 462, 487, 515, 545, 575, 615, 650, 690, 730, 775, 825, 875, 925, 975},
	"1-2-5": {10, 20, 50},
	"E6":    {10, 15, 22, 33, 47, 68},
	"E12":   {10, 12, 15, 18, 22, 27, 33, 39, 47, 56, 68, 82},
	"E24":   {10, 11, 12, 13, 15, 16, 18, 20, 22, 24, 27, 30, 33, 36, 39, 43, 47, 51, 56, 62, 68, 75, 82, 91},
	"E48": {100, 105, 110, 115, 121, 127, 133, 140, 147, 154, 162, 169, 178, 187, 196, 205, 215, 226, 237, 249, 261, 274, 287, 301,
		316, 332, 348, 365, 383, 402, 422, 442, 464, 487, 511, 536, 562, 590, 619, 649, 681, 715, 750, 787, 825, 866, 909, 953},
	"E96": {100, 102, 105, 107, 110, 113, 115, 118, 121, 124, 127, 130, 133, 137, 140, 143, 147, 150, 154, 158, 162, 165, 169, 174,
		178, 182, 187, 191, 196, 200, 205, 210, 215, 221, 226, 232, 237, 243, 249, 255, 261, 267, 274, 280, 287, 294, 301, 309,
		316, 324, 332, 340, 348, 357, 365, 374, 383, 392, 402, 412, 422, 432, 442, 453, 464, 475, 487, 499, 511, 523, 536, 549,
		562, 576, 590, 604, 619, 634, 649, 665, 681, 698, 715, 732, 750, 768, 787, 806, 825, 845, 866, 887, 909, 931, 953, 976},
	"E192": {100, 101, 102, 104, 105, 106, 107, 109, 110, 111, 113, 114, 115, 117, 118, 120, 121, 123,
		124, 126, 127, 129, 130, 132, 133, 135, 137, 138, 140, 142, 143, 145, 147, 149, 150, 152,
		154, 156, 158, 160, 162, 164, 165, 167, 169, 172, 174, 176, 178, 180, 182, 184, 187, 189,
		191, 193, 196, 198, 200, 203, 205, 208, 210, 213, 215, 218, 221, 223, 226, 229, 232, 234,
		237, 240, 243, 246, 249, 252, 255, 258, 261, 264, 267, 271, 274, 277, 280, 284, 287, 291,
		294, 298, 301, 305, 309, 312, 316, 320, 324, 328, 332, 336, 340, 344, 348, 352, 357, 361,
		365, 370, 374, 379, 383, 388, 392, 397, 402, 407, 412, 417, 422, 427, 432, 437, 442, 448,
		453, 459, 464, 470, 475, 481, 487, 493, 499, 505, 511, 517, 523, 530, 536, 542, 549, 556,
		562, 569, 576, 583, 590, 597, 604, 612, 619, 626, 634, 642, 649, 657, 665, 673, 681, 690,
		698, 706, 715, 723, 732, 741, 750, 759, 768, 777, 787, 796, 806, 816, 825, 835, 845, 856,
		866, 876, 887, 898, 909, 920, 931, 942, 953, 965, 976, 988},
}

// granularityRounder rounds by series (nil for POWERSOF2).
type granularityRounder struct {
	series []float64
}

func newGranularityRounder(v bsoncore.Value) (*granularityRounder, error) {
	if v.Type != bsoncore.TypeString {
		return nil, mongoerr.New(mongoerr.Location40261, "$bucketAuto 'granularity' field must be a string, but found type: %s.", value.TypeName(v.Type))
	}
	name := v.StringValue()
	if name == "POWERSOF2" {
		return &granularityRounder{}, nil
	}
	s, ok := preferredSeries[name]
	if !ok {
		return nil, mongoerr.New(mongoerr.Location40257, "Unknown rounding granularity '%s'", name)
	}
	return &granularityRounder{series: s}, nil
}

// checkKey is mongod's check of every groupBy value under a granularity.
func (r *granularityRounder) checkKey(k bsoncore.Value) error {
	if !value.IsNumber(k) {
		t := k.Type
		if t == 0 {
			return mongoerr.New(mongoerr.Location40258, "$bucketAuto can specify a 'granularity' with numeric boundaries only, but found a value with type: missing")
		}
		return mongoerr.New(mongoerr.Location40258, "$bucketAuto can specify a 'granularity' with numeric boundaries only, but found a value with type: %s", value.TypeName(t))
	}
	f := value.ToFloat(k)
	if math.IsNaN(f) {
		return mongoerr.New(mongoerr.Location40259, "$bucketAuto can specify a 'granularity' with numeric boundaries only, but found a NaN")
	}
	if f < 0 {
		return mongoerr.New(mongoerr.Location40260, "$bucketAuto can specify a 'granularity' with non-negative numbers only, but found a negative number")
	}
	return nil
}

func (r *granularityRounder) check(v bsoncore.Value) error {
	// mongod's two rounders have codes of their own: not a number, NaN,
	// negative.
	codes := [3]mongoerr.Code{mongoerr.Location40262, mongoerr.Location40263, mongoerr.Location40268}
	if r.series == nil {
		codes = [3]mongoerr.Code{mongoerr.Location40265, mongoerr.Location40266, mongoerr.Location40267}
	}
	switch {
	case !value.IsNumber(v):
		return mongoerr.New(codes[0], "A granularity rounder can only round numeric values, but found type: %s", value.TypeName(v.Type))
	case math.IsNaN(value.ToFloat(v)):
		return mongoerr.New(codes[1], "A granularity rounder cannot round NaN")
	case value.ToFloat(v) < 0:
		return mongoerr.New(codes[2], "A granularity rounder can only round non-negative numbers")
	}
	return nil
}

func (r *granularityRounder) roundUp(v bsoncore.Value) (bsoncore.Value, error) {
	return r.round(v, true)
}

func (r *granularityRounder) roundDown(v bsoncore.Value) (bsoncore.Value, error) {
	return r.round(v, false)
}

// round is roundUp (up) or roundDown of v.
func (r *granularityRounder) round(v bsoncore.Value, up bool) (bsoncore.Value, error) {
	if err := r.check(v); err != nil {
		return bsoncore.Value{}, err
	}
	if value.ToFloat(v) == 0 {
		return v, nil
	}
	if r.series == nil {
		return r.pow2(v, up), nil
	}
	if v.Type == bsoncore.TypeDecimal128 {
		return r.roundDecimal(v, up), nil
	}
	if up {
		return value.Double(r.seriesUp(value.ToFloat(v))), nil
	}
	return value.Double(r.seriesDown(value.ToFloat(v))), nil
}

// seriesUp is the smallest series number strictly above a positive number.
func (r *granularityRounder) seriesUp(number float64) float64 {
	s := r.series
	mult := 1.0
	for number >= s[len(s)-1]*mult {
		mult *= 10
	}
	for number < s[0]*mult {
		prevMin := s[0] * mult
		mult /= 10
		if number >= s[len(s)-1]*mult {
			return prevMin
		}
	}
	i := sort.Search(len(s), func(i int) bool { return number < s[i]*mult })
	return s[i] * mult
}

// seriesDown is the largest series number strictly below a positive number.
func (r *granularityRounder) seriesDown(number float64) float64 {
	s := r.series
	mult := 1.0
	for number <= s[0]*mult {
		mult /= 10
	}
	for number > s[len(s)-1]*mult {
		prevMax := s[len(s)-1] * mult
		mult *= 10
		if number <= s[0]*mult {
			return prevMax
		}
	}
	i := sort.Search(len(s), func(i int) bool { return s[i]*mult >= number })
	return s[i-1] * mult
}

// pow2 is the power of two strictly above (up) or below v, typed as
// mongod's {$pow: [2, exp]}: an int or long for integer input with a
// non-negative exponent, else a double.
func (r *granularityRounder) pow2(v bsoncore.Value, up bool) bsoncore.Value {
	var exp int
	switch v.Type {
	case bsoncore.TypeInt32, bsoncore.TypeInt64:
		n, _ := v.AsInt64OK()
		lz := bits.LeadingZeros64(uint64(n))
		if up {
			exp = 63 - lz + 1
		} else if lz+bits.TrailingZeros64(uint64(n)) == 63 {
			exp = 63 - lz - 1
		} else {
			exp = 63 - lz
		}
		switch {
		case exp < 0:
			return value.Double(math.Pow(2, float64(exp)))
		case exp < 31:
			return value.Int32(int32(1) << exp)
		case exp < 63:
			return value.Int64(int64(1) << exp)
		}
		return value.Double(math.Pow(2, float64(exp)))
	}
	f := value.ToFloat(v)
	if up {
		exp = int(math.Floor(math.Log2(f)) + 1)
	} else {
		exp = int(math.Ceil(math.Log2(f)) - 1)
	}
	if v.Type == bsoncore.TypeDecimal128 {
		// {$pow: [2, <decimal exponent>]} is a decimal: 2^exp, or
		// 5^-exp * 10^exp for a negative exponent, exact up to 34 digits.
		// (The exponent comes from the float64 logarithm.)
		if exp >= 0 {
			return decimalFromParts(new(big.Int).Lsh(big.NewInt(1), uint(exp)), 0)
		}
		return decimalFromParts(new(big.Int).Exp(big.NewInt(5), big.NewInt(int64(-exp)), nil), exp)
	}
	return value.Double(math.Pow(2, float64(exp)))
}

// roundDecimal is roundUp (up) or roundDown of a positive Decimal128 by the
// series, as mongod does for decimals: the boundary is a Decimal128, the
// series number times a power of ten, exact (0.47, not the double
// 0.47000000000000003). Comparisons are exact, on rationals; the series
// number s[i]*10^k is kept as the pair (i, k).
func (r *granularityRounder) roundDecimal(v bsoncore.Value, up bool) bsoncore.Value {
	e := value.ExactNumber(v)
	if e.Rat == nil {
		return v // +Infinity: no series number lies beyond it
	}
	number, s := e.Rat, r.series
	cmp := func(i, k int) int { return number.Cmp(seriesRat(s[i], k)) } // number vs s[i]*10^k
	k := 0
	if up {
		for cmp(len(s)-1, k) >= 0 {
			k++
		}
		for cmp(0, k) < 0 {
			k--
			if cmp(len(s)-1, k) >= 0 {
				return seriesDecimal(s[0], k+1)
			}
		}
		i := sort.Search(len(s), func(i int) bool { return cmp(i, k) < 0 })
		return seriesDecimal(s[i], k)
	}
	for cmp(0, k) <= 0 {
		k--
	}
	for cmp(len(s)-1, k) > 0 {
		k++
		if cmp(0, k) <= 0 {
			return seriesDecimal(s[len(s)-1], k-1)
		}
	}
	i := sort.Search(len(s), func(i int) bool { return cmp(i, k) <= 0 })
	return seriesDecimal(s[i-1], k)
}

func seriesRat(n float64, k int) *big.Rat {
	r := new(big.Rat).SetInt64(int64(n))
	if k >= 0 {
		return r.Mul(r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(k)), nil)))
	}
	return r.Quo(r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(-k)), nil)))
}

// seriesDecimal is the Decimal128 n*10^k, written without trailing zeros
// after the point (0.1, 0.47, 40, 6300).
func seriesDecimal(n float64, k int) bsoncore.Value {
	return decimalFromParts(big.NewInt(int64(n)), k)
}

func decimalFromParts(c *big.Int, k int) bsoncore.Value {
	ten := big.NewInt(10)
	for k < 0 && new(big.Int).Rem(c, ten).Sign() == 0 {
		c = new(big.Int).Quo(c, ten)
		k++
	}
	if k > 0 {
		c, k = value.ShiftCoefficient(c, k), 0
	}
	c, k = value.RoundCoefficient(c, k)
	d, _ := bson.ParseDecimal128FromBigInt(c, k)
	return value.Decimal(d)
}
