package query

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/mongoerr"
)

// The filter tables: the top-level operators of a filter document, the
// operators of a field ({path: {$op: ...}}) and the $jsonSchema
// keywords, each in groups by topic, each group sorted by name. Rows with
// refuse are operators MongoDB has that DumboDB refuses, with the error
// refuse gives.

// filterTopTable lists the $-keys a filter document may contain.
var filterTopTable = [][]filterTopEntry{
	{ // logical
		{name: "$and", parse: parseLogical},
		{name: "$nor", parse: parseLogical},
		{name: "$or", parse: parseLogical},
	},
	{ // constants and comments
		{name: "$alwaysFalse", parse: parseConst},
		{name: "$alwaysTrue", parse: parseConst},
		{name: "$comment", parse: parseComment},
	},
	{ // the fields of a DBRef, which are paths, not operators
		{name: "$db", parse: parseDBRefField},
		{name: "$id", parse: parseDBRefField},
		{name: "$ref", parse: parseDBRefField},
	},
	{ // other languages
		{name: "$expr", parse: parseExprFilter},
		{name: "$jsonSchema", parse: parseJSONSchema},
		{name: "$text", parse: parseText},
		{name: "$where", parse: parseWhere},
	},
	{ // refused: $function outside $expr (as mongod), sampling
		{name: "$function", refuse: notAllowedHere},
		{name: "$sampleRate", refuse: notSupportedYet},
	},
}

// filterOpTable lists the operators of a field.
var filterOpTable = [][]filterOpEntry{
	{ // comparison
		{name: "$eq", parse: parseEq},
		{name: "$gt", parse: cmpParser(opGT)},
		{name: "$gte", parse: cmpParser(opGTE)},
		{name: "$in", parse: parseIn},
		{name: "$lt", parse: cmpParser(opLT)},
		{name: "$lte", parse: cmpParser(opLTE)},
		{name: "$ne", parse: parseNe},
		{name: "$nin", parse: parseNin},
	},
	{ // presence, type, negation and remainders
		{name: "$exists", parse: parseExists},
		{name: "$mod", parse: parseMod},
		{name: "$not", parse: parseNot},
		{name: "$type", parse: parseType},
	},
	{ // regular expressions: parseOps reads the pair (parseRegexPair)
		{name: "$options"},
		{name: "$regex"},
	},
	{ // arrays
		{name: "$all", parse: parseAll},
		{name: "$elemMatch", parse: parseElemMatch},
		{name: "$size", parse: parseSize},
	},
	{ // bits
		{name: "$bitsAllClear", parse: bitsParser(true, false)},
		{name: "$bitsAllSet", parse: bitsParser(true, true)},
		{name: "$bitsAnyClear", parse: bitsParser(false, false)},
		{name: "$bitsAnySet", parse: bitsParser(false, true)},
	},
	{ // geospatial ($within is $geoWithin's old name)
		{name: "$geoIntersects", parse: parseGeoIntersects},
		{name: "$geoWithin", parse: parseGeoWithin},
		{name: "$within", parse: parseGeoWithin},
	},
	{ // geo near: parseOps reads the group (parseNearOps)
		{name: "$maxDistance"},
		{name: "$minDistance"},
		{name: "$near"},
		{name: "$nearSphere"},
	},
	{ // refused: $text in a field
		{name: "$text", refuse: notSupportedYet},
	},
}

// schemaTable lists the $jsonSchema keywords.
var schemaTable = [][]schemaEntry{
	{ // types and values
		{name: "bsonType", parse: schemaBSONType},
		{name: "enum", parse: schemaEnum},
		{name: "type", parse: schemaType},
	},
	{ // numbers
		{name: "exclusiveMaximum", parse: schemaExclusive},
		{name: "exclusiveMinimum", parse: schemaExclusive},
		{name: "maximum", parse: schemaBound(true)},
		{name: "minimum", parse: schemaBound(false)},
		{name: "multipleOf", parse: schemaMultipleOf},
	},
	{ // strings
		{name: "maxLength", parse: schemaCount(bsoncore.TypeString, true)},
		{name: "minLength", parse: schemaCount(bsoncore.TypeString, false)},
		{name: "pattern", parse: schemaPattern},
	},
	{ // objects
		{name: "additionalProperties", parse: schemaAdditional},
		{name: "maxProperties", parse: schemaCount(bsoncore.TypeEmbeddedDocument, true)},
		{name: "minProperties", parse: schemaCount(bsoncore.TypeEmbeddedDocument, false)},
		{name: "patternProperties", parse: schemaPatternProperties},
		{name: "properties", parse: schemaProperties},
		{name: "required", parse: schemaRequired},
	},
	{ // arrays
		{name: "additionalItems", parse: schemaAdditionalItems}, // read by items
		{name: "items", parse: schemaItems},
		{name: "maxItems", parse: schemaCount(bsoncore.TypeArray, true)},
		{name: "minItems", parse: schemaCount(bsoncore.TypeArray, false)},
		{name: "uniqueItems", parse: schemaUnique},
	},
	{ // logic
		{name: "allOf", parse: schemaLogic("allOf")},
		{name: "anyOf", parse: schemaLogic("anyOf")},
		{name: "not", parse: schemaNot},
		{name: "oneOf", parse: schemaLogic("oneOf")},
	},
	{ // annotations
		{name: "description", parse: schemaIgnored},
		{name: "title", parse: schemaIgnored},
	},
	{ // refused: references, defaults, formats and dependencies
		{name: "$ref", refuse: schemaNotSupported},
		{name: "$schema", refuse: schemaNotSupported},
		{name: "default", refuse: schemaNotSupported},
		{name: "definitions", refuse: schemaNotSupported},
		{name: "dependencies", refuse: schemaNotSupported},
		{name: "format", refuse: schemaNotSupported},
		{name: "id", refuse: schemaNotSupported},
	},
}

// filterTopEntry is a row of filterTopTable.
type filterTopEntry struct {
	name   string
	parse  func(f *Filter, name string, v bsoncore.Value, collect bool) (docExpr, error)
	refuse func(name string) error
}

// filterOpEntry is a row of filterOpTable; one with neither parse nor
// refuse is read by parseOps itself.
type filterOpEntry struct {
	name   string
	parse  fieldOp
	refuse func(name string) error
}

// schemaEntry is a row of schemaTable; parse gets the keyword's argument
// and the schema document it stands in.
type schemaEntry struct {
	name   string
	parse  func(s *schema, arg bsoncore.Value, parent []byte) error
	refuse func(name string) error
}

func (e filterTopEntry) rowName() string { return e.name }
func (e filterOpEntry) rowName() string  { return e.name }
func (e schemaEntry) rowName() string    { return e.name }

func notAllowedHere(name string) error {
	return mongoerr.New(mongoerr.BadValue, "%s is not allowed in this context", name)
}

func notSupportedYet(name string) error {
	return mongoerr.New(mongoerr.NotImplemented, "%s is not supported by DumboDB yet", name)
}

func schemaNotSupported(name string) error {
	return mongoerr.New(mongoerr.FailedToParse, "$jsonSchema keyword '%s' is not currently supported", name)
}

func schemaIgnored(*schema, bsoncore.Value, []byte) error { return nil }

// topLevelOps, fieldOps and schemaKeywords find the tables' rows by name.
// They are filled in init because the parse functions recurse into them
// ($and, $not and $elemMatch, properties).
var (
	topLevelOps    map[string]filterTopEntry
	fieldOps       map[string]filterOpEntry
	schemaKeywords map[string]schemaEntry
)

func init() {
	topLevelOps = indexTable(filterTopTable)
	fieldOps = indexTable(filterOpTable)
	schemaKeywords = indexTable(schemaTable)
}
