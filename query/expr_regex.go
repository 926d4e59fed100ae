package query

import (
	"strings"
	"unicode/utf8"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"dumbodb/query/mongoerr"
	"dumbodb/query/value"
)

// More string expressions: trimming, replacing, searching and the regex
// operators.

func trimFunc(name string) func(*evalCtx, namedArgs) (bsoncore.Value, error) {
	return func(_ *evalCtx, a namedArgs) (bsoncore.Value, error) {
		in := a["input"]
		if nullish(in) {
			return value.Null, nil
		}
		if in.Type != bsoncore.TypeString {
			return bsoncore.Value{}, mongoerr.New(mongoerr.Code(50699), "%s requires its input to be a string, got %s (of type %s) instead.", name, value.Format(in), value.TypeName(in.Type))
		}
		chars := " \t\n\v\f\r\u0000\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
		if c, ok := a["chars"]; ok {
			if nullish(c) {
				return value.Null, nil
			}
			if c.Type != bsoncore.TypeString {
				return bsoncore.Value{}, mongoerr.New(mongoerr.Code(50700), "%s requires 'chars' to be a string, got %s (of type %s) instead.", name, value.Format(c), value.TypeName(c.Type))
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
				return bsoncore.Value{}, mongoerr.New(mongoerr.Code(51746), "%s requires that '%s' be a string, found: %s", name, k, value.Format(v))
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
			return bsoncore.Value{}, mongoerr.New(mongoerr.Code(40091), "%s requires a string as the first argument, found: %s", name, value.TypeName(a[0].Type))
		}
		if a[1].Type != bsoncore.TypeString {
			return bsoncore.Value{}, mongoerr.New(mongoerr.Code(40092), "%s requires a string as the second argument, found: %s", name, exprTypeName(a[1]))
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
			return 0, 0, mongoerr.New(mongoerr.Code(40096), "%s requires an integral starting index, found a value of type: %s", name, exprTypeName(v))
		}
		if value.ToFloat(v) < 0 {
			return 0, 0, mongoerr.New(mongoerr.Code(40097), "%s requires a nonnegative start index, found: %s", name, value.Format(v))
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
		return bsoncore.Value{}, mongoerr.New(mongoerr.Code(16034), "$substrBytes: starting index must be a numeric type")
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
		return bsoncore.Value{}, mongoerr.New(mongoerr.Code(28656), "$substrBytes:  Invalid range, starting index is a UTF-8 continuation byte.")
	}
	return value.String(s[start:end]), nil
}

// regexFunc implements $regexMatch, $regexFind and $regexFindAll.
func regexFunc(name string) func(*evalCtx, namedArgs) (bsoncore.Value, error) {
	return func(_ *evalCtx, a namedArgs) (bsoncore.Value, error) {
		in, rx := a["input"], a["regex"]
		var pattern, opts string
		switch rx.Type {
		case bsoncore.TypeString:
			pattern = rx.StringValue()
		case bsoncore.TypeRegex:
			pattern, opts = rx.Regex()
		default:
			if !nullish(rx) {
				return bsoncore.Value{}, mongoerr.New(mongoerr.Code(51105), "%s needs 'regex' to be of type string or regex", name)
			}
		}
		if o, ok := a["options"]; ok && !nullish(o) {
			if o.Type != bsoncore.TypeString {
				return bsoncore.Value{}, mongoerr.New(mongoerr.Code(51106), "%s needs 'options' to be of type string", name)
			}
			if opts != "" {
				return bsoncore.Value{}, mongoerr.New(mongoerr.Code(51107), "%s found regex option(s) specified in both 'regex' and 'option' fields", name)
			}
			opts = o.StringValue()
		}
		if !nullish(in) && in.Type != bsoncore.TypeString {
			return bsoncore.Value{}, mongoerr.New(mongoerr.Code(51104), "%s needs 'input' to be of type string", name)
		}
		if nullish(in) || nullish(rx) {
			switch name {
			case "$regexMatch":
				return value.Bool(false), nil
			case "$regexFindAll":
				return value.BuildArray(nil), nil
			}
			return value.Null, nil
		}
		re, err := compileRegex(pattern, opts)
		if err != nil {
			return bsoncore.Value{}, err
		}
		s := in.StringValue()
		switch name {
		case "$regexMatch":
			return value.Bool(re.MatchString(s)), nil
		case "$regexFind":
			m := re.FindStringSubmatchIndex(s)
			if m == nil {
				return value.Null, nil
			}
			return regexMatchDoc(s, m), nil
		}
		var out []bsoncore.Value
		for _, m := range re.FindAllStringSubmatchIndex(s, -1) {
			out = append(out, regexMatchDoc(s, m))
		}
		return value.BuildArray(out), nil
	}
}

// regexMatchDoc is {match, idx (in code points), captures}.
func regexMatchDoc(s string, m []int) bsoncore.Value {
	var caps []bsoncore.Value
	for i := 2; i < len(m); i += 2 {
		if m[i] < 0 {
			caps = append(caps, value.Null)
		} else {
			caps = append(caps, value.String(s[m[i]:m[i+1]]))
		}
	}
	d := bsoncore.NewDocumentBuilder().AppendString("match", s[m[0]:m[1]]).
		AppendInt32("idx", int32(utf8.RuneCountInString(s[:m[0]]))).
		AppendArray("captures", bsoncore.BuildArray(nil, caps...)).Build()
	return bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: d}
}
