package query

import (
	"unicode/utf8"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/value"
)

// Regular expression operators: $regexMatch, $regexFind, $regexFindAll.

// regexFunc implements $regexMatch, $regexFind and $regexFindAll.
func regexFunc(name string) func(*evalCtx, namedArgs) (bsoncore.Value, error) {
	return func(c *evalCtx, a namedArgs) (bsoncore.Value, error) {
		in, rx := a["input"], a["regex"]
		var pattern, opts string
		switch rx.Type {
		case bsoncore.TypeString:
			pattern = rx.StringValue()
		case bsoncore.TypeRegex:
			pattern, opts = rx.Regex()
		default:
			if !nullish(rx) {
				return bsoncore.Value{}, mongoerr.New(mongoerr.Location51105, "%s needs 'regex' to be of type string or regex", name)
			}
		}
		if o, ok := a["options"]; ok && !nullish(o) {
			if o.Type != bsoncore.TypeString {
				return bsoncore.Value{}, mongoerr.New(mongoerr.Location51106, "%s needs 'options' to be of type string", name)
			}
			if opts != "" {
				return bsoncore.Value{}, mongoerr.New(mongoerr.Location51107, "%s found regex option(s) specified in both 'regex' and 'option' fields", name)
			}
			opts = o.StringValue()
		}
		if !nullish(in) && in.Type != bsoncore.TypeString {
			return bsoncore.Value{}, mongoerr.New(mongoerr.Location51104, "%s needs 'input' to be of type string", name)
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
		// The matches' indexes come all at once: ask for no more than the
		// budget could hold, one more reaching past it.
		b := c.budgetOf()
		most := int((b.limit-b.held)/int64(minMatchBytes)) + 1
		out := newArrayBuilder(c, name)
		for _, m := range re.FindAllStringSubmatchIndex(s, max(most, 1)) {
			if err := out.add(regexMatchDoc(s, m)); err != nil {
				return bsoncore.Value{}, err
			}
		}
		return out.value(), nil
	}
}

// minMatchBytes is the least a $regexFindAll match takes in its array: an
// empty match without captures, under a one-digit index.
var minMatchBytes = 3 + len(regexMatchDoc("", []int{0, 0}).Data)

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
