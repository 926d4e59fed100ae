package server_test

import (
	"context"
	"errors"
	"sort"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/dumbodb/dumbodb/internal/dumboproc"
	"github.com/dumbodb/dumbodb/server"
)

// Collection validators: create and collMod options, every write path,
// levels and actions, bypassDocumentValidation, mongod's errInfo, and
// validators under version control.

// ageValidator wants an int age of at least 18 and a name.
var ageValidator = bson.D{{Key: "$jsonSchema", Value: bson.D{
	{Key: "bsonType", Value: "object"},
	{Key: "required", Value: bson.A{"name"}},
	{Key: "properties", Value: bson.D{{Key: "age", Value: bson.D{{Key: "bsonType", Value: "int"}, {Key: "minimum", Value: 18}}}}},
}}}

// createValidated creates coll with a validator and extra create options.
func createValidated(t *testing.T, db *mongo.Database, coll string, validator bson.D, extra ...bson.E) {
	t.Helper()
	cmd := append(bson.D{{Key: "create", Value: coll}, {Key: "validator", Value: validator}}, extra...)
	mustRun(t, db, cmd)
}

// collectionOptions is listCollections' options for coll.
func collectionOptions(t *testing.T, db *mongo.Database, coll string) bson.Raw {
	t.Helper()
	specs, err := db.ListCollectionSpecifications(ctx, bson.D{{Key: "name", Value: coll}})
	if err != nil || len(specs) != 1 {
		t.Fatalf("listCollections %s: %v %v", coll, specs, err)
	}
	return specs[0].Options
}

// sameJSON compares a document with extended JSON, as relaxed JSON.
func sameJSON(t *testing.T, what string, got bson.Raw, want string) {
	t.Helper()
	var w bson.Raw
	if err := bson.UnmarshalExtJSON([]byte(want), false, &w); err != nil {
		t.Fatalf("bad JSON %s: %v", want, err)
	}
	g, _ := bson.MarshalExtJSON(got, false, false)
	wj, _ := bson.MarshalExtJSON(w, false, false)
	if string(g) != string(wj) {
		t.Errorf("%s:\n got %s\nwant %s", what, g, wj)
	}
}

// writeErrorsOf returns the write errors of an insert or update error.
func writeErrorsOf(t *testing.T, err error) []mongo.WriteError {
	t.Helper()
	var we mongo.WriteException
	if errors.As(err, &we) {
		return we.WriteErrors
	}
	var bwe mongo.BulkWriteException
	if errors.As(err, &bwe) {
		var out []mongo.WriteError
		for _, e := range bwe.WriteErrors {
			out = append(out, e.WriteError)
		}
		return out
	}
	t.Fatalf("want write errors, got %v (%T)", err, err)
	return nil
}

// wantValidationFailure asserts one DocumentValidationFailure write error.
func wantValidationFailure(t *testing.T, what string, err error) mongo.WriteError {
	t.Helper()
	wes := writeErrorsOf(t, err)
	if len(wes) != 1 || wes[0].Code != 121 || wes[0].Message != "Document failed validation" {
		t.Fatalf("%s: want one DocumentValidationFailure, got %v", what, err)
	}
	return wes[0]
}

// wantCommandFailure asserts a DocumentValidationFailure command error
// and returns its errInfo.
func wantCommandFailure(t *testing.T, what string, err error) bson.Raw {
	t.Helper()
	return wantCommandFailureMsg(t, what, err, "Document failed validation")
}

// findAndModifyFailure is mongod's message for a findAndModify whose
// write fails validation: the executor's context comes first.
const findAndModifyFailure = "Plan executor error during findAndModify :: caused by :: Document failed validation"

// wantCommandFailureMsg is wantCommandFailure with the message expected.
func wantCommandFailureMsg(t *testing.T, what string, err error, msg string) bson.Raw {
	t.Helper()
	var ce mongo.CommandError
	if !errors.As(err, &ce) || ce.Code != 121 || ce.Message != msg {
		t.Fatalf("%s: want DocumentValidationFailure, got %v", what, err)
	}
	info, ok := ce.Raw.Lookup("errInfo").DocumentOK()
	if !ok {
		t.Fatalf("%s: no errInfo in %v", what, ce.Raw)
	}
	return bson.Raw(info)
}

// TestValidatorCreateCollModListCollections: the options are stored as
// given, shown by listCollections, changed by collMod (an empty validator
// removes it), and refused with mongod's errors when bad.
func TestValidatorCreateCollModListCollections(t *testing.T) {
	db, _ := startCollection(t, "val", "c")
	createValidated(t, db, "c", bson.D{{Key: "a", Value: bson.D{{Key: "$gt", Value: 0}}}},
		bson.E{Key: "validationLevel", Value: "moderate"}, bson.E{Key: "validationAction", Value: "warn"})
	sameJSON(t, "options after create", collectionOptions(t, db, "c"),
		`{"validator": {"a": {"$gt": 0}}, "validationLevel": "moderate", "validationAction": "warn"}`)

	mustRun(t, db, bson.D{{Key: "collMod", Value: "c"}, {Key: "validator", Value: ageValidator}, {Key: "validationAction", Value: "error"}})
	sameJSON(t, "options after collMod", collectionOptions(t, db, "c"),
		`{"validator": {"$jsonSchema": {"bsonType": "object", "required": ["name"], "properties": {"age": {"bsonType": "int", "minimum": 18}}}},
		  "validationLevel": "moderate", "validationAction": "error"}`)
	mustRun(t, db, bson.D{{Key: "collMod", Value: "c"}, {Key: "validator", Value: bson.D{}}})
	sameJSON(t, "options after an empty validator", collectionOptions(t, db, "c"), `{"validationLevel": "moderate", "validationAction": "error"}`)

	// Only what is given is stored; an empty validator is not kept.
	mustRun(t, db, bson.D{{Key: "create", Value: "plain"}, {Key: "validator", Value: bson.D{}}})
	sameJSON(t, "options of an empty validator", collectionOptions(t, db, "plain"), `{}`)

	for _, tc := range []struct {
		name string
		cmd  bson.D
		code int32
		msg  string
	}{
		{"validator not an object", bson.D{{Key: "create", Value: "x1"}, {Key: "validator", Value: 1}}, 14,
			"BSON field 'create.validator' is the wrong type 'int', expected type 'object'"},
		{"bad level", bson.D{{Key: "create", Value: "x2"}, {Key: "validationLevel", Value: "lax"}}, 2,
			"Enumeration value 'lax' for field 'create.validationLevel' is not a valid value."},
		{"bad action", bson.D{{Key: "collMod", Value: "c"}, {Key: "validationAction", Value: "ignore"}}, 2,
			"Enumeration value 'ignore' for field 'collMod.validationAction' is not a valid value."},
		{"unknown operator", bson.D{{Key: "create", Value: "x3"}, {Key: "validator", Value: bson.D{{Key: "a", Value: bson.D{{Key: "$foo", Value: 1}}}}}}, 2,
			"unknown operator: $foo"},
		{"collMod's context", bson.D{{Key: "collMod", Value: "c"}, {Key: "validator", Value: bson.D{{Key: "a", Value: bson.D{{Key: "$foo", Value: 1}}}}}}, 2,
			"Parsing of collection validator failed :: caused by :: unknown operator: $foo"},
		{"$where", bson.D{{Key: "create", Value: "x4"}, {Key: "validator", Value: bson.D{{Key: "$where", Value: "true"}}}}, 2,
			"$where is not allowed in this context"},
		{"$text", bson.D{{Key: "create", Value: "x5"}, {Key: "validator", Value: bson.D{{Key: "$text", Value: bson.D{{Key: "$search", Value: "x"}}}}}}, 2,
			"$text is not allowed in this context"},
		{"$near", bson.D{{Key: "create", Value: "x6"}, {Key: "validator", Value: bson.D{{Key: "loc", Value: bson.D{{Key: "$near", Value: bson.A{0, 0}}}}}}}, 5626500, ""},
		{"$function", bson.D{{Key: "create", Value: "x7"}, {Key: "validator", Value: bson.D{{Key: "$expr", Value: bson.D{{Key: "$function",
			Value: bson.D{{Key: "body", Value: "function() {}"}, {Key: "args", Value: bson.A{}}, {Key: "lang", Value: "js"}}}}}}}}, 4660800,
			"$function cannot be used inside a validator."},
		{"bad $jsonSchema", bson.D{{Key: "create", Value: "x8"}, {Key: "validator", Value: bson.D{{Key: "$jsonSchema", Value: bson.D{{Key: "bsonType", Value: "nope"}}}}}}, 2,
			"Unknown type name alias: nope"},
		{"collMod of a missing collection", bson.D{{Key: "collMod", Value: "missing"}, {Key: "validator", Value: bson.D{{Key: "a", Value: 1}}}}, 26, ""},
	} {
		_, err := run(t, db, tc.cmd)
		var ce mongo.CommandError
		if !errors.As(err, &ce) || ce.Code != tc.code || (tc.msg != "" && ce.Message != tc.msg) {
			t.Errorf("%s: got %v, want %d %q", tc.name, err, tc.code, tc.msg)
		}
	}
	if opts := collectionOptions(t, db, "c"); opts.Lookup("validator").Type != 0 {
		t.Errorf("a refused collMod changed the options: %v", opts)
	}
	_, err := run(t, db.Client().Database("admin"), bson.D{{Key: "create", Value: "v"}, {Key: "validator", Value: bson.D{{Key: "a", Value: 1}}}})
	wantCode(t, err, 72, "InvalidOptions")
}

// TestValidatorWritePaths: every write that stores a document checks it:
// insert (one, ordered and unordered batches), update (operators,
// replacement, pipeline, upsert), findAndModify, $out, $merge and
// transactions; documents that pass are written.
func TestValidatorWritePaths(t *testing.T) {
	ts := startServer(t)
	client := ts.client()
	db := client.Database("val")
	createValidated(t, db, "people", ageValidator)
	people := db.Collection("people")
	if _, err := people.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "name", Value: "Ann"}, {Key: "age", Value: 30}}); err != nil {
		t.Fatal(err)
	}
	_, err := people.InsertOne(ctx, bson.D{{Key: "_id", Value: 2}, {Key: "age", Value: 30}})
	wantValidationFailure(t, "insert without name", err)

	// An ordered batch stops at the failure; an unordered one goes on.
	batch := []any{
		bson.D{{Key: "_id", Value: 10}, {Key: "name", Value: "a"}},
		bson.D{{Key: "_id", Value: 11}, {Key: "name", Value: "b"}, {Key: "age", Value: 5}},
		bson.D{{Key: "_id", Value: 12}, {Key: "name", Value: "c"}},
		bson.D{{Key: "_id", Value: 13}},
	}
	_, err = people.InsertMany(ctx, batch)
	if wes := writeErrorsOf(t, err); len(wes) != 1 || wes[0].Index != 1 || wes[0].Code != 121 {
		t.Fatalf("ordered batch: %v", err)
	}
	if n, _ := people.CountDocuments(ctx, bson.D{}); n != 2 {
		t.Fatalf("ordered batch wrote %d documents, want 2", n)
	}
	_, err = people.InsertMany(ctx, batch[1:], options.InsertMany().SetOrdered(false))
	wes := writeErrorsOf(t, err)
	if len(wes) != 2 || wes[0].Index != 0 || wes[1].Index != 2 || wes[0].Details.Lookup("failingDocumentId").Int32() != 11 ||
		wes[1].Details.Lookup("failingDocumentId").Int32() != 13 {
		t.Fatalf("unordered batch: %v", err)
	}

	// Updates: operators, replacement, pipeline and upsert.
	_, err = people.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$set", Value: bson.D{{Key: "age", Value: 3}}}})
	wantValidationFailure(t, "$set", err)
	_, err = people.ReplaceOne(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "age", Value: 40}})
	wantValidationFailure(t, "replacement", err)
	_, err = people.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}}, mongo.Pipeline{{{Key: "$unset", Value: "name"}}})
	wantValidationFailure(t, "pipeline update", err)
	_, err = people.UpdateOne(ctx, bson.D{{Key: "_id", Value: 20}}, bson.D{{Key: "$set", Value: bson.D{{Key: "age", Value: 40}}}}, options.UpdateOne().SetUpsert(true))
	wantValidationFailure(t, "upsert", err)
	_, err = people.UpdateMany(ctx, bson.D{}, bson.D{{Key: "$set", Value: bson.D{{Key: "age", Value: "old"}}}})
	wantValidationFailure(t, "multi update", err)
	if res, err := people.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "age", Value: int32(1)}}}}); err != nil || res.ModifiedCount != 1 {
		t.Fatalf("a valid update: %v %v", res, err)
	}
	var ann bson.M
	people.FindOne(ctx, bson.D{{Key: "_id", Value: 1}}).Decode(&ann)
	if ann["age"] != int32(31) || ann["name"] != "Ann" {
		t.Fatalf("after the refused updates: %v", ann)
	}

	// findAndModify: update, replacement and upsert; the error is the
	// command's, with errInfo.
	err = people.FindOneAndUpdate(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$set", Value: bson.D{{Key: "age", Value: 1}}}}).Err()
	info := wantCommandFailureMsg(t, "findOneAndUpdate", err, findAndModifyFailure)
	if info.Lookup("failingDocumentId").Int32() != 1 {
		t.Errorf("findOneAndUpdate errInfo: %v", info)
	}
	err = people.FindOneAndReplace(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "age", Value: 50}}).Err()
	wantCommandFailureMsg(t, "findOneAndReplace", err, findAndModifyFailure)
	err = people.FindOneAndUpdate(ctx, bson.D{{Key: "_id", Value: 30}}, bson.D{{Key: "$set", Value: bson.D{{Key: "age", Value: 50}}}},
		options.FindOneAndUpdate().SetUpsert(true)).Err()
	wantCommandFailureMsg(t, "findOneAndUpdate upsert", err, findAndModifyFailure)

	// A mixed bulk write reports each failure at its model's index.
	_, err = people.BulkWrite(ctx, []mongo.WriteModel{
		mongo.NewUpdateOneModel().SetFilter(bson.D{{Key: "_id", Value: 1}}).SetUpdate(bson.D{{Key: "$set", Value: bson.D{{Key: "age", Value: 2}}}}),
		mongo.NewInsertOneModel().SetDocument(bson.D{{Key: "_id", Value: 50}, {Key: "name", Value: "z"}}),
		mongo.NewReplaceOneModel().SetFilter(bson.D{{Key: "_id", Value: 1}}).SetReplacement(bson.D{{Key: "age", Value: 20}}),
		mongo.NewInsertOneModel().SetDocument(bson.D{{Key: "_id", Value: 51}}),
	}, options.BulkWrite().SetOrdered(false))
	var bwe mongo.BulkWriteException
	if !errors.As(err, &bwe) || len(bwe.WriteErrors) != 3 {
		t.Fatalf("bulk write: %v", err)
	}
	// (An unordered bulk write runs its inserts first.)
	sort.Slice(bwe.WriteErrors, func(i, j int) bool { return bwe.WriteErrors[i].Index < bwe.WriteErrors[j].Index })
	for i, want := range []int{0, 2, 3} {
		if e := bwe.WriteErrors[i]; e.Index != want || e.Code != 121 || e.Details.Lookup("failingDocumentId").Type == 0 {
			t.Errorf("bulk write error %d: %+v, want index %d", i, e, want)
		}
	}
	people.DeleteOne(ctx, bson.D{{Key: "_id", Value: 50}})

	// $out keeps the target's validator and checks against it; $merge too.
	src := db.Collection("src")
	src.InsertMany(ctx, []any{bson.D{{Key: "_id", Value: 1}, {Key: "name", Value: "x"}}, bson.D{{Key: "_id", Value: 2}, {Key: "age", Value: 20}}})
	_, err = src.Aggregate(ctx, mongo.Pipeline{{{Key: "$out", Value: "people"}}})
	wantCommandFailure(t, "$out", err)
	if n, _ := people.CountDocuments(ctx, bson.D{}); n != 3 {
		t.Fatalf("a failed $out changed the target: %d documents", n)
	}
	_, err = src.Aggregate(ctx, mongo.Pipeline{{{Key: "$match", Value: bson.D{{Key: "_id", Value: 1}}}}, {{Key: "$out", Value: "people"}}})
	if err != nil {
		t.Fatalf("a valid $out: %v", err)
	}
	if opts := collectionOptions(t, db, "people"); opts.Lookup("validator").Type == 0 {
		t.Fatalf("$out dropped the target's validator: %v", opts)
	}
	_, err = src.Aggregate(ctx, mongo.Pipeline{{{Key: "$merge", Value: bson.D{{Key: "into", Value: "people"}}}}})
	wantCommandFailure(t, "$merge", err)

	// In a transaction, the failure is the statement's.
	sess, err := client.StartSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.EndSession(ctx)
	_, err = sess.WithTransaction(ctx, func(sc context.Context) (any, error) {
		return people.InsertOne(sc, bson.D{{Key: "_id", Value: 40}, {Key: "age", Value: 2}})
	})
	wantValidationFailure(t, "insert in a transaction", err)
	if n, _ := people.CountDocuments(ctx, bson.D{{Key: "_id", Value: 40}}); n != 0 {
		t.Fatal("the transaction's refused insert was written")
	}
}

// TestValidatorErrInfo: mongod 5+'s errInfo for the common shapes.
func TestValidatorErrInfo(t *testing.T) {
	db, _ := startCollection(t, "val", "c")
	createValidated(t, db, "people", ageValidator)
	createValidated(t, db, "ops", bson.D{{Key: "a", Value: bson.D{{Key: "$gt", Value: 5}}}, {Key: "b", Value: bson.D{{Key: "$exists", Value: true}}}})
	createValidated(t, db, "one", bson.D{{Key: "a", Value: bson.D{{Key: "$gt", Value: 5}}}})

	_, err := db.Collection("people").InsertOne(ctx, bson.D{{Key: "_id", Value: "x"}, {Key: "age", Value: 12.5}})
	sameJSON(t, "$jsonSchema errInfo", wantValidationFailure(t, "people", err).Details, `{"failingDocumentId": "x", "details": {
		"operatorName": "$jsonSchema", "schemaRulesNotSatisfied": [
		  {"operatorName": "properties", "propertiesNotSatisfied": [{"propertyName": "age", "details": [
		    {"operatorName": "minimum", "specifiedAs": {"minimum": 18}, "reason": "comparison failed", "consideredValue": 12.5},
		    {"operatorName": "bsonType", "specifiedAs": {"bsonType": "int"}, "reason": "type did not match",
		     "consideredValue": 12.5, "consideredType": "double"}]}]},
		  {"operatorName": "required", "specifiedAs": {"required": ["name"]}, "missingProperties": ["name"]}]}}`)

	_, err = db.Collection("one").InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: 3}})
	sameJSON(t, "query operator errInfo", wantValidationFailure(t, "one", err).Details, `{"failingDocumentId": 1, "details": {
		"operatorName": "$gt", "specifiedAs": {"a": {"$gt": 5}}, "reason": "comparison failed", "consideredValue": 3}}`)

	_, err = db.Collection("ops").InsertOne(ctx, bson.D{{Key: "_id", Value: 2}, {Key: "a", Value: bson.A{1, 2}}})
	sameJSON(t, "implicit $and errInfo", wantValidationFailure(t, "ops", err).Details, `{"failingDocumentId": 2, "details": {
		"operatorName": "$and", "clausesNotSatisfied": [
		  {"index": 0, "details": {"operatorName": "$gt", "specifiedAs": {"a": {"$gt": 5}}, "reason": "comparison failed", "consideredValues": [1, 2]}},
		  {"index": 1, "details": {"operatorName": "$exists", "specifiedAs": {"b": {"$exists": true}}, "reason": "path does not exist"}}]}}`)
}

// TestValidatorLevelsAndActions: moderate lets documents that already
// fail be updated, off checks nothing, and warn logs mongod's warning and
// writes.
func TestValidatorLevelsAndActions(t *testing.T) {
	logs := &dumboproc.SyncBuffer{}
	ts := &testServer{t: t, dir: t.TempDir(), cfg: server.Config{BindIPs: []string{"127.0.0.1"}}, logTo: logs}
	ts.start()
	t.Cleanup(ts.stop)
	db := ts.client().Database("val")
	c := db.Collection("c")
	c.InsertMany(ctx, []any{bson.D{{Key: "_id", Value: 1}, {Key: "age", Value: 5}}, bson.D{{Key: "_id", Value: 2}, {Key: "name", Value: "b"}}})
	mustRun(t, db, bson.D{{Key: "collMod", Value: "c"}, {Key: "validator", Value: ageValidator}, {Key: "validationLevel", Value: "moderate"}})
	set := func(id int, field string, v any) error {
		_, err := c.UpdateOne(ctx, bson.D{{Key: "_id", Value: id}}, bson.D{{Key: "$set", Value: bson.D{{Key: field, Value: v}}}})
		return err
	}
	if err := set(1, "age", 6); err != nil {
		t.Fatalf("moderate: updating a document that already fails: %v", err)
	}
	wantValidationFailure(t, "moderate: a valid document made invalid", set(2, "age", 6))
	_, err := c.InsertOne(ctx, bson.D{{Key: "_id", Value: 3}})
	wantValidationFailure(t, "moderate: an insert", err)

	mustRun(t, db, bson.D{{Key: "collMod", Value: "c"}, {Key: "validationLevel", Value: "strict"}})
	wantValidationFailure(t, "strict: updating a document that already fails", set(1, "age", 7))

	mustRun(t, db, bson.D{{Key: "collMod", Value: "c"}, {Key: "validationLevel", Value: "off"}})
	if _, err := c.InsertOne(ctx, bson.D{{Key: "_id", Value: 4}}); err != nil {
		t.Fatalf("off: %v", err)
	}

	mustRun(t, db, bson.D{{Key: "collMod", Value: "c"}, {Key: "validationLevel", Value: "strict"}, {Key: "validationAction", Value: "warn"}})
	if _, err := c.InsertOne(ctx, bson.D{{Key: "_id", Value: 5}, {Key: "age", Value: 1}}); err != nil {
		t.Fatalf("warn: %v", err)
	}
	var line string
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, "Document would fail validation") {
			line = l
		}
	}
	for _, want := range []string{`"c":"STORAGE"`, `"id":20294`, `"namespace":"val.c"`, `"document":{"_id":5,"age":1}`,
		`"errInfo":{"failingDocumentId":5,"details":{"operatorName":"$jsonSchema"`} {
		if !strings.Contains(line, want) {
			t.Errorf("warn log line %q lacks %s", line, want)
		}
	}
	if n, _ := c.CountDocuments(ctx, bson.D{}); n != 4 {
		t.Errorf("documents: %d, want 4", n)
	}
}

// TestValidatorBypass: bypassDocumentValidation skips the check on insert,
// update, findAndModify and $out/$merge; under --auth it needs the
// bypassDocumentValidation privilege, which dbAdmin has and readWrite has
// not, as on mongod.
func TestValidatorBypass(t *testing.T) {
	ts := startServer(t, withAuth)
	createRoot(t, ts)
	root := ts.authClient("root", "rootpw", "admin", "")
	db := root.Database("val")
	createValidated(t, db, "c", ageValidator)
	c := db.Collection("c")
	bad := func(id int) bson.D { return bson.D{{Key: "_id", Value: id}, {Key: "age", Value: 1}} }

	if _, err := c.InsertOne(ctx, bad(1), options.InsertOne().SetBypassDocumentValidation(true)); err != nil {
		t.Fatalf("insert: %v", err)
	}
	if _, err := c.InsertMany(ctx, []any{bad(2), bad(3)}, options.InsertMany().SetBypassDocumentValidation(true)); err != nil {
		t.Fatalf("insertMany: %v", err)
	}
	if _, err := c.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$set", Value: bson.D{{Key: "age", Value: 2}}}},
		options.UpdateOne().SetBypassDocumentValidation(true)); err != nil {
		t.Fatalf("update: %v", err)
	}
	if err := c.FindOneAndUpdate(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$set", Value: bson.D{{Key: "age", Value: 3}}}},
		options.FindOneAndUpdate().SetBypassDocumentValidation(true)).Err(); err != nil {
		t.Fatalf("findAndModify: %v", err)
	}
	src := db.Collection("src")
	src.InsertOne(ctx, bad(10))
	for _, stage := range []bson.D{{{Key: "$merge", Value: bson.D{{Key: "into", Value: "c"}}}}, {{Key: "$out", Value: "c"}}} {
		if _, err := src.Aggregate(ctx, mongo.Pipeline{stage}, options.Aggregate().SetBypassDocumentValidation(true)); err != nil {
			t.Fatalf("%v: %v", stage, err)
		}
	}
	if n, _ := c.CountDocuments(ctx, bson.D{}); n != 1 {
		t.Fatalf("after $out: %d documents, want 1", n)
	}

	mustRun(t, root.Database("val"), bson.D{{Key: "createUser", Value: "writer"}, {Key: "pwd", Value: "pw"}, {Key: "roles", Value: bson.A{"readWrite"}}})
	mustRun(t, root.Database("val"), bson.D{{Key: "createUser", Value: "admin"}, {Key: "pwd", Value: "pw"}, {Key: "roles", Value: bson.A{"readWrite", "dbAdmin"}}})
	writer := ts.authClient("writer", "pw", "val", "").Database("val").Collection("c")
	_, err := writer.InsertOne(ctx, bad(20), options.InsertOne().SetBypassDocumentValidation(true))
	wantCode(t, err, 13, "Unauthorized")
	_, err = writer.InsertOne(ctx, bad(21))
	wantValidationFailure(t, "readWrite without bypass", err)
	admin := ts.authClient("admin", "pw", "val", "").Database("val").Collection("c")
	if _, err := admin.InsertOne(ctx, bad(22), options.InsertOne().SetBypassDocumentValidation(true)); err != nil {
		t.Fatalf("dbAdmin with bypass: %v", err)
	}
}

// TestValidatorVersionControl: a validator is versioned with the data: a
// diff shows the options change, a hard reset brings the committed
// validator back (and enforces it), and merges take each side's changes
// option by option.
func TestValidatorVersionControl(t *testing.T) {
	ts := startServer(t)
	client := ts.client()
	db := client.Database("val")
	minAge := func(n int) bson.D {
		return bson.D{{Key: "age", Value: bson.D{{Key: "$gte", Value: n}}}}
	}
	createValidated(t, db, "c", minAge(18))
	c := db.Collection("c")
	c.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "age", Value: 30}})
	vc(t, client, "val", bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "adults"}})

	mustRun(t, db, bson.D{{Key: "collMod", Value: "c"}, {Key: "validator", Value: minAge(65)}})
	diff := vc(t, client, "val", bson.D{{Key: "dumboDiff", Value: 1}})
	colls, _ := diff["collections"].(bson.A)
	if len(colls) != 1 || get(colls[0], "name") != "c" || get(colls[0], "optionsChanged") != true {
		t.Fatalf("diff after collMod: %v", diff)
	}
	vc(t, client, "val", bson.D{{Key: "dumboReset", Value: 1}, {Key: "hard", Value: true}})
	sameJSON(t, "validator after a hard reset", collectionOptions(t, db, "c"), `{"validator": {"age": {"$gte": 18}}}`)
	if _, err := c.InsertOne(ctx, bson.D{{Key: "_id", Value: 2}, {Key: "age", Value: 40}}); err != nil {
		t.Fatalf("the committed validator after a reset: %v", err)
	}
	_, err := c.InsertOne(ctx, bson.D{{Key: "_id", Value: 3}, {Key: "age", Value: 10}})
	wantValidationFailure(t, "the committed validator after a reset", err)
	vc(t, client, "val", bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "one more"}})

	// A change on one side merges in; the other side's documents move on.
	vc(t, client, "val", bson.D{{Key: "dumboBranch", Value: 1}, {Key: "branch", Value: "feature"}})
	feature := client.Database("val@feature")
	mustRun(t, feature, bson.D{{Key: "collMod", Value: "c"}, {Key: "validator", Value: minAge(21)}})
	vc(t, client, "val@feature", bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "21"}})
	c.InsertOne(ctx, bson.D{{Key: "_id", Value: 4}, {Key: "age", Value: 50}})
	vc(t, client, "val", bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "main moves on"}})
	vc(t, client, "val", bson.D{{Key: "dumboMerge", Value: 1}, {Key: "mergeIn", Value: "feature"}})
	sameJSON(t, "validator after a one-sided change", collectionOptions(t, db, "c"), `{"validator": {"age": {"$gte": 21}}}`)
	_, err = c.InsertOne(ctx, bson.D{{Key: "_id", Value: 5}, {Key: "age", Value: 19}})
	wantValidationFailure(t, "the merged validator", err)

	// Changes of different options on each side both merge in.
	vc(t, client, "val", bson.D{{Key: "dumboBranch", Value: 1}, {Key: "branch", Value: "warn"}})
	mustRun(t, client.Database("val@warn"), bson.D{{Key: "collMod", Value: "c"}, {Key: "validationAction", Value: "warn"}})
	vc(t, client, "val@warn", bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "warn"}})
	mustRun(t, db, bson.D{{Key: "collMod", Value: "c"}, {Key: "validator", Value: minAge(25)}})
	vc(t, client, "val", bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "25"}})
	vc(t, client, "val", bson.D{{Key: "dumboMerge", Value: 1}, {Key: "mergeIn", Value: "warn"}})
	sameJSON(t, "options after changes of different options", collectionOptions(t, db, "c"),
		`{"validator": {"age": {"$gte": 25}}, "validationAction": "warn"}`)

	// Both sides changing the validator differently: the merge answers
	// MergeConflict and changes nothing.
	vc(t, client, "val", bson.D{{Key: "dumboBranch", Value: 1}, {Key: "branch", Value: "theirs"}})
	mustRun(t, client.Database("val@theirs"), bson.D{{Key: "collMod", Value: "c"}, {Key: "validator", Value: minAge(30)}})
	vc(t, client, "val@theirs", bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "30"}})
	mustRun(t, db, bson.D{{Key: "collMod", Value: "c"}, {Key: "validator", Value: minAge(35)}})
	vc(t, client, "val", bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "35"}})
	_, err = db.RunCommand(ctx, bson.D{{Key: "dumboMerge", Value: 1}, {Key: "mergeIn", Value: "theirs"}}).Raw()
	wantCode(t, err, 20002, "MergeConflict")
	sameJSON(t, "options after two changes of the validator", collectionOptions(t, db, "c"),
		`{"validator": {"age": {"$gte": 35}}, "validationAction": "warn"}`)

	// The options outlive a restart, and the old revisions keep theirs.
	mustRun(t, db, bson.D{{Key: "collMod", Value: "c"}, {Key: "validationAction", Value: "error"}})
	ts.restart()
	client = ts.client()
	db = client.Database("val")
	_, err = db.Collection("c").InsertOne(ctx, bson.D{{Key: "_id", Value: 6}, {Key: "age", Value: 30}})
	wantValidationFailure(t, "after a restart", err)
	sameJSON(t, "options of an old revision", collectionOptions(t, client.Database("val@main~4"), "c"), `{"validator": {"age": {"$gte": 18}}}`)
}

// TestValidatorMergeConflicts: a merge that would bring in documents the
// merged validator refuses keeps ours for each and records a conflict,
// which a resolution the validator refuses does not settle.
func TestValidatorMergeConflicts(t *testing.T) {
	client := startServer(t).client()
	db := client.Database("valm")
	c := db.Collection("c")
	if _, err := c.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "age", Value: 30}}); err != nil {
		t.Fatal(err)
	}
	vc(t, client, "valm", bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "one"}})
	vc(t, client, "valm", bson.D{{Key: "dumboBranch", Value: 1}, {Key: "branch", Value: "side"}})
	side := client.Database("valm@side").Collection("c")
	if _, err := side.InsertMany(ctx, []any{bson.D{{Key: "_id", Value: 2}, {Key: "age", Value: 10}},
		bson.D{{Key: "_id", Value: 3}, {Key: "age", Value: 40}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := side.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$set", Value: bson.D{{Key: "age", Value: 5}}}}); err != nil {
		t.Fatal(err)
	}
	vc(t, client, "valm@side", bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "side"}})
	mustRun(t, db, bson.D{{Key: "collMod", Value: "c"}, {Key: "validator", Value: bson.D{{Key: "age", Value: bson.D{{Key: "$gte", Value: 18}}}}}})
	vc(t, client, "valm", bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "adults"}})

	_, err := run(t, db, bson.D{{Key: "dumboMerge", Value: 1}, {Key: "mergeIn", Value: "side"}})
	wantCode(t, err, 20002, "MergeConflict")
	confs := vc(t, client, "valm", bson.D{{Key: "dumboConflicts", Value: 1}})["conflicts"].(bson.A)
	if len(confs) != 2 || get(confs[0], "_id") != int32(1) || get(confs[1], "_id") != int32(2) ||
		get(confs[0], "ours", "age") != int32(30) || get(confs[1], "ours") != nil || get(confs[1], "theirs", "age") != int32(10) {
		t.Fatalf("conflicts: %v", confs)
	}
	var one bson.M
	if err := c.FindOne(ctx, bson.D{{Key: "_id", Value: 1}}).Decode(&one); err != nil || one["age"] != int32(30) {
		t.Fatalf("ours of document 1 after the merge: %v %v", one, err)
	}
	if n, _ := c.CountDocuments(ctx, bson.D{{Key: "_id", Value: 3}}); n != 1 {
		t.Fatal("a valid document of theirs did not merge in")
	}
	_, err = run(t, db, bson.D{{Key: "dumboResolveConflict", Value: 1}, {Key: "collection", Value: "c"},
		{Key: "_id", Value: 2}, {Key: "resolution", Value: "theirs"}})
	wantCode(t, err, 121, "DocumentValidationFailure")
	vc(t, client, "valm", bson.D{{Key: "dumboResolveConflict", Value: 1}, {Key: "collection", Value: "c"},
		{Key: "_id", Value: 2}, {Key: "resolution", Value: "custom"}, {Key: "document", Value: bson.D{{Key: "age", Value: 18}}}})
	vc(t, client, "valm", bson.D{{Key: "dumboResolveConflict", Value: 1}, {Key: "collection", Value: "c"},
		{Key: "_id", Value: 1}, {Key: "resolution", Value: "ours"}})
	vc(t, client, "valm", bson.D{{Key: "dumboMerge", Value: 1}, {Key: "continue", Value: 1}})
	if n, _ := c.CountDocuments(ctx, bson.D{}); n != 3 {
		t.Fatalf("%d documents after the merge, want 3", n)
	}
}
