package query

import (
	"math"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/value"
)

// $bitsAllSet, $bitsAnySet, $bitsAllClear, $bitsAnyClear: bit tests on
// integral numbers (two's complement, so negative numbers have every high
// bit set) and on BinData bytes (little-endian bit order).

type bitsLeaf struct {
	positions []int
	all, set  bool
}

func bitsParser(all, set bool) fieldOp {
	return func(_ *Filter, _ string, arg bsoncore.Value) (opNode, error) {
		name := bitsName(all, set)
		positions, err := bitPositions(name, arg)
		if err != nil {
			return nil, err
		}
		return leafNode{&bitsLeaf{positions: positions, all: all, set: set}}, nil
	}
}

func bitsName(all, set bool) string {
	n := "$bitsAny"
	if all {
		n = "$bitsAll"
	}
	if set {
		return n + "Set"
	}
	return n + "Clear"
}

// bitPositions reads the operator's argument: a bitmask number, an array
// of bit positions, or BinData used as a bitmask.
func bitPositions(name string, arg bsoncore.Value) ([]int, error) {
	switch {
	case value.IsNumber(arg):
		n, exact := exactInt64(arg)
		f := value.ToFloat(arg)
		switch {
		case !exact && (f != math.Trunc(f) || math.IsInf(f, 0) || math.IsNaN(f)):
			return nil, mongoerr.New(mongoerr.FailedToParse, "Expected an integer: %s", value.FormatElem(name, arg))
		case !exact:
			return nil, mongoerr.New(mongoerr.FailedToParse, "Cannot represent as a 64-bit integer: %s", value.FormatElem(name, arg))
		case n < 0:
			return nil, mongoerr.New(mongoerr.FailedToParse, "Expected a positive number in: %s", value.FormatElem(name, arg))
		}
		mask := uint64(n)
		var out []int
		for i := 0; i < 64; i++ {
			if mask&(1<<i) != 0 {
				out = append(out, i)
			}
		}
		return out, nil
	case arg.Type == bsoncore.TypeArray:
		var out []int
		for i, v := range value.ArrayValues(arg.Data) {
			if !value.IsNumber(v) || value.ToFloat(v) != math.Trunc(value.ToFloat(v)) {
				return nil, mongoerr.New(mongoerr.BadValue, "bit positions must be an integer but got: %d: %s", i, value.Format(v))
			}
			if value.ToFloat(v) < 0 {
				return nil, mongoerr.New(mongoerr.BadValue, "bit positions must be >= 0 but got: %d: %s", i, value.Format(v))
			}
			out = append(out, int(clampFloat(value.ToFloat(v))))
		}
		return out, nil
	case arg.Type == bsoncore.TypeBinary:
		_, data := arg.Binary()
		var out []int
		for i, b := range data {
			for j := 0; j < 8; j++ {
				if b&(1<<j) != 0 {
					out = append(out, i*8+j)
				}
			}
		}
		return out, nil
	}
	return nil, mongoerr.New(mongoerr.BadValue, "%s takes an Array, a number, or a BinData but received: %s", name, value.FormatElem(name, arg))
}

func (b *bitsLeaf) matchValue(v bsoncore.Value, k value.VisitKind) bool {
	if k == value.KindMissing {
		return false
	}
	var bit func(p int) bool
	switch {
	case value.IsNumber(v):
		n, exact := exactInt64(v)
		if !exact {
			return false
		}
		bit = func(p int) bool {
			if p >= 63 {
				return n < 0
			}
			return n&(1<<p) != 0
		}
	case v.Type == bsoncore.TypeBinary:
		_, data := v.Binary()
		bit = func(p int) bool { return p/8 < len(data) && data[p/8]&(1<<(p%8)) != 0 }
	default:
		return false
	}
	for _, p := range b.positions {
		if bit(p) == b.set {
			if !b.all {
				return true
			}
		} else if b.all {
			return false
		}
	}
	return b.all
}

// exactInt64 is an integral number as an int64, read without going through
// a float (which rounds values near the int64 limits); false for a
// fraction or a number outside the int64 range.
func exactInt64(v bsoncore.Value) (int64, bool) {
	switch v.Type {
	case bsoncore.TypeInt32:
		return int64(v.Int32()), true
	case bsoncore.TypeInt64:
		return v.Int64(), true
	}
	f := value.ToFloat(v)
	if f != math.Trunc(f) || f >= 1<<63 || f < -(1<<63) {
		return 0, false
	}
	return int64(f), true
}
