package index

import (
	"bytes"
	"math"
	"sort"

	"github.com/dumbodb/dumbodb/value"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// FieldInterval is a set of values of one key field as a range of their
// encodings: from Lo (or, with LoAfter, from above every encoding Lo
// prefixes) to Hi (with HiThrough, including every encoding Hi prefixes).
// Lo and Hi are full value encodings or bare class bytes (type bracketing).
type FieldInterval struct {
	Lo, Hi             []byte
	LoAfter, HiThrough bool
	// LoText and HiText describe the ends for explain.
	LoText, HiText string
}

// FullInterval is every value: [MinKey, MaxKey].
func FullInterval() FieldInterval {
	return FieldInterval{HiThrough: true, LoText: "MinKey", HiText: "MaxKey"}
}

// PointInterval is the values equal to v.
func PointInterval(v bsoncore.Value, text string) FieldInterval {
	return CollatedPointInterval(v, nil, text)
}

// CollatedPointInterval is the values equal to v under collation c, in the
// key space of an index with that collation (nil: simple).
func CollatedPointInterval(v bsoncore.Value, c *value.Collation, text string) FieldInterval {
	k := EncodeKeyCollated(nil, v, c)
	return FieldInterval{Lo: k, Hi: k, HiThrough: true, LoText: text, HiText: text}
}

// RangeInterval is $gt/$gte (lower) or $lt/$lte (!lower) of v, bracketed to
// v's type class as MongoDB's comparisons are.
func RangeInterval(v bsoncore.Value, lower, inclusive bool, text string) FieldInterval {
	return CollatedRangeInterval(v, nil, lower, inclusive, text)
}

// CollatedRangeInterval is RangeInterval under collation c, in the key
// space of an index with that collation (nil: simple).
func CollatedRangeInterval(v bsoncore.Value, c *value.Collation, lower, inclusive bool, text string) FieldInterval {
	k := EncodeKeyCollated(nil, v, c)
	class := k[0]
	if lower {
		return FieldInterval{Lo: k, LoAfter: !inclusive, Hi: []byte{class}, HiThrough: true, LoText: text, HiText: classEnd(class)}
	}
	lo, loAfter := []byte{class}, false
	if class == value.ClassNumber {
		// NaN sorts below every number but matches no $lt/$lte of one.
		lo, loAfter = EncodeKey(nil, bsoncore.Value{Type: bsoncore.TypeDouble, Data: nanBytes}), true
	}
	return FieldInterval{Lo: lo, LoAfter: loAfter, Hi: k, HiThrough: inclusive, LoText: classStart(class), HiText: text}
}

var nanBytes = bsoncore.AppendDouble(nil, math.NaN())

func classStart(class byte) string {
	if class == value.ClassNumber {
		return "-inf.0"
	}
	return "MinKey"
}

func classEnd(class byte) string {
	if class == value.ClassNumber {
		return "inf.0"
	}
	return "MaxKey"
}

func (iv FieldInterval) start() []byte {
	if iv.LoAfter {
		return append(append([]byte(nil), iv.Lo...), AfterPrefix)
	}
	return iv.Lo
}

func (iv FieldInterval) stop() []byte {
	if iv.HiThrough {
		return append(append([]byte(nil), iv.Hi...), AfterPrefix)
	}
	return iv.Hi
}

// Empty reports an interval no value falls in.
func (iv FieldInterval) Empty() bool { return bytes.Compare(iv.start(), iv.stop()) >= 0 }

// IsPoint reports an interval of one value.
func (iv FieldInterval) IsPoint() bool {
	return !iv.LoAfter && iv.HiThrough && bytes.Equal(iv.Lo, iv.Hi) && len(iv.Lo) > 1
}

// Intersect is the values in both intervals.
func (iv FieldInterval) Intersect(o FieldInterval) FieldInterval {
	out := iv
	if bytes.Compare(o.start(), iv.start()) > 0 {
		out.Lo, out.LoAfter, out.LoText = o.Lo, o.LoAfter, o.LoText
	}
	if bytes.Compare(o.stop(), iv.stop()) < 0 {
		out.Hi, out.HiThrough, out.HiText = o.Hi, o.HiThrough, o.HiText
	}
	return out
}

// Descending is the interval in the key space of a descending field, where
// encodings are complemented and so the order is reversed.
func (iv FieldInterval) Descending() FieldInterval {
	return FieldInterval{
		Lo: Complement(iv.Hi), LoAfter: !iv.HiThrough, LoText: iv.HiText,
		Hi: Complement(iv.Lo), HiThrough: !iv.LoAfter, HiText: iv.LoText,
	}
}

// Text is the interval as explain shows it: "[lo, hi)".
func (iv FieldInterval) Text() string {
	open, end := "[", ")"
	if iv.LoAfter {
		open = "("
	}
	if iv.HiThrough {
		end = "]"
	}
	return open + iv.LoText + ", " + iv.HiText + end
}

// Interval is a range of index entries: keys >= Start and < Stop (nil
// Stop: to the end).
type Interval struct{ Start, Stop []byte }

// EntryIntervals turns per-field interval lists (already in key space:
// Descending applied) into entry ranges, sorted and merged so that
// scanning them in order yields entries in index order.
func EntryIntervals(fields [][]FieldInterval) []Interval {
	prefixes := []Interval{{}}
	for _, ivs := range fields {
		var next []Interval
		for _, p := range prefixes {
			for _, iv := range ivs {
				next = append(next, Interval{
					Start: append(append([]byte(nil), p.Start...), iv.start()...),
					Stop:  append(append([]byte(nil), p.Start...), iv.stop()...),
				})
			}
		}
		prefixes = next
		if !allPoints(ivs) {
			break // later fields stay unbounded within this range
		}
	}
	return mergeIntervals(prefixes)
}

func allPoints(ivs []FieldInterval) bool {
	for _, iv := range ivs {
		if !iv.IsPoint() {
			return false
		}
	}
	return true
}

func mergeIntervals(in []Interval) []Interval {
	for i := range in {
		if bytes.Compare(in[i].Start, MultikeyMarker) <= 0 {
			in[i].Start = []byte{1} // never the multikey marker
		}
	}
	sort.Slice(in, func(i, j int) bool { return bytes.Compare(in[i].Start, in[j].Start) < 0 })
	var out []Interval
	for _, iv := range in {
		if bytes.Compare(iv.Start, iv.Stop) >= 0 {
			continue
		}
		if n := len(out); n > 0 && bytes.Compare(iv.Start, out[n-1].Stop) <= 0 {
			if bytes.Compare(iv.Stop, out[n-1].Stop) > 0 {
				out[n-1].Stop = iv.Stop
			}
			continue
		}
		out = append(out, iv)
	}
	return out
}
