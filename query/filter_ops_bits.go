package query

import (
	"math"
	"strconv"

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
	return func(_ *Filter, path string, arg bsoncore.Value) (opNode, error) {
		positions, err := bitPositions(path, bitsName(all, set), arg)
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
// of bit positions, or BinData used as a bitmask. An argument of another
// type is named by the field path it tests, as mongod names it.
func bitPositions(path, name string, arg bsoncore.Value) ([]int, error) {
	switch {
	case value.IsNumber(arg):
		n, err := nonNegativeInteger(name, arg)
		if err != nil {
			return nil, err
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
			n, err := nonNegativeInteger(strconv.Itoa(i), v)
			if err != nil {
				// mongod wraps the element's own reason as a BadValue.
				return nil, mongoerr.New(mongoerr.BadValue, "Failed to parse bit position. %s", err.Msg)
			}
			out = append(out, int(min(n, math.MaxInt32)))
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
	return nil, mongoerr.New(mongoerr.BadValue, "%s takes an Array, a number, or a BinData but received: %s", path, value.FormatElem(name, arg))
}

// nonNegativeInteger reads key: v as a whole, non-negative 64-bit number
// the way mongod's integer elements are read, each failure FailedToParse
// with its own reason: not a number, a NaN, a value no int64 holds (an
// infinity, a decimal with a fraction), a double with a fraction, or a
// negative number.
func nonNegativeInteger(key string, v bsoncore.Value) (int64, *mongoerr.Error) {
	elem := value.FormatElem(key, v)
	if !value.IsNumber(v) {
		return 0, mongoerr.New(mongoerr.FailedToParse, "Expected a number in: %s", elem)
	}
	n, exact := exactInt64(v)
	if !exact {
		f := value.ToFloat(v)
		switch {
		case v.Type == bsoncore.TypeDouble && math.IsNaN(f):
			return 0, mongoerr.New(mongoerr.FailedToParse, "Expected an integer, but found NaN in: %s", elem)
		case v.Type == bsoncore.TypeDouble && f >= -(1<<63) && f < 1<<63:
			return 0, mongoerr.New(mongoerr.FailedToParse, "Expected an integer: %s", elem)
		}
		return 0, mongoerr.New(mongoerr.FailedToParse, "Cannot represent as a 64-bit integer: %s", elem)
	}
	if n < 0 {
		return 0, mongoerr.New(mongoerr.FailedToParse, "Expected a non-negative number in: %s", elem)
	}
	return n, nil
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
