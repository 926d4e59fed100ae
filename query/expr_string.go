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
			return bsoncore.Value{}, mongoerr.New(mongoerr.Code(16702), "$concat only supports strings, not %s", value.TypeName(v.Type))
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
	return "", mongoerr.New(mongoerr.Code(16007), "can't convert from BSON type %s to String", value.TypeName(v.Type))
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
			return bsoncore.Value{}, mongoerr.New(mongoerr.Code(34471), "%s requires a string argument, found: %s", name, exprTypeName(a[0]))
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
		return bsoncore.Value{}, mongoerr.New(mongoerr.Code(40085), "$split requires an expression that evaluates to a string as a first argument, found: %s", value.TypeName(a[0].Type))
	case a[1].Type != bsoncore.TypeString:
		return bsoncore.Value{}, mongoerr.New(mongoerr.Code(40086), "$split requires an expression that evaluates to a string as a second argument, found: %s", exprTypeName(a[1]))
	case a[1].StringValue() == "":
		return bsoncore.Value{}, mongoerr.New(mongoerr.Code(40087), "$split requires a non-empty separator")
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
		return bsoncore.Value{}, mongoerr.New(mongoerr.Code(34450), "$substrCP: starting index and length must be numeric")
	}
	start, n := int(value.ToFloat(a[1])), int(value.ToFloat(a[2]))
	if start < 0 || n < 0 {
		return bsoncore.Value{}, mongoerr.New(mongoerr.Code(34455), "$substrCP: the starting index and length must be non-negative integers")
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
