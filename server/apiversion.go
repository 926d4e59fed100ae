package server

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"dumbodb/mongoerr"
	"dumbodb/value"
)

// The Stable API (mongod's apiVersion, apiStrict, apiDeprecationErrors):
// a client that declares API version 1 with apiStrict may run only the
// commands and aggregation stages in it; apiDeprecationErrors refuses the
// deprecated ones, of which version 1 has none here.

// apiV1Commands are the commands in API version 1 (MongoDB 8.0's list, of
// those DumboDB has).
var apiV1Commands = map[string]bool{
	"abortTransaction": true, "aggregate": true, "authenticate": true, "collMod": true,
	"commitTransaction": true, "count": true, "create": true, "createIndexes": true, "delete": true,
	"drop": true, "dropDatabase": true, "dropIndexes": true, "endSessions": true, "explain": true,
	"find": true, "findAndModify": true, "getMore": true, "hello": true, "insert": true,
	"killCursors": true, "listCollections": true, "listDatabases": true, "listIndexes": true,
	"ping": true, "refreshSessions": true, "saslContinue": true, "saslStart": true, "update": true,
	"testVersion1": true, // mongod's test command for drivers' API tests
}

// apiV1ExcludedStages are the aggregation stages DumboDB has that API
// version 1 leaves out.
var apiV1ExcludedStages = map[string]bool{
	"$collStats": true, "$currentOp": true, "$indexStats": true, "$listLocalSessions": true,
	"$listSessions": true, "$planCacheStats": true,
}

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
	if !apiV1Commands[r.name] {
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
		if name := value.FirstKey(stage); apiV1ExcludedStages[name] {
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
