package server

// The argument layer: every command declares each field it takes as data,
// a map from the field's name to its reader, and the layer walks the
// command against it. The hot commands (find, insert, update, delete and
// their statements) declare theirs once, in tables of readers into their
// argument structs (argTable, parseTable), so that parsing them allocates
// no map; the others build handler maps per request (parseArgs). A field
// is one of
//
//   - read: a typed reader (argField.doc, .bool, .nonNegative, ... and the
//     handlers built on them) that stores the value or fails with
//     TypeMismatch (14) naming the field;
//   - ignored on purpose: ignoredArg, which type-checks the value as mongod
//     does and whose reason is a row of ignoredArgs (args_ignored.go);
//   - not implemented: refuseTrue or a handler answering NotImplemented
//     (238) naming the field;
//   - unknown: any other field but the generic ones, UnknownField (40415).
//
// TestCommandArgumentsWalk sends every declared field of every command
// with a value of the wrong type and an unknown field beside them, so a
// field that is accepted and silently dropped fails the test.

import (
	"strconv"
	"sync/atomic"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/value"
)

// unknownField is the IDL parser's error for a field a command does not take.
func unknownField(cmd, field string) error {
	return mongoerr.New(mongoerr.Location40415, "BSON field '%s.%s' is an unknown field.", cmd, field)
}

// typeMismatch is the IDL parser's error for a field of the wrong type.
func typeMismatch(cmd, field string, v bsoncore.Value, want string) error {
	return mongoerr.New(mongoerr.TypeMismatch, "BSON field '%s.%s' is the wrong type '%s', expected type '%s'",
		cmd, field, value.TypeName(v.Type), want)
}

// typesMismatch is the IDL parser's error for a field that takes several
// types, listed as mongod lists them. mongod 8 closes the quote after the
// bracket ('[bool, long]'); mongod 7 closed it inside ('[bool, long']).
func typesMismatch(cmd, field string, v bsoncore.Value, types string) error {
	return mongoerr.New(mongoerr.TypeMismatch, "BSON field '%s.%s' is the wrong type '%s', expected types '[%s]'",
		cmd, field, value.TypeName(v.Type), types)
}

// The type lists of mongod's IDL types that take any number: safeInt64
// and the like, and safeBool, which takes a number as a truth value.
const (
	numberTypes   = "long, int, decimal, double"
	safeBoolTypes = "bool, " + numberTypes
)

// fieldHandler handles one argument of a command.
type fieldHandler func(v bsoncore.Value) error

// parseArgs walks a command's arguments (after the first), calling the
// handler for each known field. Unknown non-generic fields are an error, as
// on mongod.
func (r *request) parseArgs(fields map[string]fieldHandler) error {
	if seen := argsDeclared.Load(); seen != nil {
		names := make([]string, 0, len(fields))
		for k := range fields {
			names = append(names, k)
		}
		(*seen)(r.name, names)
	}
	// The wire layer validated the command; iterating it in place, with
	// look-ups by the key's bytes, allocates nothing per field.
	it := value.NewIter(r.cmd)
	it.Next() // the command's name
	for {
		key, v, ok := it.Next()
		if !ok {
			return nil
		}
		if h, ok := fields[string(key)]; ok {
			if err := h(v); err != nil {
				return err
			}
			continue
		}
		if !genericFields[string(key)] {
			return unknownField(r.name, string(key))
		}
	}
}

// Handlers for the commands that build their fields per request, on the
// readers of argField.

func (r *request) field(name string) argField { return argField{cmd: r.name, name: name} }

func (r *request) docArg(field string, dst *bsoncore.Document) fieldHandler {
	return func(v bsoncore.Value) error { return r.field(field).doc(v, dst) }
}

func (r *request) optDocArg(field string, dst *bsoncore.Document) fieldHandler {
	return func(v bsoncore.Value) error { return r.field(field).optDoc(v, dst) }
}

func (r *request) arrayArg(field string, dst *bsoncore.Array) fieldHandler {
	return func(v bsoncore.Value) error { return r.field(field).array(v, dst) }
}

func (r *request) boolArg(field string, dst *bool) fieldHandler {
	return func(v bsoncore.Value) error { return r.field(field).bool(v, dst) }
}

// safeBoolArg reads a field of mongod's safeBool type: a bool or a number
// (non-zero is true), null being absent as for every IDL field.
func (r *request) safeBoolArg(field string, dst *bool) fieldHandler {
	return func(v bsoncore.Value) error {
		if v.Type == bsoncore.TypeNull {
			return nil
		}
		b, ok := asBool(v)
		if !ok {
			return typesMismatch(r.name, field, v, safeBoolTypes)
		}
		*dst = b
		return nil
	}
}

func (r *request) stringArg(field string, dst *string) fieldHandler {
	return func(v bsoncore.Value) error { return r.field(field).string(v, dst) }
}

func (r *request) int64Arg(field string, dst *int64) fieldHandler {
	return func(v bsoncore.Value) error { return r.field(field).int64(v, dst) }
}

// nonNegativeArg reads an integer that must be >= 0 (skip, limit, batchSize).
func (r *request) nonNegativeArg(field string, dst *int64) fieldHandler {
	return func(v bsoncore.Value) error { return r.field(field).nonNegative(v, dst) }
}

// ignoredArg type-checks a field that is accepted on purpose and changes
// nothing here: want is its type as mongod declares it ("bool", "object",
// "long", "string", "any"), and why it changes nothing is its row in
// ignoredArgs. A field without a row answers InternalError, which the
// argument walk test reports.
func (r *request) ignoredArg(field, want string) fieldHandler {
	return func(v bsoncore.Value) error { return r.field(field).ignored(v, want) }
}

// argTypes are the types ignoredArg checks, as mongod's IDL accepts them.
var argTypes = map[string]func(bsoncore.Value) bool{
	"bool":   func(v bsoncore.Value) bool { _, ok := asBool(v); return ok },
	"object": func(v bsoncore.Value) bool { return v.Type == bsoncore.TypeEmbeddedDocument },
	"long":   func(v bsoncore.Value) bool { _, ok := value.WholeInt64(v); return ok },
	"string": func(v bsoncore.Value) bool { return v.Type == bsoncore.TypeString },
	"any":    nil,
}

// argsDeclared, when set (by the argument walk test), is told every
// command's declared fields as parseArgs walks them.
var argsDeclared atomic.Pointer[func(cmd string, fields []string)]

// refuseTrue refuses an option that would change the result when true
// and is not implemented (false is what every find does).
func (r *request) refuseTrue(field string) fieldHandler {
	return func(v bsoncore.Value) error {
		if on, ok := asBool(v); ok && !on {
			return nil
		}
		return mongoerr.New(mongoerr.NotImplemented, "%s.%s is not implemented", r.name, field)
	}
}

// asBool accepts what mongod's IDL accepts for a bool: bools and numbers.
func asBool(v bsoncore.Value) (bool, bool) {
	switch v.Type {
	case bsoncore.TypeBoolean:
		return v.Boolean(), true
	case bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDouble, bsoncore.TypeDecimal128:
		f, ok := v.AsFloat64OK()
		return f != 0, ok
	}
	return false, false
}

// hintArg reads an index hint: a name or a key pattern.
func (r *request) hintArg(dst *bsoncore.Value) fieldHandler {
	return func(v bsoncore.Value) error {
		if v.Type != bsoncore.TypeString && v.Type != bsoncore.TypeEmbeddedDocument {
			return mongoerr.New(mongoerr.FailedToParse, "hint must be a string or an object") // mongod's IndexHint parser
		}
		*dst = v
		return nil
	}
}

// given wraps h to record that the field was present.
func given(present *bool, h fieldHandler) fieldHandler {
	return func(v bsoncore.Value) error {
		*present = true
		return h(v)
	}
}

// A hot command declares its fields once, in a table of readers into its
// argument struct, instead of building handlers for each request: walking
// a find's or a write's arguments then allocates nothing.

// argField names the field a reader reads: the command (or the path of
// an array of sub-documents, "update.updates", and elem, one more than the
// index of the element read: 0 for none) and the field.
type argField struct {
	cmd  string
	elem int
	name string
}

// owner is the path of the document the field is in, as mongod's errors
// name it ("update.updates.3"); made only for an error.
func (f argField) owner() string {
	if f.elem == 0 {
		return f.cmd
	}
	return f.cmd + "." + strconv.Itoa(f.elem-1)
}

// numberOwner is owner for the type error of a number field: find's are
// named by mongod's parser of the whole command, FindCommandRequest.
func (f argField) numberOwner() string {
	if f.cmd == "find" {
		return "FindCommandRequest"
	}
	return f.owner()
}

// argReader reads one field's value into the arguments a.
type argReader[A any] func(f argField, a *A, v bsoncore.Value) error

// argTable is a command's fields, declared once (with declareArgs).
type argTable[A any] map[string]argEntry[A]

// argEntry is a field's reader and its name, kept so that reading a field
// makes no string of its key.
type argEntry[A any] struct {
	name string
	read argReader[A]
}

// declareArgs makes the table of a command's field readers.
func declareArgs[A any](readers map[string]argReader[A]) argTable[A] {
	t := make(argTable[A], len(readers))
	for name, rd := range readers {
		t[name] = argEntry[A]{name: name, read: rd}
	}
	return t
}

// parseTable walks a command's own document against table into a: it
// skips the first field, the command's name, and takes the generic fields.
func parseTable[A any](cmd string, doc bsoncore.Document, table argTable[A], a *A) error {
	return walkTable(argField{cmd: cmd}, doc, true, table, a)
}

// parseElement walks element i of the array of sub-documents at path
// ("update.updates"), which takes only its declared fields.
func parseElement[A any](path string, i int, doc bsoncore.Document, table argTable[A], a *A) error {
	return walkTable(argField{cmd: path, elem: i + 1}, doc, false, table, a)
}

func walkTable[A any](at argField, doc bsoncore.Document, command bool, table argTable[A], a *A) error {
	cmd := at.cmd
	if seen := argsDeclared.Load(); seen != nil {
		(*seen)(cmd, tableNames(table))
	}
	it := value.NewIter(doc)
	if command {
		it.Next()
	}
	for {
		key, v, ok := it.Next()
		if !ok {
			return nil
		}
		if e, ok := table[string(key)]; ok {
			at.name = e.name
			if err := e.read(at, a, v); err != nil {
				return err
			}
			continue
		}
		if !command || !genericFields[string(key)] {
			return unknownField(at.owner(), string(key))
		}
	}
}

func tableNames[A any](table argTable[A]) []string {
	names := make([]string, 0, len(table))
	for k := range table {
		names = append(names, k)
	}
	return names
}

// The readers of argument tables, each failing with mongod's error.

func (f argField) doc(v bsoncore.Value, dst *bsoncore.Document) error {
	d, ok := v.DocumentOK()
	if !ok {
		return typeMismatch(f.owner(), f.name, v, "object")
	}
	*dst = d
	return nil
}

// optDoc is doc, taking null for absent.
func (f argField) optDoc(v bsoncore.Value, dst *bsoncore.Document) error {
	if v.Type == bsoncore.TypeNull {
		return nil
	}
	return f.doc(v, dst)
}

// collation reads an update's or a delete's collation: an empty one is
// none, and the collection's default applies, as mongod reads it.
func (f argField) collation(v bsoncore.Value, dst *bsoncore.Document) error {
	if err := f.optDoc(v, dst); err != nil || nonEmpty(*dst) {
		return err
	}
	*dst = nil
	return nil
}

func (f argField) array(v bsoncore.Value, dst *bsoncore.Array) error {
	arr, ok := v.ArrayOK()
	if !ok {
		return typeMismatch(f.owner(), f.name, v, "array")
	}
	*dst = arr
	return nil
}

func (f argField) bool(v bsoncore.Value, dst *bool) error {
	b, ok := asBool(v)
	if !ok {
		return typeMismatch(f.owner(), f.name, v, "bool")
	}
	*dst = b
	return nil
}

// optionalBool reads a field of mongod's optionalBool type (find's
// flags): a boolean and nothing else, not even null.
func (f argField) optionalBool(v bsoncore.Value, dst *bool) error {
	if v.Type != bsoncore.TypeBoolean {
		return mongoerr.New(mongoerr.TypeMismatch, "Field '%s' should be a boolean value, but found: %s", f.name, value.TypeName(v.Type))
	}
	*dst = v.Boolean()
	return nil
}

func (f argField) string(v bsoncore.Value, dst *string) error {
	s, ok := v.StringValueOK()
	if !ok {
		return typeMismatch(f.owner(), f.name, v, "string")
	}
	*dst = s
	return nil
}

// int64 reads a whole number: an integer, or a double or decimal without
// a fraction (limit: 1.0 is 1, limit: 42.13 is refused).
func (f argField) int64(v bsoncore.Value, dst *int64) error {
	n, ok := value.WholeInt64(v)
	if !ok {
		return typeMismatch(f.owner(), f.name, v, "long")
	}
	*dst = n
	return nil
}

// nonNegative reads an integer that must be >= 0 (skip, limit, batchSize).
func (f argField) nonNegative(v bsoncore.Value, dst *int64) error {
	if !value.IsNumber(v) {
		return typesMismatch(f.numberOwner(), f.name, v, numberTypes)
	}
	if err := f.int64(v, dst); err != nil {
		return err
	}
	if *dst < 0 {
		return mongoerr.New(mongoerr.Location51024, "BSON field '%s' value must be >= 0, actual value '%d'", f.name, *dst)
	}
	return nil
}

// batchSize reads a cursor's batch size, >= 0: mongod takes any number
// and drops a fraction (1.9 is 1).
func (f argField) batchSize(v bsoncore.Value, dst *int64) error {
	n, ok := value.AsInt64(v)
	if !ok {
		return typesMismatch(f.numberOwner(), f.name, v, numberTypes)
	}
	if n < 0 {
		return mongoerr.New(mongoerr.Location51024, "BSON field '%s' value must be >= 0, actual value '%d'", f.name, n)
	}
	*dst = n
	return nil
}

// hint reads an index hint: a name or a key pattern.
func (f argField) hint(v bsoncore.Value, dst *bsoncore.Value) error {
	if v.Type != bsoncore.TypeString && v.Type != bsoncore.TypeEmbeddedDocument {
		return mongoerr.New(mongoerr.FailedToParse, "hint must be a string or an object") // mongod's IndexHint parser
	}
	*dst = v
	return nil
}

// ignored is ignoredArg's check, for a table.
func (f argField) ignored(v bsoncore.Value, want string) error {
	if _, ok := ignoredArgs[canonicalCommand(f.cmd)+"."+f.name]; !ok {
		return mongoerr.New(mongoerr.InternalError, "%s.%s is ignored without a reason in ignoredArgs", f.owner(), f.name)
	}
	if check := argTypes[want]; check != nil && !check(v) {
		return typeMismatch(f.owner(), f.name, v, want)
	}
	return nil
}

// ignoredAs is a table's reader for a field ignored on purpose.
func ignoredAs[A any](want string) argReader[A] {
	return func(f argField, _ *A, v bsoncore.Value) error { return f.ignored(v, want) }
}

// missingField is the IDL parser's error for a required field that is
// absent from an element of the array at path (mongod names no index).
func missingField(path, field string) error {
	return mongoerr.New(mongoerr.Location40414, "BSON field '%s.%s' is missing but a required field", path, field)
}
