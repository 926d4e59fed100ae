package server_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestUpdatesByFieldMatchWholeDocumentUpdates is a differential test of
// updates by field (docs/design/large-documents.md, "Updates by field"):
// the same updates of one large document in two collections, one with a
// validator that every document passes (so its updates are made on the
// whole document), must give the same results, errors, documents (byte
// for byte), index answers and change events.
func TestUpdatesByFieldMatchWholeDocumentUpdates(t *testing.T) {
	ts := startServer(t)
	db := ts.client().Database("fields")
	mustRun(t, db, bson.D{{Key: "create", Value: "whole"},
		{Key: "validator", Value: bson.M{"_id": bson.M{"$exists": true}}}})
	colls := []*mongo.Collection{db.Collection("byfield"), db.Collection("whole")}
	doc := bson.D{{Key: "_id", Value: 1}, {Key: "n", Value: 1}}
	for f := range 40 {
		doc = append(doc, bson.E{Key: fmt.Sprint("f", f), Value: strings.Repeat(fmt.Sprint(f%10), 1000)})
	}
	doc = append(doc, bson.E{Key: "sub", Value: bson.D{{Key: "x", Value: 1}, {Key: "arr", Value: bson.A{1, 2, 3}}}},
		bson.E{Key: "tags", Value: bson.A{"a", "b", "c"}})
	streams := make([]*mongo.ChangeStream, len(colls))
	for i, c := range colls {
		if _, err := c.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "n", Value: 1}, {Key: "sub.x", Value: 1}}}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.InsertOne(ctx, doc); err != nil {
			t.Fatal(err)
		}
		cs, err := c.Watch(ctx, mongo.Pipeline{}, options.ChangeStream().SetMaxAwaitTime(2*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close(ctx)
		streams[i] = cs
	}
	type step struct {
		filter bson.D
		update bson.D
		opts   *options.UpdateOneOptionsBuilder
	}
	id := bson.D{{Key: "_id", Value: 1}}
	set := func(k string, v any) bson.D { return bson.D{{Key: "$set", Value: bson.D{{Key: k, Value: v}}}} }
	steps := []step{
		{id, set("n", 5), nil},
		{id, bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}}, nil},
		{id, set("new1", "x"), nil},
		{id, bson.D{{Key: "$unset", Value: bson.D{{Key: "f3", Value: ""}}}}, nil},
		{id, set("sub.y", 2), nil},
		{id, set("sub.x", 7), nil},
		{id, bson.D{{Key: "$push", Value: bson.D{{Key: "sub.arr", Value: 4}}}}, nil},
		{id, bson.D{{Key: "$rename", Value: bson.D{{Key: "f5", Value: "g5"}}}}, nil},
		{id, bson.D{{Key: "$rename", Value: bson.D{{Key: "f6", Value: "new1"}}}}, nil},
		{id, set("newsub.a.b", 1), nil},
		{id, bson.D{{Key: "$min", Value: bson.D{{Key: "n", Value: -1}}}, {Key: "$max", Value: bson.D{{Key: "m", Value: 3}}}}, nil},
		{id, bson.D{{Key: "$mul", Value: bson.D{{Key: "n", Value: 3}}}}, nil},
		{id, bson.D{{Key: "$addToSet", Value: bson.D{{Key: "tags", Value: "d"}}}}, nil},
		{id, bson.D{{Key: "$pop", Value: bson.D{{Key: "tags", Value: -1}}}}, nil},
		{id, bson.D{{Key: "$pull", Value: bson.D{{Key: "tags", Value: "c"}}}}, nil},
		{id, set("f1", strings.Repeat("1", 1000)), nil}, // the same value: not modified
		{id, bson.D{{Key: "$inc", Value: bson.D{{Key: "f2", Value: 1}}}}, nil},
		{id, set("_id", 2), nil},
		{id, set("f1.x", 1), nil},
		{id, bson.D{{Key: "$unset", Value: bson.D{{Key: "absent", Value: ""}}}}, nil},
		{id, set("tags.$[]", "z"), nil},
		{id, set("tags.$[e]", "w"), options.UpdateOne().SetArrayFilters([]any{bson.M{"e": "z"}})},
		{bson.D{{Key: "_id", Value: 1}, {Key: "n", Value: bson.M{"$gt": 100}}}, set("n", 0), nil},
		{bson.D{{Key: "_id", Value: 1}, {Key: "f0", Value: strings.Repeat("0", 1000)}}, set("n", 9), nil},
		{bson.D{{Key: "_id", Value: 1}, {Key: "sub.x", Value: 7}}, set("f7", "short now"), nil},
		{id, set("f0", strings.Repeat("y", 16<<20-200<<10)), nil},
		{id, set("f1", strings.Repeat("z", 300<<10)), nil}, // past 16 MB: refused
		{bson.D{{Key: "_id", Value: 3}}, set("n", 1), options.UpdateOne().SetUpsert(true)},
	}
	before := storageEngineStat(t, db.Client(), "fieldUpdates")
	modified := int64(0)
	for i, s := range steps {
		var outcomes []string
		for _, c := range colls {
			opts := s.opts
			if opts == nil {
				opts = options.UpdateOne()
			}
			res, err := c.UpdateOne(ctx, s.filter, s.update, opts)
			outcomes = append(outcomes, updateOutcome(res, err))
		}
		if outcomes[0] != outcomes[1] {
			t.Fatalf("step %d %v: by field %s, whole %s", i, s.update, outcomes[0], outcomes[1])
		}
		if strings.Contains(outcomes[0], "modified 1") {
			modified++
		}
		var raws [2]bson.Raw
		for k, c := range colls {
			raw, err := c.FindOne(ctx, id).Raw()
			if err != nil {
				t.Fatal(err)
			}
			raws[k] = raw
		}
		if !bytes.Equal(raws[0], raws[1]) {
			t.Fatalf("step %d %v: the documents differ", i, s.update)
		}
	}
	if got := storageEngineStat(t, db.Client(), "fieldUpdates") - before; got != modified {
		t.Fatalf("%d updates by field, want the %d that modified the document in byfield", got, modified)
	}
	for k, c := range colls {
		n, err := c.CountDocuments(ctx, bson.D{{Key: "n", Value: 9}, {Key: "sub.x", Value: 7}}, options.Count().SetHint("n_1_sub.x_1"))
		if err != nil || n != 1 {
			t.Fatalf("%s: the index finds %d documents under the last n and sub.x, %v", c.Name(), n, err)
		}
		_ = k
	}
	for range 15 {
		a, b := nextEvent(t, streams[0]), nextEvent(t, streams[1])
		if fmt.Sprint(a["operationType"], a["updateDescription"]) != fmt.Sprint(b["operationType"], b["updateDescription"]) {
			t.Fatalf("change events differ: by field %v, whole %v", a["updateDescription"], b["updateDescription"])
		}
	}
}

// updateOutcome is an update's counts, or its error's code and message.
func updateOutcome(res *mongo.UpdateResult, err error) string {
	var we mongo.WriteException
	if errors.As(err, &we) && len(we.WriteErrors) > 0 {
		return fmt.Sprintf("error %d %s", we.WriteErrors[0].Code, we.WriteErrors[0].Message)
	}
	if err != nil {
		return "error " + err.Error()
	}
	return fmt.Sprintf("matched %d modified %d upserted %v", res.MatchedCount, res.ModifiedCount, res.UpsertedID)
}
