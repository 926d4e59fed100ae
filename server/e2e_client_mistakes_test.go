package server_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/wire"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Client mistakes that used to be answered as InternalError (1), each
// with the code mongod gives, or for version control DumboDB's own.

// wantReplyCode asserts an error reply read off a raw connection.
func wantReplyCode(t *testing.T, reply bsoncore.Document, code mongoerr.Code) {
	t.Helper()
	got, _ := reply.Lookup("code").Int32OK()
	name, _ := reply.Lookup("codeName").StringValueOK()
	if mongoerr.Code(got) != code || name != code.Name() {
		t.Fatalf("want %d %s, got %v", code, code.Name(), bson.Raw(reply))
	}
}

func TestBadBranchNamesAreBadValue(t *testing.T) {
	ts := startServer(t)
	c := ts.client()
	db := c.Database("vc")
	if _, err := db.Collection("c").InsertOne(ctx, bson.M{"_id": 1}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"refs/heads/../../x", "é", ".hidden", "x.lock", "a/.b"} {
		_, err := run(t, db, bson.D{{Key: "dumboBranch", Value: 1}, {Key: "branch", Value: name}})
		wantCode(t, err, int32(mongoerr.BadValue), "BadValue")
		_, err = run(t, db, bson.D{{Key: "dumboCheckout", Value: 1}, {Key: "branch", Value: name}})
		wantCode(t, err, int32(mongoerr.BadValue), "BadValue")
		_, err = run(t, db, bson.D{{Key: "dumboLog", Value: 1}, {Key: "from", Value: name}})
		wantCode(t, err, int32(mongoerr.BadValue), "BadValue")
		// The same names in db@revision syntax, for a read and a write.
		rev := c.Database("vc@" + name)
		err = rev.Collection("c").FindOne(ctx, bson.M{}).Err()
		wantCode(t, err, int32(mongoerr.BadValue), "BadValue")
		_, err = run(t, rev, bson.D{{Key: "dumboStatus", Value: 1}})
		wantCode(t, err, int32(mongoerr.BadValue), "BadValue")
	}
}

func TestBadCommitMetadataIsBadValue(t *testing.T) {
	ts := startServer(t)
	db := ts.client().Database("vc")
	for _, tc := range []struct{ author, message string }{
		{"Name", "m"},                    // no email
		{"<name@example.com>", "m"},      // no name
		{"Name <>", "m"},                 // empty email
		{"", "   "},                      // a blank message
		{"", strings.Repeat("m", 2<<20)}, // more metadata than Dolt can hold
	} {
		if _, err := db.Collection("c").InsertOne(ctx, bson.M{}); err != nil {
			t.Fatal(err)
		}
		cmd := bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: tc.message}}
		if tc.author != "" {
			cmd = append(cmd, bson.E{Key: "author", Value: tc.author})
		}
		_, err := run(t, db, cmd)
		wantCode(t, err, int32(mongoerr.BadValue), "BadValue")
	}
	// The tag message counts against the same limit.
	_, err := run(t, db, bson.D{{Key: "dumboTag", Value: "big"}, {Key: "message", Value: strings.Repeat("m", 2<<20)}})
	wantCode(t, err, int32(mongoerr.BadValue), "BadValue")
}

// TestRevertOfRevertMessage: reverting a revert wraps the subject once
// more, as Git does; quoting it Go-style used to double every backslash,
// until the message outgrew what Dolt can store (found by fuzzing).
func TestRevertOfRevertMessage(t *testing.T) {
	ts := startServer(t)
	db := ts.client().Database("vc")
	db.Collection("c").InsertOne(ctx, bson.M{"_id": 1})
	mustRun(t, db, bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: `a\b "c"` + "\nbody"}})
	want := `a\b "c"`
	for range 30 {
		mustRun(t, db, bson.D{{Key: "dumboRevert", Value: 1}, {Key: "commit", Value: "HEAD"}})
		want = `Revert "` + want + `"`
	}
	log := mustRun(t, db, bson.D{{Key: "dumboLog", Value: 1}, {Key: "limit", Value: 1}})
	if got := get(log, "commits").(bson.A)[0].(bson.D); get(got, "message") != want {
		t.Fatalf("message %q, want %q", get(got, "message"), want)
	}
}

// TestPickingMergeOrRootCommit: a merge commit's change (or the root
// commit's) has no one parent to take it from.
func TestPickingMergeOrRootCommit(t *testing.T) {
	ts := startServer(t)
	c := ts.client()
	db := c.Database("vc")
	db.Collection("c").InsertOne(ctx, bson.M{"_id": 1})
	mustRun(t, db, bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "one"}})
	mustRun(t, db, bson.D{{Key: "dumboBranch", Value: "side"}})
	c.Database("vc@side").Collection("c").InsertOne(ctx, bson.M{"_id": 2})
	mustRun(t, c.Database("vc@side"), bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "side"}})
	db.Collection("c").InsertOne(ctx, bson.M{"_id": 3})
	mustRun(t, db, bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "main"}})
	mustRun(t, db, bson.D{{Key: "dumboMerge", Value: 1}, {Key: "mergeIn", Value: "side"}, {Key: "message", Value: "merge"}})
	for _, cmd := range []string{"dumboRevert", "dumboCherryPick"} {
		for _, commit := range []string{"HEAD", "main~3"} {
			_, err := run(t, db, bson.D{{Key: cmd, Value: 1}, {Key: "commit", Value: commit}})
			wantCode(t, err, int32(mongoerr.BadValue), "BadValue")
		}
	}
}

func TestGCTwiceSucceeds(t *testing.T) {
	ts := startServer(t)
	db := ts.client().Database("vc")
	db.Collection("c").InsertOne(ctx, bson.M{"_id": 1})
	mustRun(t, db, bson.D{{Key: "dumboGC", Value: 1}})
	out := mustRun(t, db, bson.D{{Key: "dumboGC", Value: 1}}) // nothing to collect
	if out["bytesBefore"] != out["bytesAfter"] {
		t.Errorf("a GC with nothing to collect changed the size: %v", out)
	}
}

func TestRepeatedDocumentSequences(t *testing.T) {
	ts := startServer(t)
	c := dialRaw(ts)
	doc := bsoncore.NewDocumentBuilder().AppendInt32("_id", 1).Build()
	seq := wire.Sequence{Identifier: "documents", Documents: []bsoncore.Document{doc}}
	twice := &wire.Msg{Body: commandFor("test", bson.D{{Key: "insert", Value: "c"}}), Sequences: []wire.Sequence{seq, seq}}
	wantReplyCode(t, c.roundTrip(t, twice), mongoerr.Location40431)
	inBody := &wire.Msg{Body: commandFor("test", bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{}}}), Sequences: []wire.Sequence{seq}}
	wantReplyCode(t, c.roundTrip(t, inBody), mongoerr.Location40433)
	// The connection stays usable, as on mongod.
	if reply := c.roundTrip(t, &wire.Msg{Body: commandFor("test", bson.D{{Key: "ping", Value: 1}})}); !replyOK(reply) {
		t.Fatalf("ping: %v", bson.Raw(reply))
	}
}

func TestMalformedCommandsFoundByFuzzing(t *testing.T) {
	ts := startServer(t)
	db := ts.client().Database("test")
	_, err := run(t, db, bson.D{{Key: "explain", Value: bson.D{}}})
	wantCode(t, err, int32(mongoerr.CommandNotFound), "CommandNotFound")
	_, err = run(t, db, bson.D{{Key: "createIndexes", Value: "c"}, {Key: "indexes", Value: bson.A{
		bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: bson.Undefined{}}}}, {Key: "name", Value: "a"}}}}})
	wantCode(t, err, 67, "CannotCreateIndex")
}

func TestDatabaseNames(t *testing.T) {
	ts := startServer(t)
	c := dialRaw(ts)
	insertInto := func(db string) bsoncore.Document {
		return c.roundTrip(t, &wire.Msg{Body: commandFor(db, bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{}}}})})
	}
	// mongod (on Linux) refuses /\. " and NUL and 64 bytes or more, and a
	// '$' where a collection would be created; DumboDB also refuses
	// invalid UTF-8.
	for _, db := range []string{"a/b", `a\b`, "a.b", "a b", `a"b`, "a$b", "a\x00b", strings.Repeat("d", 64), "\xff\xfe", "a\xc3"} {
		wantReplyCode(t, insertInto(db), mongoerr.InvalidNamespace)
	}
	// What mongod accepts works, and is listed back as given.
	accepted := []string{strings.Repeat("d", 63), "tab\there", "zero\u200bwidth", "bell\x07", "é", "a*b<c>d:e|f?g", "-x"}
	for _, db := range accepted {
		if reply := insertInto(db); !replyOK(reply) {
			t.Errorf("%q: %v", db, bson.Raw(reply))
		}
	}
	list := c.roundTrip(t, &wire.Msg{Body: commandFor("admin", bson.D{{Key: "listDatabases", Value: 1}, {Key: "nameOnly", Value: true}})})
	for _, db := range accepted {
		if !strings.Contains(string(list), "\x00"+db+"\x00") {
			t.Errorf("listDatabases lacks %q: %v", db, bson.Raw(list))
		}
	}
}

// TestFindAndModifyExecutorErrors: findAndModify's write errors carry
// mongod's executor context, with their codes; update's write errors and
// findAndModify's parse errors do not.
func TestFindAndModifyExecutorErrors(t *testing.T) {
	coll := startServer(t).client().Database("x").Collection("c")
	if _, err := coll.InsertOne(ctx, bson.M{"_id": 1, "s": "x"}); err != nil {
		t.Fatal(err)
	}
	const nonNumeric = "Cannot apply $inc to a value of non-numeric type. {_id: 1} has the field 's' of non-numeric type string"
	err := coll.FindOneAndUpdate(ctx, bson.M{"_id": 1}, bson.M{"$inc": bson.M{"s": 1}}).Err()
	var ce mongo.CommandError
	if !errors.As(err, &ce) || ce.Code != 14 || ce.Message != "Plan executor error during findAndModify :: caused by :: "+nonNumeric {
		t.Fatalf("findAndModify: %v", err)
	}
	err = coll.FindOneAndUpdate(ctx, bson.M{"_id": 1}, bson.M{"$set": bson.M{"_id": 2}}).Err()
	if !errors.As(err, &ce) || ce.Code != 66 || !strings.HasPrefix(ce.Message, "Plan executor error during findAndModify :: caused by :: ") {
		t.Fatalf("findAndModify of _id: %v", err)
	}
	_, err = coll.UpdateOne(ctx, bson.M{"_id": 1}, bson.M{"$inc": bson.M{"s": 1}})
	var we mongo.WriteException
	if !errors.As(err, &we) || len(we.WriteErrors) != 1 || we.WriteErrors[0].Message != nonNumeric {
		t.Fatalf("update: %v", err)
	}
	err = coll.FindOneAndUpdate(ctx, bson.M{"_id": 1}, bson.M{"$bogus": bson.M{"s": 1}}).Err()
	if !errors.As(err, &ce) || strings.HasPrefix(ce.Message, "Plan executor") {
		t.Fatalf("a parse error: %v", err)
	}
}

// TestMalformedUpdateEntryFailsTheCommand: an entry of "updates" of the
// wrong shape fails the whole command before any entry runs, naming its
// position when it is not a document; an update that does not compile
// fails only its statement.
func TestMalformedUpdateEntryFailsTheCommand(t *testing.T) {
	db := startServer(t).client().Database("x")
	mustRun(t, db, bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.M{"_id": 1}}}})
	set := bson.M{"q": bson.M{}, "u": bson.M{"$set": bson.M{"a": 1}}}
	_, err := run(t, db, bson.D{{Key: "update", Value: "c"}, {Key: "updates", Value: bson.A{set, bson.M{"q": bson.M{}}}}})
	wantCode(t, err, 40414, "Location40414")
	_, err = run(t, db, bson.D{{Key: "update", Value: "c"}, {Key: "updates", Value: bson.A{set, set, 7}}})
	var ce mongo.CommandError
	if !errors.As(err, &ce) || ce.Code != 14 || ce.Message != "BSON field 'update.updates.2' is the wrong type 'int', expected type 'object'" {
		t.Fatalf("an int entry: %v", err)
	}
	var doc bson.M
	if err := db.Collection("c").FindOne(ctx, bson.M{}).Decode(&doc); err != nil || doc["a"] != nil {
		t.Fatalf("a refused command changed the document: %v %v", doc, err)
	}
	_, err = run(t, db, bson.D{{Key: "update", Value: "c"}, {Key: "updates", Value: bson.A{set, bson.M{"q": bson.M{}, "u": bson.M{"$bogus": 1}}}}})
	var we mongo.WriteException
	if !errors.As(err, &we) || len(we.WriteErrors) != 1 || we.WriteErrors[0].Index != 1 {
		t.Fatalf("an update that does not compile: %v", err)
	}
}

// TestTailableOptionsOnAPlainCollection: awaitData needs tailable, and a
// tailable cursor a capped collection, as mongod answers.
func TestTailableOptionsOnAPlainCollection(t *testing.T) {
	db := startServer(t).client().Database("x")
	mustRun(t, db, bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.M{"_id": 1}}}})
	_, err := run(t, db, bson.D{{Key: "find", Value: "c"}, {Key: "awaitData", Value: true}})
	wantCode(t, err, 9, "FailedToParse")
	_, err = run(t, db, bson.D{{Key: "find", Value: "c"}, {Key: "tailable", Value: true}, {Key: "awaitData", Value: true}})
	wantCode(t, err, 2, "BadValue")
	mustRun(t, db, bson.D{{Key: "find", Value: "c"}, {Key: "tailable", Value: false}, {Key: "awaitData", Value: false}})
}
