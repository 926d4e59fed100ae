package query

import (
	"sort"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/value"
)

// The details of a failed $jsonSchema: schemaRulesNotSatisfied, the
// keywords that failed in the order mongod's schema parser checks them
// (json_schema_parser.cpp): string and number keywords, array keywords,
// object keywords, logical keywords, then the type. A keyword that does
// not apply to a value's type passes, so a value of the wrong type is
// explained by its type alone. Each keyword is decided by compiling it
// alone, so that the explanation and the matcher cannot disagree.

// jsonSchema explains a $jsonSchema clause. Inverted (under $nor), mongod
// only says that the schema matched.
func (x *explainer) jsonSchema(c clause, doc []byte, inv bool) bsoncore.Document {
	d := newDetail("$jsonSchema")
	if inv {
		return d.str("reason", "schema matched").build()
	}
	schema := c.arg.Data
	if !rootMayBeObject(schema) {
		return d.specified(c.src).str("reason", "expression always evaluates to false").build()
	}
	annotate(d, schema)
	return d.array("schemaRulesNotSatisfied", schemaRules(schema, value.DocValue(doc), true)).build()
}

// rootMayBeObject is false for a top-level schema whose type excludes
// objects: it matches no document.
func rootMayBeObject(schema []byte) bool {
	for _, kw := range []string{"type", "bsonType"} {
		t, ok := value.LookupField(schema, kw)
		if !ok {
			continue
		}
		names := []bsoncore.Value{t}
		if t.Type == bsoncore.TypeArray {
			names = value.ArrayValues(t.Data)
		}
		for _, n := range names {
			if s, ok := n.StringValueOK(); ok && s == "object" {
				return true
			}
		}
		return false
	}
	return true
}

// annotate appends a schema's title and description, as mongod repeats
// them next to the schema's failures.
func annotate(d *detail, schema []byte) {
	for _, k := range []string{"title", "description"} {
		if v, ok := value.LookupField(schema, k); ok {
			d.val(k, v)
		}
	}
}

// schemaRules lists the failing keywords of schema for v.
func schemaRules(schema []byte, v bsoncore.Value, root bool) bsoncore.Array {
	e := &schemaExplain{schema: schema, v: v, out: bsoncore.NewArrayBuilder()}
	e.scalarRules()
	e.arrayRules()
	e.objectRules()
	e.logicalRules()
	if !root {
		e.typeRules()
	}
	return e.out.Build()
}

// schemaExplain gathers one (sub)schema's failing keywords.
type schemaExplain struct {
	schema []byte
	v      bsoncore.Value
	out    *bsoncore.ArrayBuilder
}

func (e *schemaExplain) add(d *detail) { e.out.AppendDocument(d.build()) }

// fails reports whether the keyword kw (with the siblings it reads) fails
// for v; false when the schema does not have it, or states a single type
// the keyword does not apply to (mongod then drops the keyword: the type
// alone explains the failure).
func (e *schemaExplain) fails(kw string, siblings ...string) bool {
	if _, ok := value.LookupField(e.schema, kw); !ok {
		return false
	}
	if class, ok := keywordClass[kw]; ok && e.statedOther(class) {
		return false
	}
	return !schemaOK(e.keywords(append([]string{kw}, siblings...)...), e.v)
}

// keywordClass is the types the type-specific keywords apply to.
var keywordClass = map[string][]bsoncore.Type{
	"pattern": {bsoncore.TypeString}, "maxLength": {bsoncore.TypeString}, "minLength": {bsoncore.TypeString},
	"multipleOf": numberTypes, "maximum": numberTypes, "minimum": numberTypes,
	"minItems": arrayTypes, "maxItems": arrayTypes, "uniqueItems": arrayTypes,
	"minProperties": objectTypes, "maxProperties": objectTypes,
}

var objectTypes = []bsoncore.Type{bsoncore.TypeEmbeddedDocument}

// statedOther reports a schema whose type or bsonType is one type (or
// "number") outside class.
func (e *schemaExplain) statedOther(class []bsoncore.Type) bool {
	for _, kw := range []string{"type", "bsonType"} {
		t, ok := value.LookupField(e.schema, kw)
		if !ok {
			continue
		}
		if t.Type == bsoncore.TypeArray {
			vals := value.ArrayValues(t.Data)
			if len(vals) != 1 {
				return false
			}
			t = vals[0]
		}
		name, _ := t.StringValueOK()
		stated := numberTypes
		if name != "number" {
			code, known := typeAliases[name]
			if !known {
				return false
			}
			stated = []bsoncore.Type{bsoncore.Type(byte(int8(code)))}
		}
		return !anyOfTypes(typeValues(stated), class)
	}
	return false
}

// typeValues are placeholder values of the types, for anyOfTypes.
func typeValues(ts []bsoncore.Type) []bsoncore.Value {
	out := make([]bsoncore.Value, len(ts))
	for i, t := range ts {
		out[i] = bsoncore.Value{Type: t}
	}
	return out
}

// keywords is the schema restricted to the named keywords it has.
func (e *schemaExplain) keywords(kws ...string) bsoncore.Document {
	b := bsoncore.NewDocumentBuilder()
	for _, k := range kws {
		if v, ok := value.LookupField(e.schema, k); ok {
			b.AppendValue(k, v)
		}
	}
	return b.Build()
}

// valueRule is a keyword failure explained by the value alone.
func (e *schemaExplain) valueRule(kw, reason string, siblings ...string) {
	if e.fails(kw, siblings...) {
		e.add(newDetail(kw).specified(e.keywords(append([]string{kw}, siblings...)...)).
			str("reason", reason).val("consideredValue", e.v))
	}
}

func (e *schemaExplain) scalarRules() {
	e.valueRule("pattern", "regular expression did not match")
	e.valueRule("maxLength", "specified string length was not satisfied")
	e.valueRule("minLength", "specified string length was not satisfied")
	e.valueRule("multipleOf", "considered value is not a multiple of the specified value")
	e.valueRule("maximum", "comparison failed", "exclusiveMaximum")
	e.valueRule("minimum", "comparison failed", "exclusiveMinimum")
}

func (e *schemaExplain) arrayRules() {
	for _, kw := range []string{"minItems", "maxItems"} {
		if e.fails(kw) {
			e.add(newDetail(kw).specified(e.keywords(kw)).str("reason", "array did not match specified length").
				val("consideredValue", e.v).val("numberOfItems", int32Value(value.ArrayLen(e.v.Data))))
		}
	}
	if e.fails("uniqueItems") {
		e.add(newDetail("uniqueItems").specified(e.keywords("uniqueItems")).str("reason", "found a duplicate item").
			val("consideredValue", e.v).val("duplicatedValue", firstDuplicate(value.ArrayValues(e.v.Data))))
	}
	if e.v.Type == bsoncore.TypeArray && !e.statedOther(arrayTypes) {
		e.itemsRules()
	}
}

// itemsRules explains items and additionalItems for an array value.
func (e *schemaExplain) itemsRules() {
	items, ok := value.LookupField(e.schema, "items")
	if !ok {
		return
	}
	elems := value.ArrayValues(e.v.Data)
	if items.Type == bsoncore.TypeEmbeddedDocument {
		e.firstFailingItem("items", "At least one item did not match the sub-schema", items.Data, elems, 0)
		return
	}
	subs := value.ArrayValues(items.Data)
	arr := bsoncore.NewArrayBuilder()
	failed := false
	for i, sub := range subs {
		if i < len(elems) && !schemaOK(sub.Data, elems[i]) {
			failed = true
			arr.AppendDocument(bsoncore.NewDocumentBuilder().AppendInt32("itemIndex", int32(i)).
				AppendArray("details", schemaRules(sub.Data, elems[i], false)).Build())
		}
	}
	if failed {
		e.add(newDetail("items").array("details", arr.Build()))
	}
	if len(elems) <= len(subs) {
		return
	}
	switch extra, _ := value.LookupField(e.schema, "additionalItems"); extra.Type {
	case bsoncore.TypeBoolean:
		if !extra.Boolean() {
			e.add(newDetail("additionalItems").specified(e.keywords("additionalItems")).
				str("reason", "found additional items").val("additionalItems", value.BuildArray(elems[len(subs):])))
		}
	case bsoncore.TypeEmbeddedDocument:
		e.firstFailingItem("additionalItems", "At least one additional item did not match the sub-schema", extra.Data, elems, len(subs))
	}
}

// firstFailingItem explains the first element from start on that fails sub.
func (e *schemaExplain) firstFailingItem(kw, reason string, sub []byte, elems []bsoncore.Value, start int) {
	for i := start; i < len(elems); i++ {
		if schemaOK(sub, elems[i]) {
			continue
		}
		d := newDetail(kw)
		annotate(d, sub)
		e.add(d.str("reason", reason).val("itemIndex", int32Value(i)).array("details", schemaRules(sub, elems[i], false)))
		return
	}
}

func (e *schemaExplain) objectRules() {
	if e.v.Type != bsoncore.TypeEmbeddedDocument || e.statedOther(objectTypes) {
		return
	}
	e.propertiesRule()
	e.allowedPropertiesRules()
	e.requiredRule()
	for _, kw := range []string{"minProperties", "maxProperties"} {
		if e.fails(kw) {
			e.add(newDetail(kw).specified(e.keywords(kw)).str("reason", "specified number of properties was not satisfied").
				val("numberOfProperties", int32Value(value.ArrayLen(e.v.Data))))
		}
	}
}

// propertiesRule explains the properties whose values fail their schema.
func (e *schemaExplain) propertiesRule() {
	props, ok := value.LookupField(e.schema, "properties")
	if !ok {
		return
	}
	arr := bsoncore.NewArrayBuilder()
	failed := false
	it := value.NewIter(props.Data)
	for k, sub, ok := it.Next(); ok; k, sub, ok = it.Next() {
		fv, present := value.LookupField(e.v.Data, string(k))
		if !present || schemaOK(sub.Data, fv) {
			continue
		}
		failed = true
		d := &detail{b: bsoncore.NewDocumentBuilder().AppendString("propertyName", string(k))}
		annotate(d, sub.Data)
		arr.AppendDocument(d.array("details", schemaRules(sub.Data, fv, false)).build())
	}
	if failed {
		e.add(newDetail("properties").array("propertiesNotSatisfied", arr.Build()))
	}
}

// allowedPropertiesRules explains additionalProperties and the
// patternProperties subschemas.
func (e *schemaExplain) allowedPropertiesRules() {
	known := map[string]bool{}
	if props, ok := value.LookupField(e.schema, "properties"); ok {
		for _, k := range fieldNames(props.Data) {
			known[k] = true
		}
	}
	patterns := e.patterns()
	var additional []string
	for _, k := range fieldNames(e.v.Data) {
		if !known[k] && !anyPattern(patterns, k) {
			additional = append(additional, k)
		}
	}
	switch ap, _ := value.LookupField(e.schema, "additionalProperties"); ap.Type {
	case bsoncore.TypeBoolean:
		if !ap.Boolean() && len(additional) > 0 {
			e.add(newDetail("additionalProperties").specified(e.keywords("additionalProperties")).
				val("additionalProperties", stringArray(additional)))
		}
	case bsoncore.TypeEmbeddedDocument:
		for _, k := range additional {
			fv, _ := value.LookupField(e.v.Data, k)
			if schemaOK(ap.Data, fv) {
				continue
			}
			d := newDetail("additionalProperties")
			annotate(d, ap.Data)
			e.add(d.str("reason", "at least one additional property did not match the subschema").
				str("failingProperty", k).array("details", schemaRules(ap.Data, fv, false)))
			break
		}
	}
	e.patternPropertiesRule(patterns)
}

// propertyPattern is one entry of patternProperties.
type propertyPattern struct {
	raw    string
	re     *pcre
	schema []byte
}

func (e *schemaExplain) patterns() []propertyPattern {
	pp, ok := value.LookupField(e.schema, "patternProperties")
	if !ok || pp.Type != bsoncore.TypeEmbeddedDocument {
		return nil
	}
	var out []propertyPattern
	it := value.NewIter(pp.Data)
	for k, sub, ok := it.Next(); ok; k, sub, ok = it.Next() {
		if re, err := compileRegex(string(k), ""); err == nil {
			out = append(out, propertyPattern{raw: string(k), re: re, schema: sub.Data})
		}
	}
	return out
}

func anyPattern(ps []propertyPattern, name string) bool {
	for _, p := range ps {
		if p.re.MatchString(name) {
			return true
		}
	}
	return false
}

// patternPropertiesRule explains, per pattern, the first property it
// matches whose value fails its schema.
func (e *schemaExplain) patternPropertiesRule(ps []propertyPattern) {
	arr := bsoncore.NewArrayBuilder()
	failed := false
	for _, p := range ps {
		for _, k := range fieldNames(e.v.Data) {
			fv, _ := value.LookupField(e.v.Data, k)
			if !p.re.MatchString(k) || schemaOK(p.schema, fv) {
				continue
			}
			failed = true
			d := &detail{b: bsoncore.NewDocumentBuilder().AppendString("propertyName", k)}
			annotate(d, p.schema)
			arr.AppendDocument(d.str("regexMatched", p.raw).array("details", schemaRules(p.schema, fv, false)).build())
			break
		}
	}
	if failed {
		e.add(newDetail("patternProperties").array("details", arr.Build()))
	}
}

// requiredRule lists the required properties that are missing, sorted.
func (e *schemaExplain) requiredRule() {
	req, ok := value.LookupField(e.schema, "required")
	if !ok {
		return
	}
	var missing []string
	for _, n := range value.ArrayValues(req.Data) {
		if s, ok := n.StringValueOK(); ok {
			if _, present := value.LookupField(e.v.Data, s); !present {
				missing = append(missing, s)
			}
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		e.add(newDetail("required").specified(e.keywords("required")).val("missingProperties", stringArray(missing)))
	}
}

func (e *schemaExplain) logicalRules() {
	for _, kw := range []string{"allOf", "anyOf", "oneOf"} {
		if e.fails(kw) {
			e.add(e.subschemas(kw))
		}
	}
	if e.fails("not") {
		e.add(newDetail("not").str("reason", "child expression matched"))
	}
	e.valueRule("enum", "value was not found in enum")
}

// subschemas explains allOf, anyOf and oneOf: the failing subschemas, or
// for a oneOf that more than one matched, which ones did.
func (e *schemaExplain) subschemas(kw string) *detail {
	subs, _ := value.LookupField(e.schema, kw)
	var matching []bsoncore.Value
	arr := bsoncore.NewArrayBuilder()
	for i, sub := range value.ArrayValues(subs.Data) {
		if schemaOK(sub.Data, e.v) {
			matching = append(matching, int32Value(i))
			continue
		}
		d := &detail{b: bsoncore.NewDocumentBuilder().AppendInt32("index", int32(i))}
		annotate(d, sub.Data)
		arr.AppendDocument(d.array("details", schemaRules(sub.Data, e.v, false)).build())
	}
	if kw == "oneOf" && len(matching) > 0 {
		return newDetail(kw).str("reason", "more than one subschema matched").val("matchingSchemaIndexes", value.BuildArray(matching))
	}
	return newDetail(kw).array("schemasNotSatisfied", arr.Build())
}

func (e *schemaExplain) typeRules() {
	for _, kw := range []string{"type", "bsonType"} {
		if e.fails(kw) {
			e.add(newDetail(kw).specified(e.keywords(kw)).str("reason", "type did not match").
				val("consideredValue", e.v).str("consideredType", value.TypeName(e.v.Type)))
		}
	}
}

// schemaOK reports whether v satisfies a (sub)schema, compiled afresh.
func schemaOK(schema []byte, v bsoncore.Value) bool {
	s, err := compileSchema(schema)
	return err == nil && s.ok(v)
}

// firstDuplicate is the first element equal to an earlier one.
func firstDuplicate(vals []bsoncore.Value) bsoncore.Value {
	for j := range vals {
		if containsValue(vals[:j], vals[j]) {
			return vals[j]
		}
	}
	return value.Null
}

func fieldNames(doc []byte) []string {
	var out []string
	it := value.NewIter(doc)
	for k, _, ok := it.Next(); ok; k, _, ok = it.Next() {
		out = append(out, string(k))
	}
	return out
}

func stringArray(ss []string) bsoncore.Value {
	arr := bsoncore.NewArrayBuilder()
	for _, s := range ss {
		arr.AppendString(s)
	}
	return bsoncore.Value{Type: bsoncore.TypeArray, Data: arr.Build()}
}

func int32Value(n int) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, int32(n))}
}
