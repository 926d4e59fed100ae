package server_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// retryableCmd is cmd as a retryable write: with txnNumber n.
func retryableCmd(n int64, cmd bson.D) bson.D {
	return append(cmd, bson.E{Key: "txnNumber", Value: n})
}

func insertCmd(ordered bool, docs ...any) bson.D {
	return bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A(docs)}, {Key: "ordered", Value: ordered}}
}

// setFieldCmd updates, for each id, the document with that _id, setting
// field to 1.
func setFieldCmd(ordered bool, field string, ids ...int) bson.D {
	updates := bson.A{}
	for _, id := range ids {
		updates = append(updates, bson.M{"q": bson.M{"_id": id}, "u": bson.M{"$set": bson.M{field: 1}}})
	}
	return bson.D{{Key: "update", Value: "c"}, {Key: "updates", Value: updates}, {Key: "ordered", Value: ordered}}
}

// wantClosed asserts that the server closed the connection instead of
// answering.
func wantClosed(t *testing.T, what string, err error) {
	t.Helper()
	if !mongo.IsNetworkError(err) {
		t.Fatalf("%s: %v, want the connection closed", what, err)
	}
}

// countWith counts the documents of tc.c that match filter.
func countWith(t *testing.T, db *mongo.Database, filter bson.M) int64 {
	t.Helper()
	n, err := db.Collection("c").CountDocuments(ctx, filter)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestPrimaryWriteFailPointCountsWrites: onPrimaryTransactionalWrite
// counts, as mongod does, one pass per unit of work a retryable write
// commits: one per update that changed a document, none for a statement
// that changed nothing or that an earlier try ran, one for a group of
// documents inserted together. {times: 1} fires once; {skip: n} lets n
// passes through. When it fires the write and the command's other
// statements are done, but the connection closes, and the retry answers
// from the recorded outcomes.
func TestPrimaryWriteFailPointCountsWrites(t *testing.T) {
	admin, db := startTestCommands(t)
	sc := oneSession(t, db)
	setFailPoint(t, admin, "onPrimaryTransactionalWrite", bson.M{"times": 1}, nil)
	three := insertCmd(true, bson.M{"_id": 1}, bson.M{"_id": 2}, bson.M{"_id": 3})
	_, err := runIn(sc, db, retryableCmd(1, three))
	wantClosed(t, "the first insert", err)
	if reply := mustRunIn(t, sc, db, retryableCmd(1, three)); num(reply["n"]) != 3 || countWith(t, db, bson.M{}) != 3 {
		t.Fatalf("the retry: %v", reply)
	}
	mustRunIn(t, sc, db, retryableCmd(2, insertCmd(true, bson.M{"_id": 4}))) // it fired once

	setFailPoint(t, admin, "onPrimaryTransactionalWrite", bson.M{"skip": 2}, nil)
	_, err = runIn(sc, db, retryableCmd(3, setFieldCmd(true, "a", 1, 2, 3)))
	wantClosed(t, "the third update", err)
	if countWith(t, db, bson.M{"a": 1}) != 3 {
		t.Fatal("the updates of the command whose connection closed were not all done")
	}
	if reply := mustRunIn(t, sc, db, retryableCmd(3, setFieldCmd(true, "a", 1, 2, 3))); num(reply["nModified"]) != 3 {
		t.Fatalf("the retry: %v", reply)
	}
	mustRunIn(t, sc, db, retryableCmd(4, setFieldCmd(true, "a", 99))) // changes nothing: no pass

	setFailPoint(t, admin, "onPrimaryTransactionalWrite", bson.M{"skip": 1}, nil)
	mustRunIn(t, sc, db, retryableCmd(5, insertCmd(true, bson.M{"_id": 5}, bson.M{"_id": 6}, bson.M{"_id": 7}))) // one group, one pass
	_, err = runIn(sc, db, retryableCmd(6, insertCmd(true, bson.M{"_id": 8})))
	wantClosed(t, "the insert after the group", err)
}

// TestPrimaryWriteFailPointFailsBeforeCommit: with
// failBeforeCommitExceptionCode the unit of work fails with that code and
// writes nothing, the command's other statements going on as after any
// statement's error; with closeConnection false the client hears of it.
// A group of inserted documents that fails is inserted again one at a
// time, as mongod does.
func TestPrimaryWriteFailPointFailsBeforeCommit(t *testing.T) {
	admin, db := startTestCommands(t)
	sc := oneSession(t, db)
	mustRun(t, db, insertCmd(true, bson.M{"_id": 1}, bson.M{"_id": 2}))
	failing := bson.M{"closeConnection": false, "failBeforeCommitExceptionCode": 72}

	setFailPoint(t, admin, "onPrimaryTransactionalWrite", bson.M{"times": 1}, failing)
	reply := writeReply(t, sc, db, retryableCmd(1, setFieldCmd(true, "b", 1, 2)))
	wantWriteError(t, reply, 0, 72)
	if num(reply["nModified"]) != 0 || countWith(t, db, bson.M{"b": 1}) != 0 {
		t.Fatalf("an ordered update went on after its failed statement: %v", reply)
	}
	setFailPoint(t, admin, "onPrimaryTransactionalWrite", bson.M{"times": 1}, failing)
	reply = writeReply(t, sc, db, retryableCmd(2, setFieldCmd(false, "b", 1, 2)))
	wantWriteError(t, reply, 0, 72)
	if num(reply["nModified"]) != 1 || countWith(t, db, bson.M{"b": 1, "_id": 2}) != 1 || countWith(t, db, bson.M{"b": 1}) != 1 {
		t.Fatalf("an unordered update: %v", reply)
	}

	setFailPoint(t, admin, "onPrimaryTransactionalWrite", bson.M{"times": 1}, failing)
	reply = mustRunIn(t, sc, db, retryableCmd(3, insertCmd(true, bson.M{"_id": 3}, bson.M{"_id": 4}, bson.M{"_id": 5})))
	if num(reply["n"]) != 3 || reply["writeErrors"] != nil {
		t.Fatalf("a failed group, inserted again one at a time: %v", reply)
	}
	setFailPoint(t, admin, "onPrimaryTransactionalWrite", "alwaysOn", failing)
	reply = writeReply(t, sc, db, retryableCmd(4, insertCmd(false, bson.M{"_id": 6}, bson.M{"_id": 7})))
	if errs, _ := reply["writeErrors"].(bson.A); num(reply["n"]) != 0 || len(errs) != 2 || countWith(t, db, bson.M{"_id": bson.M{"$in": bson.A{6, 7}}}) != 0 {
		t.Fatalf("every document failing: %v", reply)
	}
	_, err := runIn(sc, db, retryableCmd(5, bson.D{{Key: "findAndModify", Value: "c"}, {Key: "query", Value: bson.M{"_id": 1}},
		{Key: "update", Value: bson.M{"$set": bson.M{"c": 1}}}}))
	wantCode(t, err, 72, "")
	if !strings.Contains(err.Error(), "Failing write for ") || countWith(t, db, bson.M{"c": 1}) != 0 {
		t.Fatalf("findAndModify: %v", err)
	}

	setFailPoint(t, admin, "onPrimaryTransactionalWrite", bson.M{"times": 1}, bson.M{"failBeforeCommitExceptionCode": 72})
	_, err = runIn(sc, db, retryableCmd(6, insertCmd(true, bson.M{"_id": 8})))
	wantClosed(t, "a failed insert with closeConnection", err)
	if countWith(t, db, bson.M{"_id": 8}) != 0 {
		t.Fatal("the failed insert wrote")
	}
	mustRunIn(t, sc, db, retryableCmd(6, insertCmd(true, bson.M{"_id": 8})))
	if countWith(t, db, bson.M{"_id": 8}) != 1 {
		t.Fatal("the retry did not write")
	}
}

// writeReply runs a write command and returns its reply, write errors
// included.
func writeReply(t *testing.T, sc context.Context, db *mongo.Database, cmd bson.D) bson.M {
	t.Helper()
	raw, err := db.RunCommand(sc, cmd).Raw()
	var we mongo.WriteException
	if err != nil && !errors.As(err, &we) {
		t.Fatalf("%v: %v", cmd, err)
	}
	var reply bson.M
	if err := bson.Unmarshal(raw, &reply); err != nil {
		t.Fatal(err)
	}
	return reply
}

// wantWriteError asserts the reply's only write error: statement index,
// code.
func wantWriteError(t *testing.T, reply bson.M, index int32, code int32) {
	t.Helper()
	errs, _ := reply["writeErrors"].(bson.A)
	if len(errs) != 1 {
		t.Fatalf("write errors %v, want one", reply["writeErrors"])
	}
	if we := errs[0]; get(we, "index") != index || get(we, "code") != code {
		t.Fatalf("write error %v, want statement %d with code %d", we, index, code)
	}
	if !strings.HasPrefix(get(errs[0], "errmsg").(string), "Failing write for ") {
		t.Fatalf("write error %v", errs[0])
	}
}

// TestPrimaryWriteFailPointDriverRetries: with the fail point always on,
// each retryable write of the driver's loses its first connection after
// writing, and its one retry, which writes nothing anew, is answered:
// every operation succeeds and runs once.
func TestPrimaryWriteFailPointDriverRetries(t *testing.T) {
	admin, db := startTestCommands(t)
	coll := db.Collection("c")
	if _, err := coll.InsertMany(ctx, []any{bson.M{"_id": 1, "n": 0}, bson.M{"_id": 2, "n": 0}}); err != nil {
		t.Fatal(err)
	}
	setFailPoint(t, admin, "onPrimaryTransactionalWrite", "alwaysOn", nil)
	inc := bson.M{"$inc": bson.M{"n": 1}}
	steps := []func() error{
		func() error {
			_, err := coll.InsertMany(ctx, []any{bson.M{"_id": 3, "n": 0}, bson.M{"_id": 4, "n": 0}})
			return err
		},
		func() error { _, err := coll.UpdateOne(ctx, bson.M{"_id": 1}, inc); return err },
		func() error {
			_, err := coll.BulkWrite(ctx, []mongo.WriteModel{
				mongo.NewUpdateOneModel().SetFilter(bson.M{"_id": 2}).SetUpdate(inc),
				mongo.NewUpdateOneModel().SetFilter(bson.M{"_id": 3}).SetUpdate(inc),
			})
			return err
		},
		func() error { return coll.FindOneAndUpdate(ctx, bson.M{"_id": 4}, inc).Err() },
		func() error { _, err := coll.DeleteOne(ctx, bson.M{"_id": 4}); return err },
	}
	for i, step := range steps {
		if err := step(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	if n := countWith(t, db, bson.M{"n": 1}); n != 3 || countWith(t, db, bson.M{}) != 3 {
		t.Fatalf("%d documents incremented once, want 3 of 3", n)
	}
}
