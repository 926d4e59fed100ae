package server

import (
	"context"
	"strings"

	"github.com/rs/zerolog"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/auth"
	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/query"
	"github.com/dumbodb/dumbodb/storage"
	"github.com/dumbodb/dumbodb/value"
)

// Collection validators (docs/design/validators.md). A collection's
// validator, validationLevel and validationAction live in its options, as
// create or collMod gave them, so that they are versioned with its
// documents. Every write that stores a document checks it here, unless
// the command says bypassDocumentValidation.

// validationOptions are what a create or collMod gives of a collection's
// validation; a field not given is left as it was.
type validationOptions struct {
	validator     bsoncore.Document
	hasValidator  bool
	level, action string
}

var (
	validationLevels  = map[string]bool{"off": true, "strict": true, "moderate": true}
	validationActions = map[string]bool{"error": true, "warn": true}
)

// validationOptionNames are the three options.
var validationOptionNames = []string{"validator", "validationLevel", "validationAction"}

// given reports whether the command gave any of them.
func (o *validationOptions) given() bool {
	return o.hasValidator || o.level != "" || o.action != ""
}

// parse reads one of the options of the command cmd.
func (o *validationOptions) parse(cmd, k string, v bsoncore.Value) error {
	if k == "validator" {
		d, ok := v.DocumentOK()
		if !ok {
			return typeMismatch(cmd, k, v, "object")
		}
		o.validator, o.hasValidator = d, true
		return nil
	}
	s, ok := v.StringValueOK()
	if !ok {
		return typeMismatch(cmd, k, v, "string")
	}
	allowed, dst := validationLevels, &o.level
	if k == "validationAction" {
		allowed, dst = validationActions, &o.action
	}
	if !allowed[s] {
		return mongoerr.New(mongoerr.BadValue, "Enumeration value '%s' for field '%s.%s' is not a valid value.", s, cmd, k)
	}
	*dst = s
	return nil
}

// handler is parse as a collMod argument handler.
func (o *validationOptions) handler(cmd, k string) fieldHandler {
	return func(v bsoncore.Value) error { return o.parse(cmd, k, v) }
}

// check refuses a validator mongod refuses on db.coll: one that does not
// compile as a validator (under the collection's collation), or one on a
// system collection or an internal database. collMod's parse errors carry
// mongod's context; create's do not, as on mongod.
func (o *validationOptions) check(db, coll string, collation bsoncore.Document, collMod bool) error {
	if !o.hasValidator || len(o.validator) <= 5 {
		return nil
	}
	ns := db + "." + coll
	switch {
	case strings.HasPrefix(coll, "system."):
		return mongoerr.New(mongoerr.InvalidOptions, "Document validators not allowed on system collection %s", ns)
	case db == "admin" || db == "local" || db == "config":
		return mongoerr.New(mongoerr.InvalidOptions, "Document validators are not allowed on collection %s in the %s internal database", ns, db)
	}
	_, err := compileValidator(o.validator, collation)
	if err != nil && collMod {
		me := mongoerr.As(err)
		return mongoerr.New(me.Code, "Parsing of collection validator failed :: caused by :: %s", me.Msg)
	}
	return err
}

// apply is opts with the given options set; an empty validator removes
// the validator, as mongod does not keep one.
func (o *validationOptions) apply(opts bsoncore.Document) bsoncore.Document {
	if o.hasValidator {
		if len(o.validator) <= 5 {
			opts = withoutOption(opts, "validator")
		} else {
			opts = withOptionValue(opts, "validator", value.DocValue(o.validator))
		}
	}
	if o.level != "" {
		opts = withOptionValue(opts, "validationLevel", value.String(o.level))
	}
	if o.action != "" {
		opts = withOptionValue(opts, "validationAction", value.String(o.action))
	}
	return opts
}

// describe adds the given options to a collMod's change-event description.
func (o *validationOptions) describe(desc *bsoncore.DocumentBuilder) {
	if o.hasValidator {
		desc.AppendDocument("validator", o.validator)
	}
	if o.level != "" {
		desc.AppendString("validationLevel", o.level)
	}
	if o.action != "" {
		desc.AppendString("validationAction", o.action)
	}
}

func compileValidator(doc, collation bsoncore.Document) (*query.Validator, error) {
	var coll *value.Collation
	if collation != nil {
		var err error
		if coll, err = value.ParseCollation(collation); err != nil {
			return nil, err
		}
	}
	return query.CompileValidator(doc, coll)
}

// docValidator checks the documents one command writes to one collection.
// A nil *docValidator checks nothing: the collection has no validator, its
// level is off, or the command bypasses validation.
type docValidator struct {
	v        *query.Validator
	ns       string
	moderate bool // updates of documents that already fail are not checked
	warn     bool // a failure is logged, and the write goes ahead
	log      zerolog.Logger
}

// requireBypass checks the privilege a bypassDocumentValidation needs.
func (r *request) requireBypass(bypass bool, db string) error {
	if !bypass {
		return nil
	}
	return r.require(auth.BypassDocumentValidation, db)
}

// validatorFor is coll's validator as a write in tx checks it.
func (r *request) validatorFor(tx *storage.Tx, db, coll string, bypass bool) (*docValidator, error) {
	info, ok := tx.Collection(coll)
	if !ok || bypass {
		return nil, nil
	}
	doc, ok := info.Options.Lookup("validator").DocumentOK()
	level, _ := info.Options.Lookup("validationLevel").StringValueOK()
	if !ok || len(doc) <= 5 || level == "off" {
		return nil, nil
	}
	collation, _ := info.Options.Lookup("collation").DocumentOK()
	v, err := compileValidator(doc, collation)
	if err != nil {
		return nil, err
	}
	action, _ := info.Options.Lookup("validationAction").StringValueOK()
	return &docValidator{v: v, ns: db + "." + coll, moderate: level == "moderate", warn: action == "warn", log: r.c.log}, nil
}

// checkInsert checks a document a write adds.
func (dv *docValidator) checkInsert(doc bsoncore.Document) error {
	if dv == nil || dv.v.Match(doc) {
		return nil
	}
	return dv.fail(doc)
}

// checkUpdate checks the new version of a document; under moderate, a
// document that failed before may go on failing.
func (dv *docValidator) checkUpdate(before, after bsoncore.Document) error {
	if dv == nil || (dv.moderate && !dv.v.Match(before)) {
		return nil
	}
	return dv.checkInsert(after)
}

// checkReplace checks a document stored in place of whatever has its _id
// (a $merge), reading the stored one only when moderate needs it.
func (dv *docValidator) checkReplace(ctx context.Context, tx *storage.Tx, coll string, doc bsoncore.Document) error {
	if dv == nil {
		return nil
	}
	if dv.moderate {
		before, found, err := tx.Get(ctx, coll, doc.Lookup("_id"))
		if err != nil {
			return err
		}
		if found {
			return dv.checkUpdate(before, doc)
		}
	}
	return dv.checkInsert(doc)
}

// fail is DocumentValidationFailure with mongod's errInfo or, with the
// warn action, mongod's warning and no error.
func (dv *docValidator) fail(doc bsoncore.Document) error {
	errInfo := bsoncore.NewDocumentBuilder().
		AppendValue("failingDocumentId", doc.Lookup("_id")).
		AppendDocument("details", dv.v.Details(doc)).Build()
	if dv.warn {
		dv.log.Warn().Str("c", "STORAGE").Int("id", 20294).
			Dict("attr", zerolog.Dict().Str("namespace", dv.ns).
				RawJSON("document", extJSON(doc)).RawJSON("errInfo", extJSON(errInfo))).
			Msg("Document would fail validation")
		return nil
	}
	me := mongoerr.New(mongoerr.DocumentValidationFailure, "Document failed validation")
	me.Info = bsoncore.NewDocumentBuilder().AppendDocument("errInfo", errInfo).Build()
	return me
}

// extJSON is a document as relaxed extended JSON, as mongod logs it.
func extJSON(doc bsoncore.Document) []byte {
	out, err := bson.MarshalExtJSON(bson.Raw(doc), false, false)
	if err != nil {
		return []byte(`{}`)
	}
	return out
}

// withoutOption is opts without key.
func withoutOption(opts bsoncore.Document, key string) bsoncore.Document {
	b := bsoncore.NewDocumentBuilder()
	els, _ := opts.Elements()
	for _, el := range els {
		if el.Key() != key {
			b.AppendValue(el.Key(), el.Value())
		}
	}
	return b.Build()
}

// withOptionValue is opts with key set to v, in place when opts has it
// (so that listCollections keeps the order create gave), else appended.
func withOptionValue(opts bsoncore.Document, key string, v bsoncore.Value) bsoncore.Document {
	b := bsoncore.NewDocumentBuilder()
	els, _ := opts.Elements()
	found := false
	for _, el := range els {
		if el.Key() == key {
			b.AppendValue(key, v)
			found = true
			continue
		}
		b.AppendValue(el.Key(), el.Value())
	}
	if !found {
		b.AppendValue(key, v)
	}
	return b.Build()
}
