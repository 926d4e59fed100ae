package server

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/query"
	"github.com/dumbodb/dumbodb/value"
)

// The Stable API (mongod's apiVersion, apiStrict, apiDeprecationErrors):
// a client that declares API version 1 with apiStrict may run only the
// commands and aggregation stages in it (the command table's apiV1, the
// stage table's stageNotInAPIV1); apiDeprecationErrors refuses the
// deprecated ones, of which version 1 has none here.

// applyAPIVersion checks the command's API parameters.
func (r *request) applyAPIVersion() error {
	v, err := r.argErr("apiVersion")
	strict, _ := asBool(r.arg("apiStrict"))
	_, strictErr := r.argErr("apiStrict")
	_, deprErr := r.argErr("apiDeprecationErrors")
	if err != nil {
		if strictErr == nil || deprErr == nil {
			return mongoerr.New(mongoerr.Location4886600, "Provided apiStrict and/or apiDeprecationErrors without passing apiVersion")
		}
		return nil
	}
	if s, ok := v.StringValueOK(); !ok || s != "1" {
		return mongoerr.New(mongoerr.APIVersionError, "API version must be \"1\"")
	}
	if !strict {
		return nil
	}
	if !r.spec.apiV1 {
		return mongoerr.New(mongoerr.APIStrictError,
			"Provided apiStrict:true, but the command %s is not in API Version 1. Information on supported commands and migrations in API Version 1 can be found at https://www.mongodb.com/docs/manual/reference/stable-api", r.name)
	}
	if r.name == "aggregate" {
		return refuseStagesOutsideV1(r.cmd.Lookup("pipeline"))
	}
	return nil
}

// refuseStagesOutsideV1 refuses a pipeline stage API version 1 leaves out.
func refuseStagesOutsideV1(pipeline bsoncore.Value) error {
	arr, _ := pipeline.ArrayOK()
	vals, _ := arr.Values()
	for _, v := range vals {
		stage, _ := v.DocumentOK()
		if name := value.FirstKey(stage); query.StageOutsideAPIV1(name) {
			return mongoerr.New(mongoerr.APIStrictError, "%s is not allowed with 'apiStrict: true' in API Version 1", name)
		}
	}
	return nil
}

// cmdTestVersion is mongod's testVersion1 and testVersion2: test commands
// (with --enableTestCommands) that drivers' Stable API tests run, one in
// API version 1 and one outside it.
func cmdTestVersion(r *request) (bsoncore.Document, error) {
	if !r.c.s.cfg.TestCommands {
		return nil, mongoerr.New(mongoerr.CommandNotFound, "no such command: '%s'", r.name)
	}
	return okReply(), nil
}
