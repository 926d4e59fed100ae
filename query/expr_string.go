package query

import (
	"strings"
	"unicode/utf8"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"dumbodb/query/mongoerr"
	"dumbodb/query/value"
)

// String expressions.

func evalConcat(_ *evalCtx, a []bsoncore.Value) (bsoncore.Value, error) {
	var b strings.Builder
	for _, v := range a {
		switch {
		case nullish(v):
			return value.Null, nil
		case v.Type != bsoncore.TypeString:
			return bsoncore.Value{}, mongoerr.New(mongoerr.Location16702, "$concat only supports strings, not %s", value.TypeName(v.Type))
		}
		b.Write(value.RawString(v))
	}
	return value.String(b.String()), nil
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

func evalSplit(_ *evalCtx, a []bsoncore.Value) (bsoncore.Value, error) {
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
	var out []bsoncore.Value
	for _, p := range strings.Split(a[0].StringValue(), a[1].StringValue()) {
		out = append(out, value.String(p))
	}
	return value.BuildArray(out), nil
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
	r := []rune(s)
	start = min(start, len(r))
	return value.String(string(r[start:min(start+n, len(r))])), nil
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
	return func(_ *evalCtx, a namedArgs) (bsoncore.Value, error) {
		for _, k := range []string{"input", "find", "replacement"} {
			v := a[k]
			if !nullish(v) && v.Type != bsoncore.TypeString {
				return bsoncore.Value{}, mongoerr.New(mongoerr.Location51746, "%s requires that '%s' be a string, found: %s", name, k, value.Format(v))
			}
		}
		if nullish(a["input"]) || nullish(a["find"]) || nullish(a["replacement"]) {
			return value.Null, nil
		}
		return value.String(strings.Replace(a["input"].StringValue(), a["find"].StringValue(), a["replacement"].StringValue(), n)), nil
	}
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
		var units []string // code points, or bytes
		if codePoints {
			for _, r := range s {
				units = append(units, string(r))
			}
		} else {
			for i := 0; i < len(s); i++ {
				units = append(units, s[i:i+1])
			}
		}
		start, end, err := indexBounds(name, a[2:], len(units))
		if err != nil {
			return bsoncore.Value{}, err
		}
		for i := start; i <= end; i++ {
			if strings.HasPrefix(strings.Join(units[i:end], ""), sub) {
				return value.Int32(int32(i)), nil
			}
		}
		return value.Int32(-1), nil
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
