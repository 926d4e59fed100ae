package server

// The argument layer: every command declares each field it takes as data,
// a map from the field's name to its handler, and parseArgs walks the
// command against it. A field is one of
//
//   - read: a typed handler (docArg, boolArg, nonNegativeArg, ...) that
//     stores the value or fails with TypeMismatch (14) naming the field;
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
	"sync/atomic"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"dumbodb/query/mongoerr"
	"dumbodb/query/value"
)

// genericFields are accepted by every command (the driver adds them).
var genericFields = map[string]bool{
	"$db": true, "lsid": true, "txnNumber": true, "autocommit": true, "startTransaction": true,
	"$clusterTime": true, "$readPreference": true, "readConcern": true, "writeConcern": true,
	"apiVersion": true, "apiStrict": true, "apiDeprecationErrors": true, "comment": true,
	"maxTimeMS": true, "$audit": true, "$client": true, "$configServerState": true,
	"mayBypassWriteBlocking": true, "$readPreferenceMode": true, "databaseVersion": true,
	"shardVersion": true, "clientOperationKey": true, "$queryOptions": true,
	"stmtId": true, "stmtIds": true,
}

// unknownField is the IDL parser's error for a field a command does not take.
func unknownField(cmd, field string) error {
	return mongoerr.New(mongoerr.Code(40415), "BSON field '%s.%s' is an unknown field.", cmd, field)
}

// typeMismatch is the IDL parser's error for a field of the wrong type.
func typeMismatch(cmd, field string, v bsoncore.Value, want string) error {
	return mongoerr.New(mongoerr.TypeMismatch, "BSON field '%s.%s' is the wrong type '%s', expected type '%s'",
		cmd, field, value.TypeName(v.Type), want)
}

// fieldHandler handles one argument of a command.
type fieldHandler func(v bsoncore.Value) error

// parseArgs walks a command's arguments (after the first), calling the
// handler for each known field. Unknown non-generic fields are an error, as
// on mongod.
func (r *request) parseArgs(fields map[string]fieldHandler) error {
	if seen := argsDeclared.Load(); seen != nil {
		(*seen)(r.name, fields)
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

// Argument decoders, each returning MongoDB's type-mismatch error.

// typedArg decodes a field with get, failing with MongoDB's type-mismatch
// error naming the wanted type.
func typedArg[T any](r *request, field, want string, dst *T, get func(bsoncore.Value) (T, bool)) fieldHandler {
	return func(v bsoncore.Value) error {
		x, ok := get(v)
		if !ok {
			return typeMismatch(r.name, field, v, want)
		}
		*dst = x
		return nil
	}
}

func (r *request) docArg(field string, dst *bsoncore.Document) fieldHandler {
	return typedArg(r, field, "object", dst, bsoncore.Value.DocumentOK)
}

func (r *request) optDocArg(field string, dst *bsoncore.Document) fieldHandler {
	return func(v bsoncore.Value) error {
		if v.Type == bsoncore.TypeNull {
			return nil
		}
		return r.docArg(field, dst)(v)
	}
}

func (r *request) arrayArg(field string, dst *bsoncore.Array) fieldHandler {
	return typedArg(r, field, "array", dst, bsoncore.Value.ArrayOK)
}

func (r *request) boolArg(field string, dst *bool) fieldHandler {
	return typedArg(r, field, "bool", dst, asBool)
}

func (r *request) stringArg(field string, dst *string) fieldHandler {
	return typedArg(r, field, "string", dst, bsoncore.Value.StringValueOK)
}

func (r *request) int64Arg(field string, dst *int64) fieldHandler {
	return typedArg(r, field, "long", dst, value.AsInt64)
}

// ignoredArg type-checks a field that is accepted on purpose and changes
// nothing here: want is its type as mongod declares it ("bool", "object",
// "long", "string", "any"), and why it changes nothing is its row in
// ignoredArgs. A field without a row answers InternalError, which the
// argument walk test reports.
func (r *request) ignoredArg(field, want string) fieldHandler {
	if _, ok := ignoredArgs[canonicalCommand(r.name)+"."+field]; !ok {
		return func(bsoncore.Value) error {
			return mongoerr.New(mongoerr.InternalError, "%s.%s is ignored without a reason in ignoredArgs", r.name, field)
		}
	}
	check := argTypes[want]
	return func(v bsoncore.Value) error {
		if check != nil && !check(v) {
			return typeMismatch(r.name, field, v, want)
		}
		return nil
	}
}

// argTypes are the types ignoredArg checks, as mongod's IDL accepts them.
var argTypes = map[string]func(bsoncore.Value) bool{
	"bool":   func(v bsoncore.Value) bool { _, ok := asBool(v); return ok },
	"object": func(v bsoncore.Value) bool { return v.Type == bsoncore.TypeEmbeddedDocument },
	"long":   func(v bsoncore.Value) bool { _, ok := value.AsInt64(v); return ok },
	"string": func(v bsoncore.Value) bool { return v.Type == bsoncore.TypeString },
	"any":    nil,
}

// argsDeclared, when set (by the argument walk test), is told every
// command's declared fields as parseArgs walks them.
var argsDeclared atomic.Pointer[func(cmd string, fields map[string]fieldHandler)]

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
