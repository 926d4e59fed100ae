package query

import (
	"strings"
	"unicode/utf8"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/value"
)

// String expressions.

// evalConcat counts the result's size before building it.
func evalConcat(c *evalCtx, a []bsoncore.Value) (bsoncore.Value, error) {
	n := 0
	for _, v := range a {
		switch {
		case nullish(v):
			return value.Null, nil
		case v.Type != bsoncore.TypeString:
			return bsoncore.Value{}, mongoerr.New(mongoerr.Location16702, "$concat only supports strings, not %s", value.TypeName(v.Type))
		}
		n += len(value.RawString(v))
	}
	if err := c.grow("$concat", stringBytes(n)); err != nil {
		return bsoncore.Value{}, err
	}
	b := make([]byte, 0, n)
	for _, v := range a {
		b = append(b, value.RawString(v)...)
	}
	return value.String(string(b)), nil
}

// coerceToString is how string operators read their argument: null is
// "", numbers and dates print, other types fail.
func coerceToString(name string, v bsoncore.Value) (string, error) {
	switch {
	case nullish(v):
		return "", nil
	case value.StringLike(v):
		return string(value.RawString(v)), nil
	case value.IsNumber(v):
		return value.FormatNumber(v), nil
	}
	return "", mongoerr.New(mongoerr.Location16007, "can't convert from BSON type %s to String", value.TypeName(v.Type))
}

func caseMap(name string, f func(string) string) func(*evalCtx, []bsoncore.Value) (bsoncore.Value, error) {
	return func(_ *evalCtx, a []bsoncore.Value) (bsoncore.Value, error) {
		s, err := coerceToString(name, a[0])
		if err != nil {
			return bsoncore.Value{}, err
		}
		return value.String(f(s)), nil
	}
}

func evalStrLen(name string, codePoints bool) func(*evalCtx, []bsoncore.Value) (bsoncore.Value, error) {
	return func(_ *evalCtx, a []bsoncore.Value) (bsoncore.Value, error) {
		if a[0].Type != bsoncore.TypeString {
			return bsoncore.Value{}, mongoerr.New(mongoerr.Location34471, "%s requires a string argument, found: %s", name, exprTypeName(a[0]))
		}
		s := value.RawString(a[0])
		if codePoints {
			return value.Int32(int32(utf8.RuneCount(s))), nil
		}
		return value.Int32(int32(len(s))), nil
	}
}

func evalSplit(c *evalCtx, a []bsoncore.Value) (bsoncore.Value, error) {
	switch {
	case nullish(a[0]):
		return value.Null, nil
	case a[0].Type != bsoncore.TypeString:
		return bsoncore.Value{}, mongoerr.New(mongoerr.Location40085, "$split requires an expression that evaluates to a string as a first argument, found: %s", value.TypeName(a[0].Type))
	case a[1].Type != bsoncore.TypeString:
		return bsoncore.Value{}, mongoerr.New(mongoerr.Location40086, "$split requires an expression that evaluates to a string as a second argument, found: %s", exprTypeName(a[1]))
	case a[1].StringValue() == "":
		return bsoncore.Value{}, mongoerr.New(mongoerr.Location40087, "$split requires a non-empty separator")
	}
	// Piece by piece rather than strings.Split, whose slice of all the
	// pieces would be allocated before any is counted.
	s, sep := a[0].StringValue(), a[1].StringValue()
	out := newArrayBuilder(c, "$split")
	for {
		p, rest, found := strings.Cut(s, sep)
		if err := out.add(value.String(p)); err != nil {
			return bsoncore.Value{}, err
		}
		if !found {
			return out.value(), nil
		}
		s = rest
	}
}

func evalSubstrCP(_ *evalCtx, a []bsoncore.Value) (bsoncore.Value, error) {
	s, err := coerceToString("$substrCP", a[0])
	if err != nil {
		return bsoncore.Value{}, err
	}
	if !value.IsNumber(a[1]) || !value.IsNumber(a[2]) {
		return bsoncore.Value{}, mongoerr.New(mongoerr.Location34450, "$substrCP: starting index and length must be numeric")
	}
	start, n := int(value.ToFloat(a[1])), int(value.ToFloat(a[2]))
	if start < 0 || n < 0 {
		return bsoncore.Value{}, mongoerr.New(mongoerr.Location34455, "$substrCP: the starting index and length must be non-negative integers")
	}
	from := cpOffset(s, start)
	return value.String(s[from : from+cpOffset(s[from:], n)]), nil
}

// cpOffset is the byte offset of code point i of s (len(s) past its end),
// found without decoding s into runes, which would take four times its
// size.
func cpOffset(s string, i int) int {
	for off := range s {
		if i == 0 {
			return off
		}
		i--
	}
	return len(s)
}

func evalStrcasecmp(_ *evalCtx, a []bsoncore.Value) (bsoncore.Value, error) {
	x, err := coerceToString("$strcasecmp", a[0])
	if err != nil {
		return bsoncore.Value{}, err
	}
	y, err := coerceToString("$strcasecmp", a[1])
	if err != nil {
		return bsoncore.Value{}, err
	}
	return value.Int32(int32(strings.Compare(strings.ToUpper(x), strings.ToUpper(y)))), nil
}

func trimFunc(name string) func(*evalCtx, namedArgs) (bsoncore.Value, error) {
	return func(_ *evalCtx, a namedArgs) (bsoncore.Value, error) {
		in := a["input"]
		if nullish(in) {
			return value.Null, nil
		}
		if in.Type != bsoncore.TypeString {
			return bsoncore.Value{}, mongoerr.New(mongoerr.Location50699, "%s requires its input to be a string, got %s (of type %s) instead.", name, value.Format(in), value.TypeName(in.Type))
		}
		chars := " \t\n\v\f\r\u0000\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
		if c, ok := a["chars"]; ok {
			if nullish(c) {
				return value.Null, nil
			}
			if c.Type != bsoncore.TypeString {
				return bsoncore.Value{}, mongoerr.New(mongoerr.Location50700, "%s requires 'chars' to be a string, got %s (of type %s) instead.", name, value.Format(c), value.TypeName(c.Type))
			}
			chars = c.StringValue()
		}
		s := in.StringValue()
		if name != "$rtrim" {
			s = strings.TrimLeft(s, chars)
		}
		if name != "$ltrim" {
			s = strings.TrimRight(s, chars)
		}
		return value.String(s), nil
	}
}

func replaceFunc(name string, n int) func(*evalCtx, namedArgs) (bsoncore.Value, error) {
	return func(c *evalCtx, a namedArgs) (bsoncore.Value, error) {
		for _, k := range []string{"input", "find", "replacement"} {
			v := a[k]
			if !nullish(v) && v.Type != bsoncore.TypeString {
				return bsoncore.Value{}, mongoerr.New(mongoerr.Location51746, "%s requires that '%s' be a string, found: %s", name, k, value.Format(v))
			}
		}
		if nullish(a["input"]) || nullish(a["find"]) || nullish(a["replacement"]) {
			return value.Null, nil
		}
		in, find, repl := a["input"].StringValue(), a["find"].StringValue(), a["replacement"].StringValue()
		if err := c.grow(name, stringBytes(replacedLen(in, find, repl, n))); err != nil {
			return bsoncore.Value{}, err
		}
		return value.String(strings.Replace(in, find, repl, n)), nil
	}
}

// replacedLen is the length of strings.Replace(s, old, repl, n), known
// before it is built: replacing short matches with a long replacement
// multiplies a string's size.
func replacedLen(s, old, repl string, n int) int {
	m := strings.Count(s, old)
	if n >= 0 {
		m = min(m, n)
	}
	return len(s) + m*(len(repl)-len(old))
}

func indexOfFunc(name string, codePoints bool) func(*evalCtx, []bsoncore.Value) (bsoncore.Value, error) {
	return func(_ *evalCtx, a []bsoncore.Value) (bsoncore.Value, error) {
		if nullish(a[0]) {
			return value.Null, nil
		}
		if a[0].Type != bsoncore.TypeString {
			return bsoncore.Value{}, mongoerr.New(mongoerr.Location40091, "%s requires a string as the first argument, found: %s", name, value.TypeName(a[0].Type))
		}
		if a[1].Type != bsoncore.TypeString {
			return bsoncore.Value{}, mongoerr.New(mongoerr.Location40092, "%s requires a string as the second argument, found: %s", name, exprTypeName(a[1]))
		}
		s, sub := a[0].StringValue(), a[1].StringValue()
		units, offset := len(s), func(i int) int { return min(i, len(s)) }
		if codePoints {
			units, offset = utf8.RuneCountInString(s), func(i int) int { return cpOffset(s, i) }
		}
		start, end, err := indexBounds(name, a[2:], units)
		if err != nil {
			return bsoncore.Value{}, err
		}
		if start > end {
			return value.Int32(-1), nil
		}
		// One search of the bounded part, in linear time: the first match
		// at or after start that ends by end.
		from := offset(start)
		at := strings.Index(s[from:offset(end)], sub)
		if at < 0 {
			return value.Int32(-1), nil
		}
		if codePoints {
			return value.Int32(int32(start + utf8.RuneCountInString(s[from:from+at]))), nil
		}
		return value.Int32(int32(start + at)), nil
	}
}

// indexBounds reads optional start and end indexes (non-negative integers).
func indexBounds(name string, args []bsoncore.Value, n int) (int, int, error) {
	bounds := []int{0, n}
	for i, v := range args {
		if !value.IsNumber(v) || value.ToFloat(v) != float64(int64(value.ToFloat(v))) {
			return 0, 0, mongoerr.New(mongoerr.Location40096, "%s requires an integral starting index, found a value of type: %s", name, exprTypeName(v))
		}
		if value.ToFloat(v) < 0 {
			return 0, 0, mongoerr.New(mongoerr.Location40097, "%s requires a nonnegative start index, found: %s", name, value.Format(v))
		}
		bounds[i] = int(value.ToFloat(v))
	}
	return bounds[0], min(bounds[1], n), nil
}

func evalSubstrBytes(_ *evalCtx, a []bsoncore.Value) (bsoncore.Value, error) {
	s, err := coerceToString("$substrBytes", a[0])
	if err != nil {
		return bsoncore.Value{}, err
	}
	if !value.IsNumber(a[1]) || !value.IsNumber(a[2]) {
		return bsoncore.Value{}, mongoerr.New(mongoerr.Location16034, "$substrBytes: starting index must be a numeric type")
	}
	start, n := int(value.ToFloat(a[1])), int(value.ToFloat(a[2]))
	if start < 0 || start > len(s) {
		return value.String(""), nil
	}
	end := len(s)
	if n >= 0 && start+n < end {
		end = start + n
	}
	if !utf8.RuneStart(s[start]) && start < len(s) || end < len(s) && !utf8.RuneStart(s[end]) {
		return bsoncore.Value{}, mongoerr.New(mongoerr.Location28656, "$substrBytes:  Invalid range, starting index is a UTF-8 continuation byte.")
	}
	return value.String(s[start:end]), nil
}
