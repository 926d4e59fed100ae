package query

import (
	"errors"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/value"
)

// TestStageArgumentsWalk walks the stage table: every stage, given a
// document with a field no stage takes and given a MinKey, must refuse
// with a user-facing error (a code other than InternalError), never
// accept the argument and drop it, but for the stages listed below.
func TestStageArgumentsWalk(t *testing.T) {
	for _, group := range stageTable {
		for _, e := range group {
			for what, arg := range map[string]bsoncore.Value{
				"an unknown field": value.DocValue(bsoncore.NewDocumentBuilder().AppendInt32("walkUnknownField", 1).Build()),
				"a MinKey":         {Type: bsoncore.TypeMinKey},
			} {
				if stageWalkExpressions[e.name] != "" || (what == "an unknown field" && stageWalkFieldNames[e.name] != "") {
					continue
				}
				stage := bsoncore.NewDocumentBuilder().AppendValue(e.name, arg).Build()
				pipeline := bsoncore.NewArrayBuilder().AppendDocument(stage).Build()
				_, err := CompilePipeline(pipeline)
				var me *mongoerr.Error
				switch {
				case err == nil:
					t.Errorf("%s accepts %s", e.name, what)
				case !errors.As(err, &me) || me.Code == mongoerr.InternalError:
					t.Errorf("%s with %s: %v is not a user-facing error", e.name, what, err)
				}
			}
		}
	}
}

// stageWalkFieldNames are the stages whose argument documents are keyed
// by the user's field names.
var stageWalkFieldNames = map[string]string{
	"$addFields": "its fields are the fields it sets",
	"$match":     "its fields are the query's paths",
	"$project":   "its fields are the paths it keeps or computes",
	"$set":       "its fields are the fields it sets",
	"$sort":      "its fields are the sort's paths",
}

// stageWalkExpressions are the stages whose argument is an expression,
// whose result is checked as each document flows, as on mongod.
var stageWalkExpressions = map[string]string{
	"$documents":   "an expression that must give an array of documents",
	"$redact":      "an expression that must give $$KEEP, $$DESCEND or $$PRUNE",
	"$replaceWith": "an expression that must give a document",
}
