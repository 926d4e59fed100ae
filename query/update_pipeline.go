package query

import (
	"bytes"
	"errors"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/value"
)

// Pipeline-style updates: an array of the per-document transform stages
// (stage_fields.go), whose result replaces the document.

// compileUpdatePipeline compiles an update given as an array of stages.
func compileUpdatePipeline(arr []byte, env *Env) (*Update, error) {
	u := &Update{env: env, pipeline: []docTransform{}}
	for _, v := range value.ArrayValues(arr) {
		row, err := updateStage(v)
		if err != nil {
			return nil, err
		}
		name := value.FirstKey(v.Data)
		spec, _ := value.LookupField(v.Data, name)
		t, err := row.transform(spec, env)
		if se, ok := errors.AsType[*specError](err); ok {
			return nil, se.named(name)
		}
		if err != nil {
			return nil, err
		}
		u.pipeline = append(u.pipeline, t)
	}
	return u, nil
}

// CheckUpdatePipeline checks the shape of a pipeline update, an array of
// one-field documents naming stages an update may use, without compiling
// the stages: a write command refuses a malformed one as it is parsed,
// as mongod does, before running any statement.
func CheckUpdatePipeline(arr bsoncore.Array) error {
	for _, v := range value.ArrayValues(arr) {
		if _, err := updateStage(v); err != nil {
			return err
		}
	}
	return nil
}

// updateStage is the stage row of one element of a pipeline update.
func updateStage(v bsoncore.Value) (stageEntry, error) {
	if v.Type != bsoncore.TypeEmbeddedDocument {
		return stageEntry{}, mongoerr.New(mongoerr.TypeMismatch, "Each element of the 'pipeline' array must be an object")
	}
	if value.ArrayLen(v.Data) != 1 {
		return stageEntry{}, mongoerr.New(mongoerr.Location40323, "A pipeline stage specification object must contain exactly one field.")
	}
	name := value.FirstKey(v.Data)
	row, ok := stages[name]
	if !ok || row.transform == nil {
		if ok && !row.has(stageUnsupported) {
			return stageEntry{}, mongoerr.New(mongoerr.InvalidOptions, "%s is not allowed to be used within an update", name)
		}
		return stageEntry{}, mongoerr.New(mongoerr.Location40324, "Unrecognized pipeline stage name: '%s'", name)
	}
	return row, nil
}

// applyPipeline runs a pipeline update. The result replaces the document,
// keeping its _id, which the pipeline may not change.
func (u *Update) applyPipeline(doc bsoncore.Document, isInsert bool) (bsoncore.Document, bool, error) {
	out := doc
	for _, t := range u.pipeline {
		var err error
		if out, err = t(out); err != nil {
			return nil, false, err
		}
	}
	oldID, hadID := value.LookupField(doc, "_id")
	newID, hasID := value.LookupField(out, "_id")
	switch {
	case hadID && hasID && !value.Same(oldID, newID) && !isInsert:
		return nil, false, mongoerr.New(mongoerr.ImmutableField, "After applying the update, the (immutable) field '_id' was found to have been altered to %s", value.FormatElem("_id", newID))
	case hadID && !hasID:
		out = prependID(oldID, out)
	}
	return out, !bytes.Equal(out, doc), nil
}
