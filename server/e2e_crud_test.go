package server_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/dumbodb/dumbodb/server"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

func ids(t *testing.T, cur *mongo.Cursor) []any {
	t.Helper()
	var docs []bson.M
	if err := cur.All(ctx, &docs); err != nil {
		t.Fatal(err)
	}
	out := make([]any, len(docs))
	for i, d := range docs {
		out[i] = d["_id"]
	}
	return out
}

// js renders a decoded value as relaxed extended JSON, in field order.
func js(v any) string {
	if docs, ok := v.([]bson.D); ok {
		parts := make([]string, len(docs))
		for i, d := range docs {
			parts[i] = js(d)
		}
		return "[" + strings.Join(parts, ",") + "]"
	}
	b, err := bson.MarshalExtJSON(v, false, false)
	if err != nil {
		return fmt.Sprintf("<%v>", err)
	}
	return string(b)
}

func wantIDs(t *testing.T, got []any, want ...any) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint([]any(want)) {
		t.Fatalf("got ids %v, want %v", got, want)
	}
}

func TestInsertGeneratesObjectIDAndKeepsOrder(t *testing.T) {
	ts := startServer(t)
	coll := ts.client().Database("test").Collection("c")
	// Insert through a raw command so the driver does not add _id itself.
	res := mustRun(t, coll.Database(), bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "b", Value: 1}, {Key: "a", Value: 2}}}}})
	if res["n"] != int32(1) {
		t.Fatalf("insert reply %v", res)
	}
	var raw bson.Raw
	if err := coll.FindOne(ctx, bson.M{}).Decode(&raw); err != nil {
		t.Fatal(err)
	}
	els, _ := raw.Elements()
	if els[0].Key() != "_id" || els[0].Value().Type != bson.TypeObjectID || els[1].Key() != "b" || els[2].Key() != "a" {
		t.Fatalf("stored %v", raw)
	}
	// An _id that is not first is moved to the front, the rest keeps order.
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "z", Value: 1}, {Key: "_id", Value: "x"}, {Key: "y", Value: 2}}); err != nil {
		t.Fatal(err)
	}
	if err := coll.FindOne(ctx, bson.M{"_id": "x"}).Decode(&raw); err != nil {
		t.Fatal(err)
	}
	els, _ = raw.Elements()
	if els[0].Key() != "_id" || els[1].Key() != "z" || els[2].Key() != "y" {
		t.Fatalf("stored %v", raw)
	}
}

func TestInsertDuplicateOrderedUnordered(t *testing.T) {
	ts := startServer(t)
	coll := ts.client().Database("test").Collection("c")
	docs := []any{bson.M{"_id": 1}, bson.M{"_id": 1}, bson.M{"_id": 2}}
	_, err := coll.InsertMany(ctx, docs)
	var bwe mongo.BulkWriteException
	if !errors.As(err, &bwe) || len(bwe.WriteErrors) != 1 || bwe.WriteErrors[0].Code != 11000 || bwe.WriteErrors[0].Index != 1 {
		t.Fatalf("ordered: %v", err)
	}
	if n, _ := coll.CountDocuments(ctx, bson.M{}); n != 1 {
		t.Fatalf("ordered insert stopped at the error: want 1 doc, got %d", n)
	}
	_, err = coll.InsertMany(ctx, []any{bson.M{"_id": 1}, bson.M{"_id": 3}, bson.M{"_id": 1.0}, bson.M{"_id": int64(4)}},
		options.InsertMany().SetOrdered(false))
	if !errors.As(err, &bwe) || len(bwe.WriteErrors) != 2 || bwe.WriteErrors[1].Index != 2 {
		t.Fatalf("unordered: %v", err)
	}
	if n, _ := coll.CountDocuments(ctx, bson.M{}); n != 3 {
		t.Fatalf("unordered insert: want 3 docs, got %d", n)
	}
	// The write error carries keyPattern and keyValue, as mongod's does.
	_, err = coll.InsertOne(ctx, bson.M{"_id": 3})
	var we mongo.WriteException
	if !errors.As(err, &we) || len(we.WriteErrors) != 1 {
		t.Fatalf("dup insert: %v", err)
	}
	raw := we.WriteErrors[0].Raw
	if js(raw) != `{"index":0,"code":11000,"keyPattern":{"_id":1},"keyValue":{"_id":3},"errmsg":"E11000 duplicate key error collection: test.c index: _id_ dup key: { _id: 3 }"}` {
		t.Fatalf("write error %s", js(raw))
	}
}

func TestInsertBadDocuments(t *testing.T) {
	ts := startServer(t)
	db := ts.client().Database("test")
	for _, doc := range []bson.D{
		{{Key: "_id", Value: bson.D{{Key: "$bad", Value: 1}}}},
		{{Key: "_id", Value: bson.A{1, 2}}},
		{{Key: "_id", Value: bson.Regex{Pattern: "a"}}},
	} {
		_, err := run(t, db, bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{doc}}})
		var we mongo.WriteException
		if !errors.As(err, &we) || len(we.WriteErrors) != 1 {
			t.Errorf("%v: %v", doc, err)
		}
	}
	n, _ := db.Collection("c").CountDocuments(ctx, bson.M{})
	if n != 0 {
		t.Fatalf("bad documents were stored: %d", n)
	}
	_, err := run(t, db, bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: 5}})
	wantCode(t, err, 14, "TypeMismatch")
	_, err = run(t, db, bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{}}, {Key: "bogus", Value: 1}})
	wantCode(t, err, 40415, "")
	_, err = run(t, db, bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: 5}})
	wantCode(t, err, 14, "TypeMismatch")
	_, err = run(t, db, bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.M{"a": bson.M{"$bogus": 1}}}})
	wantCode(t, err, 2, "BadValue")
}

func seed(t *testing.T, coll *mongo.Collection, n int) {
	t.Helper()
	docs := make([]any, n)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: i}, {Key: "n", Value: i}, {Key: "mod", Value: i % 3},
			{Key: "sub", Value: bson.M{"v": i * 10}}, {Key: "tags", Value: bson.A{"t" + fmt.Sprint(i%2), "all"}}}
	}
	if _, err := coll.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
}

func TestFindFiltersSortSkipLimitProjection(t *testing.T) {
	ts := startServer(t)
	coll := ts.client().Database("test").Collection("c")
	seed(t, coll, 10)
	cases := []struct {
		filter bson.M
		want   []any
	}{
		{bson.M{"n": 3}, []any{int32(3)}},
		{bson.M{"n": bson.M{"$gt": 7}}, []any{int32(8), int32(9)}},
		{bson.M{"n": bson.M{"$gte": 2, "$lt": 4}}, []any{int32(2), int32(3)}},
		{bson.M{"n": bson.M{"$lte": 1}}, []any{int32(0), int32(1)}},
		{bson.M{"n": bson.M{"$ne": 0}, "mod": 0}, []any{int32(3), int32(6), int32(9)}},
		{bson.M{"n": bson.M{"$in": bson.A{1, 5, 50}}}, []any{int32(1), int32(5)}},
		{bson.M{"mod": bson.M{"$nin": bson.A{0, 1}}}, []any{int32(2), int32(5), int32(8)}},
		{bson.M{"sub.v": 40}, []any{int32(4)}},
		{bson.M{"sub.v": bson.M{"$exists": true}, "n": bson.M{"$lt": 1}}, []any{int32(0)}},
		{bson.M{"missing": bson.M{"$exists": false}, "n": 9}, []any{int32(9)}},
		{bson.M{"$or": bson.A{bson.M{"n": 1}, bson.M{"n": 2}}}, []any{int32(1), int32(2)}},
		{bson.M{"$and": bson.A{bson.M{"mod": 1}, bson.M{"n": bson.M{"$gt": 4}}}}, []any{int32(7)}},
		{bson.M{"n": bson.M{"$not": bson.M{"$gt": 1}}}, []any{int32(0), int32(1)}},
		{bson.M{"tags": "t1", "n": bson.M{"$lt": 4}}, []any{int32(1), int32(3)}},
		{bson.M{"_id": 7}, []any{int32(7)}},
		{bson.M{"_id": 7.0}, []any{int32(7)}},
		{bson.M{"_id": 7, "n": 8}, []any{}},
	}
	for _, c := range cases {
		cur, err := coll.Find(ctx, c.filter)
		if err != nil {
			t.Fatalf("%v: %v", c.filter, err)
		}
		got := ids(t, cur)
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%v: got %v want %v", c.filter, got, c.want)
		}
	}
	cur, err := coll.Find(ctx, bson.M{}, options.Find().SetSort(bson.D{{Key: "mod", Value: -1}, {Key: "n", Value: 1}}).SetSkip(1).SetLimit(3))
	if err != nil {
		t.Fatal(err)
	}
	wantIDs(t, ids(t, cur), int32(5), int32(8), int32(1))

	var doc bson.D
	if err := coll.FindOne(ctx, bson.M{"_id": 2}, options.FindOne().SetProjection(bson.M{"sub.v": 1})).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	if js(doc) != `{"_id":2,"sub":{"v":20}}` {
		t.Fatalf("inclusion projection %v", doc)
	}
	if err := coll.FindOne(ctx, bson.M{"_id": 2}, options.FindOne().SetProjection(bson.M{"sub": 0, "tags": 0, "_id": 0})).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	if js(doc) != `{"n":2,"mod":2}` {
		t.Fatalf("exclusion projection %v", doc)
	}
	err = coll.FindOne(ctx, bson.M{}, options.FindOne().SetProjection(bson.D{{Key: "a", Value: 1}, {Key: "b", Value: 0}})).Err()
	wantCode(t, err, 31254, "")
}

func TestCursorsBatchesAndGetMore(t *testing.T) {
	db, coll := startCollection(t, "test", "c")
	seed(t, coll, 250)
	cur, err := coll.Find(ctx, bson.M{}, options.Find().SetBatchSize(7))
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(t, cur); len(got) != 250 || got[249] != int32(249) {
		t.Fatalf("got %d docs", len(got))
	}
	// Default first batch is 101 and the cursor stays open.
	sc := oneSession(t, db)
	res := mustRunIn(t, sc, db, bson.D{{Key: "find", Value: "c"}})
	id := get(res, "cursor", "id").(int64)
	if len(get(res, "cursor", "firstBatch").(bson.A)) != 101 || id == 0 {
		t.Fatalf("first batch %v", get(res, "cursor", "id"))
	}
	more := mustRunIn(t, sc, db, bson.D{{Key: "getMore", Value: id}, {Key: "collection", Value: "c"}, {Key: "batchSize", Value: 200}})
	if len(get(more, "cursor", "nextBatch").(bson.A)) != 149 || get(more, "cursor", "id") != int64(0) {
		t.Fatalf("getMore %v", get(more, "cursor", "id"))
	}
	// batchSize: 0 asks for an empty first batch and a cursor for the rest,
	// on find and aggregate alike.
	for _, cmd := range []bson.D{
		{{Key: "find", Value: "c"}, {Key: "batchSize", Value: 0}},
		{{Key: "aggregate", Value: "c"}, {Key: "pipeline", Value: bson.A{}}, {Key: "cursor", Value: bson.D{{Key: "batchSize", Value: 0}}}},
	} {
		empty := mustRunIn(t, sc, db, cmd)
		if len(get(empty, "cursor", "firstBatch").(bson.A)) != 0 || get(empty, "cursor", "id") == int64(0) {
			t.Fatalf("%s with batchSize 0: %v", cmd[0].Key, empty)
		}
		rest := mustRunIn(t, sc, db, bson.D{{Key: "getMore", Value: get(empty, "cursor", "id")}, {Key: "collection", Value: "c"}})
		if len(get(rest, "cursor", "nextBatch").(bson.A)) != 250 {
			t.Fatalf("getMore after batchSize 0: %d documents", len(get(rest, "cursor", "nextBatch").(bson.A)))
		}
	}
	_, err = runIn(sc, db, bson.D{{Key: "getMore", Value: id}, {Key: "collection", Value: "c"}})
	wantCode(t, err, 43, "CursorNotFound")

	// killCursors.
	res = mustRun(t, db, bson.D{{Key: "find", Value: "c"}, {Key: "batchSize", Value: 2}})
	id = get(res, "cursor", "id").(int64)
	kill := mustRun(t, db, bson.D{{Key: "killCursors", Value: "c"}, {Key: "cursors", Value: bson.A{id, int64(12345)}}})
	if fmt.Sprint(kill["cursorsKilled"]) != fmt.Sprintf("[%d]", id) || fmt.Sprint(kill["cursorsNotFound"]) != "[12345]" {
		t.Fatalf("killCursors %v", kill)
	}
	// singleBatch and limit close the cursor.
	res = mustRun(t, db, bson.D{{Key: "find", Value: "c"}, {Key: "batchSize", Value: 2}, {Key: "singleBatch", Value: true}})
	if get(res, "cursor", "id") != int64(0) {
		t.Fatalf("singleBatch left a cursor")
	}
	res = mustRun(t, db, bson.D{{Key: "find", Value: "c"}, {Key: "limit", Value: 3}})
	if get(res, "cursor", "id") != int64(0) || len(get(res, "cursor", "firstBatch").(bson.A)) != 3 {
		t.Fatalf("limit: %v", res)
	}
	_, err = run(t, db, bson.D{{Key: "find", Value: "c"}, {Key: "skip", Value: -1}})
	wantCode(t, err, 51024, "")
}

func TestUpdates(t *testing.T) {
	ts := startServer(t)
	coll := ts.client().Database("test").Collection("c")
	seed(t, coll, 5)
	r, err := coll.UpdateOne(ctx, bson.M{"_id": 1}, bson.M{"$set": bson.M{"x": "y", "sub.w": 1}, "$inc": bson.M{"n": 10}, "$unset": bson.M{"tags": ""}})
	if err != nil || r.MatchedCount != 1 || r.ModifiedCount != 1 {
		t.Fatalf("updateOne %v %v", r, err)
	}
	var d bson.D
	coll.FindOne(ctx, bson.M{"_id": 1}).Decode(&d)
	if js(d) != `{"_id":1,"n":11,"mod":1,"sub":{"v":10,"w":1},"x":"y"}` {
		t.Fatalf("after update %v", d)
	}
	r, err = coll.UpdateMany(ctx, bson.M{"mod": 0}, bson.M{"$set": bson.M{"flag": true}})
	if err != nil || r.MatchedCount != 2 || r.ModifiedCount != 2 {
		t.Fatalf("updateMany %v %v", r, err)
	}
	r, _ = coll.UpdateMany(ctx, bson.M{"mod": 0}, bson.M{"$set": bson.M{"flag": true}})
	if r.MatchedCount != 2 || r.ModifiedCount != 0 {
		t.Fatalf("no-op updateMany %v", r)
	}
	r, err = coll.ReplaceOne(ctx, bson.M{"_id": 2}, bson.M{"replaced": 1})
	if err != nil || r.ModifiedCount != 1 {
		t.Fatal(err)
	}
	coll.FindOne(ctx, bson.M{"_id": 2}).Decode(&d)
	if js(d) != `{"_id":2,"replaced":1}` {
		t.Fatalf("after replace %v", d)
	}
	r, err = coll.UpdateOne(ctx, bson.M{"_id": 99, "k": "v"}, bson.M{"$set": bson.M{"z": 1}}, options.UpdateOne().SetUpsert(true))
	if err != nil || r.UpsertedCount != 1 || r.UpsertedID != int32(99) {
		t.Fatalf("upsert %v %v", r, err)
	}
	coll.FindOne(ctx, bson.M{"_id": 99}).Decode(&d)
	if js(d) != `{"_id":99,"k":"v","z":1}` {
		t.Fatalf("upserted %v", d)
	}
	r, err = coll.UpdateOne(ctx, bson.M{"k": "new"}, bson.M{"$set": bson.M{"z": 2}}, options.UpdateOne().SetUpsert(true))
	if err != nil || r.UpsertedID == nil {
		t.Fatalf("upsert with generated id %v %v", r, err)
	}
	if _, ok := r.UpsertedID.(bson.ObjectID); !ok {
		t.Fatalf("upserted id %T", r.UpsertedID)
	}
	_, err = coll.UpdateOne(ctx, bson.M{"_id": 3}, bson.M{"$set": bson.M{"_id": 4}})
	var we mongo.WriteException
	if !errors.As(err, &we) || we.WriteErrors[0].Code != 66 {
		t.Fatalf("immutable _id: %v", err)
	}
	_, err = coll.UpdateOne(ctx, bson.M{"_id": 3}, bson.M{"$inc": bson.M{"tags": 1}})
	if !errors.As(err, &we) || we.WriteErrors[0].Code != 14 {
		t.Fatalf("$inc on array: %v", err)
	}
	_, err = run(t, coll.Database(), bson.D{{Key: "update", Value: "c"}, {Key: "updates", Value: bson.A{
		bson.M{"q": bson.M{}, "u": bson.M{"a": 1}, "multi": true}}}})
	if !errors.As(err, &we) || we.WriteErrors[0].Code != 9 {
		t.Fatalf("multi replacement: %v", err)
	}
}

func TestDeletesCountDistinct(t *testing.T) {
	ts := startServer(t)
	coll := ts.client().Database("test").Collection("c")
	seed(t, coll, 9)
	if n, _ := coll.EstimatedDocumentCount(ctx); n != 9 {
		t.Fatalf("estimated %d", n)
	}
	if n, _ := coll.CountDocuments(ctx, bson.M{"mod": 1}); n != 3 {
		t.Fatalf("countDocuments %d", n)
	}
	if n, _ := coll.CountDocuments(ctx, bson.M{}, options.Count().SetSkip(2).SetLimit(5)); n != 5 {
		t.Fatalf("countDocuments skip/limit %d", n)
	}
	res := mustRun(t, coll.Database(), bson.D{{Key: "count", Value: "c"}, {Key: "query", Value: bson.M{"n": bson.M{"$gt": 5}}}})
	if res["n"] != int64(3) && res["n"] != int32(3) {
		t.Fatalf("count %v", res)
	}
	vals := coll.Distinct(ctx, "mod", bson.M{})
	var mods []int32
	if err := vals.Decode(&mods); err != nil || fmt.Sprint(mods) != "[0 1 2]" {
		t.Fatalf("distinct %v %v", mods, err)
	}
	var tags []string
	if err := coll.Distinct(ctx, "tags", bson.M{}).Decode(&tags); err != nil || len(tags) != 3 {
		t.Fatalf("distinct array %v %v", tags, err)
	}
	d, err := coll.DeleteOne(ctx, bson.M{"mod": 2})
	if err != nil || d.DeletedCount != 1 {
		t.Fatal(d, err)
	}
	d, err = coll.DeleteMany(ctx, bson.M{"mod": 2})
	if err != nil || d.DeletedCount != 2 {
		t.Fatal(d, err)
	}
	d, _ = coll.DeleteMany(ctx, bson.M{"nothing": 1})
	if d.DeletedCount != 0 {
		t.Fatal(d)
	}
	// A malformed entry fails the whole command before anything runs, as
	// mongod's parser does: the first entry deletes nothing.
	_, err = run(t, coll.Database(), bson.D{{Key: "delete", Value: "c"}, {Key: "deletes", Value: bson.A{
		bson.M{"q": bson.M{}, "limit": 0}, bson.M{"q": bson.M{}, "limit": 5}}}})
	wantCode(t, err, 9, "FailedToParse")
	_, err = run(t, coll.Database(), bson.D{{Key: "delete", Value: "c"}, {Key: "deletes", Value: bson.A{
		bson.M{"q": bson.M{}, "limit": 0}, bson.M{"q": bson.M{}, "limit": 0}, "x"}}})
	var ce mongo.CommandError
	if !errors.As(err, &ce) || ce.Code != 14 || ce.Message != "BSON field 'delete.deletes.2' is the wrong type 'string', expected type 'object'" {
		t.Fatalf("a string entry: %v", err)
	}
	if n, _ := coll.CountDocuments(ctx, bson.M{}); n != 6 {
		t.Fatalf("left %d", n)
	}
}

func TestFindAndModify(t *testing.T) {
	ts := startServer(t)
	coll := ts.client().Database("test").Collection("c")
	seed(t, coll, 5)
	var d bson.M
	err := coll.FindOneAndUpdate(ctx, bson.M{"mod": 1}, bson.M{"$inc": bson.M{"n": 100}},
		options.FindOneAndUpdate().SetSort(bson.M{"n": -1}).SetReturnDocument(options.After)).Decode(&d)
	if err != nil || d["_id"] != int32(4) || d["n"] != int32(104) {
		t.Fatalf("findOneAndUpdate %v %v", d, err)
	}
	d = nil
	err = coll.FindOneAndUpdate(ctx, bson.M{"_id": 0}, bson.M{"$set": bson.M{"x": 1}},
		options.FindOneAndUpdate().SetProjection(bson.M{"x": 1})).Decode(&d)
	if err != nil || len(d) != 1 {
		t.Fatalf("before image with projection %v %v", d, err)
	}
	d = nil
	err = coll.FindOneAndReplace(ctx, bson.M{"_id": 2}, bson.M{"r": 1}, options.FindOneAndReplace().SetReturnDocument(options.After)).Decode(&d)
	if err != nil || d["r"] != int32(1) || d["n"] != nil {
		t.Fatalf("findOneAndReplace %v %v", d, err)
	}
	err = coll.FindOneAndDelete(ctx, bson.M{"_id": 3}).Decode(&d)
	if err != nil || d["_id"] != int32(3) {
		t.Fatalf("findOneAndDelete %v %v", d, err)
	}
	err = coll.FindOneAndDelete(ctx, bson.M{"_id": 3}).Err()
	if !errors.Is(err, mongo.ErrNoDocuments) {
		t.Fatalf("delete missing: %v", err)
	}
	err = coll.FindOneAndUpdate(ctx, bson.M{"_id": 50}, bson.M{"$set": bson.M{"u": 1}},
		options.FindOneAndUpdate().SetUpsert(true).SetReturnDocument(options.After)).Decode(&d)
	if err != nil || d["_id"] != int32(50) || d["u"] != int32(1) {
		t.Fatalf("upsert %v %v", d, err)
	}
	res := mustRun(t, coll.Database(), bson.D{{Key: "findAndModify", Value: "c"}, {Key: "query", Value: bson.M{"_id": 60}},
		{Key: "update", Value: bson.M{"$set": bson.M{"a": 1}}}, {Key: "upsert", Value: true}})
	if get(res, "lastErrorObject", "upserted") != int32(60) || res["value"] != nil {
		t.Fatalf("raw upsert reply %v", res)
	}
	_, err = run(t, coll.Database(), bson.D{{Key: "findAndModify", Value: "c"}, {Key: "query", Value: bson.M{}}})
	wantCode(t, err, 9, "FailedToParse")
	_, err = run(t, coll.Database(), bson.D{{Key: "findAndModify", Value: "c"}, {Key: "remove", Value: true}, {Key: "update", Value: bson.M{}}})
	wantCode(t, err, 9, "FailedToParse")
}

func TestAggregateForCountDocuments(t *testing.T) {
	ts := startServer(t)
	coll := ts.client().Database("test").Collection("c")
	seed(t, coll, 10)
	cur, err := coll.Aggregate(ctx, mongo.Pipeline{
		{{Key: "$match", Value: bson.M{"n": bson.M{"$gte": 3}}}},
		{{Key: "$group", Value: bson.D{{Key: "_id", Value: "$mod"}, {Key: "count", Value: bson.M{"$sum": 1}}, {Key: "total", Value: bson.M{"$sum": "$n"}}}}},
		{{Key: "$sort", Value: bson.M{"_id": 1}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var out []bson.D
	if err := cur.All(ctx, &out); err != nil {
		t.Fatal(err)
	}
	if js(out) != `[{"_id":0,"count":3,"total":18},{"_id":1,"count":2,"total":11},{"_id":2,"count":2,"total":13}]` {
		t.Fatalf("group %v", out)
	}
	cur, err = coll.Aggregate(ctx, mongo.Pipeline{{{Key: "$match", Value: bson.M{"mod": 0}}}, {{Key: "$count", Value: "n"}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := cur.All(ctx, &out); err != nil || js(out) != `[{"n":4}]` {
		t.Fatalf("$count %v %v", out, err)
	}
	_, err = coll.Aggregate(ctx, mongo.Pipeline{{{Key: "$bogus", Value: 1}}})
	wantCode(t, err, 40324, "")
}

func TestDollarPrefixedFieldsAndTransactions(t *testing.T) {
	ts := startServer(t, func(c *server.Config) { c.Standalone = true })
	db := ts.client().Database("test")
	// Allowed since MongoDB 5.0 outside _id.
	mustRun(t, db, bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: 1}, {Key: "$a", Value: 1}}}}})
	// A standalone refuses transactions as mongod's does, before touching
	// any data.
	_, err := run(t, db, bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.M{"_id": 2}}},
		{Key: "txnNumber", Value: int64(1)}, {Key: "startTransaction", Value: true}, {Key: "autocommit", Value: false}})
	wantCode(t, err, 20, "IllegalOperation")
	if n, _ := db.Collection("c").CountDocuments(ctx, bson.M{}); n != 1 {
		t.Fatalf("%d documents; the refused insert was applied", n)
	}
}
