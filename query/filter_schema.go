package query

import (
	"math"
	"unicode/utf8"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/value"
)

// $jsonSchema: a JSON Schema (draft 4 subset, plus bsonType) that each
// document must satisfy. As in JSON Schema, keywords for one type (say
// minimum) constrain only values of that type.

// schema is one compiled (sub)schema: a list of checks on a value.
type schema struct{ checks []func(v bsoncore.Value) bool }

func (s *schema) ok(v bsoncore.Value) bool {
	for _, c := range s.checks {
		if !c(v) {
			return false
		}
	}
	return true
}

type schemaMatch struct{ s *schema }

func (m schemaMatch) matchDoc(doc []byte) bool {
	return m.s.ok(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: doc})
}

func parseJSONSchema(_ *Filter, _ string, v bsoncore.Value, _ bool) (docExpr, error) {
	if v.Type != bsoncore.TypeEmbeddedDocument {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "$jsonSchema must be an object")
	}
	s, err := compileSchema(v.Data)
	if err != nil {
		return nil, err
	}
	return schemaMatch{s}, nil
}

// jsonTypes maps JSON Schema "type" names to the BSON types they cover.
var jsonTypes = map[string][]bsoncore.Type{
	"object":  {bsoncore.TypeEmbeddedDocument},
	"array":   {bsoncore.TypeArray},
	"number":  {bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDouble, bsoncore.TypeDecimal128},
	"boolean": {bsoncore.TypeBoolean},
	"string":  {bsoncore.TypeString},
	"null":    {bsoncore.TypeNull},
}

func compileSchema(doc []byte) (*schema, error) {
	s := &schema{}
	it := value.NewIter(doc)
	for {
		k, v, ok := it.Next()
		if !ok {
			return s, nil
		}
		kw, known := schemaKeywords[string(k)]
		switch {
		case !known:
			return nil, mongoerr.New(mongoerr.FailedToParse, "Unknown $jsonSchema keyword: %s", k)
		case kw.refuse != nil:
			return nil, kw.refuse(string(k))
		}
		if err := kw.parse(s, v, doc); err != nil {
			return nil, err
		}
	}
}

func schemaTypeList(kw string, arg bsoncore.Value, lookup func(string) ([]bsoncore.Type, bool)) ([]bsoncore.Type, error) {
	names := []bsoncore.Value{arg}
	if arg.Type == bsoncore.TypeArray {
		names = value.ArrayValues(arg.Data)
	}
	var out []bsoncore.Type
	for _, n := range names {
		if n.Type != bsoncore.TypeString {
			return nil, mongoerr.New(mongoerr.TypeMismatch, "$jsonSchema keyword '%s' must be either a string or an array of strings", kw)
		}
		ts, ok := lookup(n.StringValue())
		if !ok {
			return nil, mongoerr.New(mongoerr.BadValue, "Unknown type name alias: %s", n.StringValue())
		}
		out = append(out, ts...)
	}
	return out, nil
}

func addTypeCheck(s *schema, types []bsoncore.Type) {
	s.checks = append(s.checks, func(v bsoncore.Value) bool {
		for _, t := range types {
			if v.Type == t {
				return true
			}
		}
		return false
	})
}

func schemaBSONType(s *schema, arg bsoncore.Value, _ []byte) error {
	types, err := schemaTypeList("bsonType", arg, func(name string) ([]bsoncore.Type, bool) {
		if name == "number" {
			return jsonTypes["number"], true
		}
		code, ok := typeAliases[name]
		if !ok {
			return nil, false
		}
		return []bsoncore.Type{bsoncore.Type(byte(int8(code)))}, true
	})
	if err == nil {
		addTypeCheck(s, types)
	}
	return err
}

func schemaType(s *schema, arg bsoncore.Value, _ []byte) error {
	types, err := schemaTypeList("type", arg, func(name string) ([]bsoncore.Type, bool) {
		if name == "integer" {
			return nil, false
		}
		ts, ok := jsonTypes[name]
		return ts, ok
	})
	if err == nil {
		addTypeCheck(s, types)
	}
	return err
}

func schemaRequired(s *schema, arg bsoncore.Value, _ []byte) error {
	if arg.Type != bsoncore.TypeArray || value.ArrayLen(arg.Data) == 0 {
		return mongoerr.New(mongoerr.FailedToParse, "$jsonSchema keyword 'required' must be a nonempty array")
	}
	var names []string
	for _, v := range value.ArrayValues(arg.Data) {
		if v.Type != bsoncore.TypeString {
			return mongoerr.New(mongoerr.TypeMismatch, "$jsonSchema keyword 'required' must be an array of strings")
		}
		names = append(names, v.StringValue())
	}
	s.checks = append(s.checks, func(v bsoncore.Value) bool {
		if v.Type != bsoncore.TypeEmbeddedDocument {
			return true
		}
		for _, n := range names {
			if _, ok := value.LookupField(v.Data, n); !ok {
				return false
			}
		}
		return true
	})
	return nil
}

func schemaProperties(s *schema, arg bsoncore.Value, _ []byte) error {
	if arg.Type != bsoncore.TypeEmbeddedDocument {
		return mongoerr.New(mongoerr.TypeMismatch, "$jsonSchema keyword 'properties' must be an object")
	}
	props := map[string]*schema{}
	it := value.NewIter(arg.Data)
	for {
		k, v, ok := it.Next()
		if !ok {
			break
		}
		if v.Type != bsoncore.TypeEmbeddedDocument {
			return mongoerr.New(mongoerr.TypeMismatch, "Nested schema for $jsonSchema property '%s' must be an object", k)
		}
		sub, err := compileSchema(v.Data)
		if err != nil {
			return err
		}
		props[string(k)] = sub
	}
	s.checks = append(s.checks, func(v bsoncore.Value) bool {
		if v.Type != bsoncore.TypeEmbeddedDocument {
			return true
		}
		for name, sub := range props {
			if fv, ok := value.LookupField(v.Data, name); ok && !sub.ok(fv) {
				return false
			}
		}
		return true
	})
	return nil
}

// schemaAdditional is additionalProperties: false forbids fields not named
// by properties or matched by patternProperties; a schema constrains them.
func schemaAdditional(s *schema, arg bsoncore.Value, parent []byte) error {
	known := map[string]bool{}
	if props, ok := value.LookupField(parent, "properties"); ok && props.Type == bsoncore.TypeEmbeddedDocument {
		it := value.NewIter(props.Data)
		for k, _, ok := it.Next(); ok; k, _, ok = it.Next() {
			known[string(k)] = true
		}
	}
	var patterns []*pcre
	if pp, ok := value.LookupField(parent, "patternProperties"); ok && pp.Type == bsoncore.TypeEmbeddedDocument {
		it := value.NewIter(pp.Data)
		for k, _, ok := it.Next(); ok; k, _, ok = it.Next() {
			re, err := compileRegex(string(k), "")
			if err != nil {
				return err
			}
			patterns = append(patterns, re)
		}
	}
	var sub *schema
	switch arg.Type {
	case bsoncore.TypeBoolean:
		if arg.Boolean() {
			return nil
		}
	case bsoncore.TypeEmbeddedDocument:
		var err error
		if sub, err = compileSchema(arg.Data); err != nil {
			return err
		}
	default:
		return mongoerr.New(mongoerr.TypeMismatch, "$jsonSchema keyword 'additionalProperties' must be either an object or a boolean")
	}
	s.checks = append(s.checks, func(v bsoncore.Value) bool {
		if v.Type != bsoncore.TypeEmbeddedDocument {
			return true
		}
		it := value.NewIter(v.Data)
		for k, fv, ok := it.Next(); ok; k, fv, ok = it.Next() {
			if known[string(k)] || matchesAny(patterns, string(k)) {
				continue
			}
			if sub == nil || !sub.ok(fv) {
				return false
			}
		}
		return true
	})
	return nil
}

func matchesAny(res []*pcre, s string) bool {
	for _, re := range res {
		if re.MatchString(s) {
			return true
		}
	}
	return false
}

// schemaBound is minimum/maximum, honouring draft 4's boolean
// exclusiveMinimum/exclusiveMaximum siblings.
func schemaBound(isMax bool) func(*schema, bsoncore.Value, []byte) error {
	return func(s *schema, arg bsoncore.Value, parent []byte) error {
		name := "minimum"
		excl := "exclusiveMinimum"
		if isMax {
			name, excl = "maximum", "exclusiveMaximum"
		}
		if !value.IsNumber(arg) {
			return mongoerr.New(mongoerr.TypeMismatch, "$jsonSchema keyword '%s' must be a number", name)
		}
		exclusive := false
		if e, ok := value.LookupField(parent, excl); ok && e.Type == bsoncore.TypeBoolean {
			exclusive = e.Boolean()
		}
		s.checks = append(s.checks, func(v bsoncore.Value) bool {
			if !value.IsNumber(v) {
				return true
			}
			c := value.Compare(v, arg)
			if isMax {
				c = -c
			}
			return c > 0 || (c == 0 && !exclusive)
		})
		return nil
	}
}

func schemaExclusive(_ *schema, arg bsoncore.Value, _ []byte) error {
	if arg.Type != bsoncore.TypeBoolean {
		return mongoerr.New(mongoerr.TypeMismatch, "$jsonSchema keywords 'exclusiveMinimum' and 'exclusiveMaximum' must be booleans")
	}
	return nil
}

func schemaEnum(s *schema, arg bsoncore.Value, _ []byte) error {
	if arg.Type != bsoncore.TypeArray || value.ArrayLen(arg.Data) == 0 {
		return mongoerr.New(mongoerr.FailedToParse, "$jsonSchema keyword 'enum' cannot be an empty array")
	}
	vals := value.ArrayValues(arg.Data)
	s.checks = append(s.checks, func(v bsoncore.Value) bool {
		for _, e := range vals {
			// enum is exact: 1 and 1.0 are different JSON values only by
			// type name, and mongod compares with woCompare (equal).
			if value.Compare(v, e) == 0 {
				return true
			}
		}
		return false
	})
	return nil
}

// schemaCount is min/max Length, Items and Properties.
func schemaCount(t bsoncore.Type, isMax bool) func(*schema, bsoncore.Value, []byte) error {
	return func(s *schema, arg bsoncore.Value, _ []byte) error {
		if !value.IsNumber(arg) || value.ToFloat(arg) != math.Trunc(value.ToFloat(arg)) || value.ToFloat(arg) < 0 {
			return mongoerr.New(mongoerr.FailedToParse, "$jsonSchema length and count keywords must be non-negative integers")
		}
		n := int(value.ToFloat(arg))
		s.checks = append(s.checks, func(v bsoncore.Value) bool {
			if v.Type != t {
				return true
			}
			var got int
			if t == bsoncore.TypeString {
				got = utf8.RuneCount(value.RawString(v))
			} else {
				got = value.ArrayLen(v.Data)
			}
			if isMax {
				return got <= n
			}
			return got >= n
		})
		return nil
	}
}

func schemaItems(s *schema, arg bsoncore.Value, parent []byte) error {
	switch arg.Type {
	case bsoncore.TypeEmbeddedDocument:
		sub, err := compileSchema(arg.Data)
		if err != nil {
			return err
		}
		s.checks = append(s.checks, func(v bsoncore.Value) bool {
			if v.Type != bsoncore.TypeArray {
				return true
			}
			for _, e := range value.ArrayValues(v.Data) {
				if !sub.ok(e) {
					return false
				}
			}
			return true
		})
		return nil
	case bsoncore.TypeArray:
		var subs []*schema
		for _, d := range value.ArrayValues(arg.Data) {
			if d.Type != bsoncore.TypeEmbeddedDocument {
				return mongoerr.New(mongoerr.TypeMismatch, "$jsonSchema keyword 'items' requires that each element of the array is an object")
			}
			sub, err := compileSchema(d.Data)
			if err != nil {
				return err
			}
			subs = append(subs, sub)
		}
		extra, err := additionalItemsCheck(parent)
		if err != nil {
			return err
		}
		s.checks = append(s.checks, func(v bsoncore.Value) bool {
			if v.Type != bsoncore.TypeArray {
				return true
			}
			for i, e := range value.ArrayValues(v.Data) {
				if i < len(subs) && !subs[i].ok(e) {
					return false
				}
				if i >= len(subs) && !extra(e) {
					return false
				}
			}
			return true
		})
		return nil
	}
	return mongoerr.New(mongoerr.TypeMismatch, "$jsonSchema keyword 'items' must be an array or an object")
}

// additionalItemsCheck is what additionalItems asks of the elements past
// an items array: nothing, none at all (false) or a schema.
func additionalItemsCheck(parent []byte) (func(bsoncore.Value) bool, error) {
	extra, _ := value.LookupField(parent, "additionalItems")
	switch extra.Type {
	case bsoncore.TypeBoolean:
		allowed := extra.Boolean()
		return func(bsoncore.Value) bool { return allowed }, nil
	case bsoncore.TypeEmbeddedDocument:
		sub, err := compileSchema(extra.Data)
		if err != nil {
			return nil, err
		}
		return sub.ok, nil
	}
	return func(bsoncore.Value) bool { return true }, nil
}

// schemaAdditionalItems checks additionalItems' type; items reads it.
func schemaAdditionalItems(_ *schema, arg bsoncore.Value, _ []byte) error {
	if arg.Type != bsoncore.TypeBoolean && arg.Type != bsoncore.TypeEmbeddedDocument {
		return mongoerr.New(mongoerr.TypeMismatch, "$jsonSchema keyword 'additionalItems' must be either an object or a boolean, but got a %s", value.TypeName(arg.Type))
	}
	return nil
}

// schemaPatternProperties is patternProperties: each property whose name
// matches a pattern must satisfy that pattern's schema.
func schemaPatternProperties(s *schema, arg bsoncore.Value, _ []byte) error {
	if arg.Type != bsoncore.TypeEmbeddedDocument {
		return mongoerr.New(mongoerr.TypeMismatch, "$jsonSchema keyword 'patternProperties' must be an object")
	}
	type pattern struct {
		re  *pcre
		sub *schema
	}
	var ps []pattern
	it := value.NewIter(arg.Data)
	for k, v, ok := it.Next(); ok; k, v, ok = it.Next() {
		re, err := compileRegex(string(k), "")
		if err != nil {
			return err
		}
		if v.Type != bsoncore.TypeEmbeddedDocument {
			return mongoerr.New(mongoerr.TypeMismatch, "$jsonSchema keyword 'patternProperties' has property '%s' which is not an object", k)
		}
		sub, err := compileSchema(v.Data)
		if err != nil {
			return err
		}
		ps = append(ps, pattern{re, sub})
	}
	s.checks = append(s.checks, func(v bsoncore.Value) bool {
		if v.Type != bsoncore.TypeEmbeddedDocument {
			return true
		}
		it := value.NewIter(v.Data)
		for k, fv, ok := it.Next(); ok; k, fv, ok = it.Next() {
			for _, p := range ps {
				if p.re.Match(k) && !p.sub.ok(fv) {
					return false
				}
			}
		}
		return true
	})
	return nil
}

func schemaUnique(s *schema, arg bsoncore.Value, _ []byte) error {
	if arg.Type != bsoncore.TypeBoolean {
		return mongoerr.New(mongoerr.TypeMismatch, "$jsonSchema keyword 'uniqueItems' must be a boolean")
	}
	if arg.Boolean() {
		s.checks = append(s.checks, func(v bsoncore.Value) bool {
			if v.Type != bsoncore.TypeArray {
				return true
			}
			vals := value.ArrayValues(v.Data)
			for j := range vals {
				if containsValue(vals[:j], vals[j]) {
					return false
				}
			}
			return true
		})
	}
	return nil
}

func schemaPattern(s *schema, arg bsoncore.Value, _ []byte) error {
	if arg.Type != bsoncore.TypeString {
		return mongoerr.New(mongoerr.TypeMismatch, "$jsonSchema keyword 'pattern' must be a string")
	}
	re, err := compileRegex(arg.StringValue(), "")
	if err != nil {
		return err
	}
	s.checks = append(s.checks, func(v bsoncore.Value) bool {
		return v.Type != bsoncore.TypeString || re.Match(value.RawString(v))
	})
	return nil
}

func schemaMultipleOf(s *schema, arg bsoncore.Value, _ []byte) error {
	if !value.IsNumber(arg) || value.ToFloat(arg) <= 0 {
		return mongoerr.New(mongoerr.FailedToParse, "$jsonSchema keyword 'multipleOf' must have a positive value")
	}
	d := value.ToFloat(arg)
	s.checks = append(s.checks, func(v bsoncore.Value) bool {
		return !value.IsNumber(v) || math.Mod(value.ToFloat(v), d) == 0
	})
	return nil
}

func schemaLogic(kw string) func(*schema, bsoncore.Value, []byte) error {
	return func(s *schema, arg bsoncore.Value, _ []byte) error {
		if arg.Type != bsoncore.TypeArray || value.ArrayLen(arg.Data) == 0 {
			return mongoerr.New(mongoerr.FailedToParse, "$jsonSchema keyword '%s' must be a nonempty array", kw)
		}
		var subs []*schema
		for _, d := range value.ArrayValues(arg.Data) {
			if d.Type != bsoncore.TypeEmbeddedDocument {
				return mongoerr.New(mongoerr.TypeMismatch, "$jsonSchema keyword '%s' must be an array of objects", kw)
			}
			sub, err := compileSchema(d.Data)
			if err != nil {
				return err
			}
			subs = append(subs, sub)
		}
		s.checks = append(s.checks, func(v bsoncore.Value) bool {
			n := 0
			for _, sub := range subs {
				if sub.ok(v) {
					n++
				}
			}
			switch kw {
			case "allOf":
				return n == len(subs)
			case "anyOf":
				return n > 0
			}
			return n == 1
		})
		return nil
	}
}

func schemaNot(s *schema, arg bsoncore.Value, _ []byte) error {
	if arg.Type != bsoncore.TypeEmbeddedDocument {
		return mongoerr.New(mongoerr.TypeMismatch, "$jsonSchema keyword 'not' must be an object")
	}
	sub, err := compileSchema(arg.Data)
	if err != nil {
		return err
	}
	s.checks = append(s.checks, func(v bsoncore.Value) bool { return !sub.ok(v) })
	return nil
}
