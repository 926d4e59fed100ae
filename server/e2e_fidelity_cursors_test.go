package server_test

import (
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// When mongod 8 closes a cursor (id 0): when its batch read past the end
// of the result, or when the plan knows it has nothing left (a reached
// limit, a point look-up by _id, a collection that does not exist, the
// queued results of listCollections and listIndexes). A batch that takes
// exactly the remaining documents of a scan or a sort, or of any
// aggregation, leaves it open; the next getMore answers an empty batch
// and id 0.

// cursorBatch is a cursor reply's batch length and id.
func cursorBatch(t *testing.T, res bson.M) (int, int64) {
	t.Helper()
	cur, _ := res["cursor"].(bson.D)
	batch := get(cur, "firstBatch")
	if batch == nil {
		batch = get(cur, "nextBatch")
	}
	arr, ok := batch.(bson.A)
	id, idOK := get(cur, "id").(int64)
	if !ok || !idOK {
		t.Fatalf("not a cursor reply: %v", res)
	}
	return len(arr), id
}

// getMore runs a getMore on coll (batchSize 0: none given).
func getMore(t *testing.T, sc context.Context, db *mongo.Database, coll string, id int64, batchSize int32) bson.M {
	t.Helper()
	cmd := bson.D{{Key: "getMore", Value: id}, {Key: "collection", Value: coll}}
	if batchSize > 0 {
		cmd = append(cmd, bson.E{Key: "batchSize", Value: batchSize})
	}
	return mustRunIn(t, sc, db, cmd)
}

// wantBatch checks a cursor reply: n documents, and the cursor open or
// closed.
func wantBatch(t *testing.T, what string, res bson.M, n int, open bool) int64 {
	t.Helper()
	got, id := cursorBatch(t, res)
	if got != n || (id != 0) != open {
		t.Fatalf("%s: %d documents, id %d; want %d documents, open %v", what, got, id, n, open)
	}
	return id
}

// wantClosesEmpty checks that the next getMore of an open cursor answers
// an empty batch and id 0, and that the cursor is then gone.
func wantClosesEmpty(t *testing.T, sc context.Context, db *mongo.Database, coll string, id int64) {
	t.Helper()
	wantBatch(t, "getMore after the last document", getMore(t, sc, db, coll, id, 0), 0, false)
	_, err := runIn(sc, db, bson.D{{Key: "getMore", Value: id}, {Key: "collection", Value: coll}})
	wantCode(t, err, 43, "CursorNotFound")
}

func TestFidelityCursorGetMoreTakingTheRestStaysOpen(t *testing.T) {
	db, coll := startCollection(t, "cur", "c")
	seed(t, coll, 10)
	sc := oneSession(t, db)
	id := wantBatch(t, "find batchSize 1", mustRunIn(t, sc, db, bson.D{{Key: "find", Value: "c"}, {Key: "batchSize", Value: 1}}), 1, true)
	res := getMore(t, sc, db, "c", id, 9)
	if _, next := cursorBatch(t, res); next != id {
		t.Fatalf("getMore taking the last 9: id %d, want the cursor's %d", next, id)
	}
	wantBatch(t, "getMore taking the last 9", res, 9, true)
	wantClosesEmpty(t, sc, db, "c", id)

	// A getMore without batchSize reads to the end: it closes the cursor.
	id = wantBatch(t, "find batchSize 2", mustRunIn(t, sc, db, bson.D{{Key: "find", Value: "c"}, {Key: "batchSize", Value: 2}}), 2, true)
	wantBatch(t, "getMore of the rest", getMore(t, sc, db, "c", id, 0), 8, false)
	// So does one whose batchSize is more than what is left.
	id = wantBatch(t, "find batchSize 2", mustRunIn(t, sc, db, bson.D{{Key: "find", Value: "c"}, {Key: "batchSize", Value: 2}}), 2, true)
	wantBatch(t, "getMore batchSize 9", getMore(t, sc, db, "c", id, 9), 8, false)
}

func TestFidelityCursorFindFirstBatch(t *testing.T) {
	db, coll := startCollection(t, "cur", "c")
	seed(t, coll, 10)
	sc := oneSession(t, db)
	find := func(extra ...bson.E) bson.M {
		t.Helper()
		return mustRunIn(t, sc, db, append(bson.D{{Key: "find", Value: "c"}}, extra...))
	}
	batch := func(n int) bson.E { return bson.E{Key: "batchSize", Value: n} }
	limit := func(n int) bson.E { return bson.E{Key: "limit", Value: n} }

	// The default batch reads past the end of a small result.
	wantBatch(t, "find", find(), 10, false)
	wantBatch(t, "find batchSize 11", find(batch(11)), 10, false)
	// A batch of exactly the result does not: the scan has not seen its end.
	id := wantBatch(t, "find batchSize 10", find(batch(10)), 10, true)
	wantClosesEmpty(t, sc, db, "c", id)
	id = wantBatch(t, "sorted find batchSize 10", find(batch(10), bson.E{Key: "sort", Value: bson.D{{Key: "n", Value: -1}}}), 10, true)
	wantClosesEmpty(t, sc, db, "c", id)

	// A reached limit is known at once.
	wantBatch(t, "find limit 3", find(limit(3)), 3, false)
	wantBatch(t, "find limit 3 batchSize 3", find(limit(3), batch(3)), 3, false)
	wantBatch(t, "find limit 10 batchSize 10", find(limit(10), batch(10)), 10, false)
	id = wantBatch(t, "find limit 5 batchSize 2", find(limit(5), batch(2)), 2, true)
	wantBatch(t, "getMore to the limit", getMore(t, sc, db, "c", id, 3), 3, false)
	// Unless a blocking sort enforces it: a sort tells its end only when
	// read past it. Over an index that gives the order, the limit is a
	// stage of its own that knows.
	sortN := bson.E{Key: "sort", Value: bson.D{{Key: "n", Value: 1}}}
	id = wantBatch(t, "blocking sort limit 3 batchSize 3", find(sortN, limit(3), batch(3)), 3, true)
	wantClosesEmpty(t, sc, db, "c", id)
	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "n", Value: 1}}}); err != nil {
		t.Fatal(err)
	}
	overIndex := bson.E{Key: "filter", Value: bson.D{{Key: "n", Value: bson.D{{Key: "$gte", Value: 0}}}}}
	wantBatch(t, "indexed sort limit 3 batchSize 3", find(overIndex, sortN, limit(3), batch(3)), 3, false)

	// A point look-up by _id knows there is no other document.
	byID := bson.E{Key: "filter", Value: bson.D{{Key: "_id", Value: int32(3)}}}
	wantBatch(t, "find by _id batchSize 1", find(byID, batch(1)), 1, false)
	wantBatch(t, "find by _id with a projection", find(byID, bson.E{Key: "projection", Value: bson.D{{Key: "n", Value: 1}}}, batch(1)), 1, false)
	// With more than _id in the filter, mongod scans the _id index.
	id = wantBatch(t, "find by _id and n batchSize 1", find(bson.E{Key: "filter", Value: bson.D{{Key: "_id", Value: int32(3)}, {Key: "n", Value: 3}}}, batch(1)), 1, true)
	wantClosesEmpty(t, sc, db, "c", id)
	// singleBatch closes the cursor whatever is left.
	wantBatch(t, "singleBatch", find(batch(2), bson.E{Key: "singleBatch", Value: true}), 2, false)

	// batchSize 0 reads nothing: the cursor stays open on a collection,
	// even an empty one, and closes on a collection that does not exist.
	id = wantBatch(t, "find batchSize 0", find(batch(0)), 0, true)
	wantBatch(t, "getMore after batchSize 0", getMore(t, sc, db, "c", id, 0), 10, false)
	mustRun(t, db, bson.D{{Key: "create", Value: "empty"}})
	id = wantBatch(t, "batchSize 0 on an empty collection",
		mustRunIn(t, sc, db, bson.D{{Key: "find", Value: "empty"}, {Key: "batchSize", Value: 0}}), 0, true)
	wantClosesEmpty(t, sc, db, "empty", id)
	wantBatch(t, "batchSize 0 on a missing collection",
		mustRunIn(t, sc, db, bson.D{{Key: "find", Value: "missing"}, {Key: "batchSize", Value: 0}}), 0, false)
}

// TestFidelityCursorDefaultBatchOf101: a result of exactly 101 documents
// fills the default first batch without its end being seen.
func TestFidelityCursorDefaultBatchOf101(t *testing.T) {
	db, coll := startCollection(t, "cur", "c")
	seed(t, coll, 101)
	sc := oneSession(t, db)
	id := wantBatch(t, "find of 101", mustRunIn(t, sc, db, bson.D{{Key: "find", Value: "c"}}), 101, true)
	wantClosesEmpty(t, sc, db, "c", id)
	id = wantBatch(t, "aggregate of 101", mustRunIn(t, sc, db, bson.D{{Key: "aggregate", Value: "c"},
		{Key: "pipeline", Value: bson.A{}}, {Key: "cursor", Value: bson.D{}}}), 101, true)
	wantClosesEmpty(t, sc, db, "c", id)
}

// TestFidelityCursorAggregate: an aggregation learns its end only by
// reading past it, a $limit included, and batchSize 0 always leaves a
// cursor.
func TestFidelityCursorAggregate(t *testing.T) {
	db, coll := startCollection(t, "cur", "c")
	seed(t, coll, 10)
	sc := oneSession(t, db)
	agg := func(coll string, batchSize int, stages ...bson.D) bson.M {
		t.Helper()
		cursor := bson.D{}
		if batchSize >= 0 {
			cursor = bson.D{{Key: "batchSize", Value: batchSize}}
		}
		pipeline := bson.A{}
		for _, st := range stages {
			pipeline = append(pipeline, st)
		}
		return mustRunIn(t, sc, db, bson.D{{Key: "aggregate", Value: coll}, {Key: "pipeline", Value: pipeline}, {Key: "cursor", Value: cursor}})
	}
	wantBatch(t, "aggregate", agg("c", -1), 10, false)
	id := wantBatch(t, "aggregate batchSize 10", agg("c", 10), 10, true)
	wantClosesEmpty(t, sc, db, "c", id)
	id = wantBatch(t, "$limit 3 batchSize 3", agg("c", 3, bson.D{{Key: "$limit", Value: 3}}), 3, true)
	wantClosesEmpty(t, sc, db, "c", id)
	match := bson.D{{Key: "$match", Value: bson.D{{Key: "_id", Value: int32(1)}}}}
	id = wantBatch(t, "$match by _id batchSize 1", agg("c", 1, match), 1, true)
	wantClosesEmpty(t, sc, db, "c", id)
	wantBatch(t, "$limit 3 batchSize 4", agg("c", 4, bson.D{{Key: "$limit", Value: 3}}), 3, false)
	id = wantBatch(t, "aggregate batchSize 0 on a missing collection", agg("missing", 0), 0, true)
	wantClosesEmpty(t, sc, db, "missing", id)

	// A find on a view runs as an aggregation.
	mustRun(t, db, bson.D{{Key: "create", Value: "v"}, {Key: "viewOn", Value: "c"}, {Key: "pipeline", Value: bson.A{}}})
	id = wantBatch(t, "find on a view limit 3 batchSize 3", mustRunIn(t, sc, db, bson.D{{Key: "find", Value: "v"},
		{Key: "limit", Value: 3}, {Key: "batchSize", Value: 3}}), 3, true)
	wantClosesEmpty(t, sc, db, "v", id)
}

// TestFidelityCursorQueuedResults: listCollections and listIndexes hold
// their whole result, so a batch that takes the last entry closes them.
func TestFidelityCursorQueuedResults(t *testing.T) {
	db, coll := startCollection(t, "cur", "a")
	seed(t, coll, 1)
	mustRun(t, db, bson.D{{Key: "create", Value: "b"}})
	sc := oneSession(t, db)
	wantBatch(t, "listCollections batchSize 2", mustRunIn(t, sc, db, bson.D{{Key: "listCollections", Value: 1},
		{Key: "cursor", Value: bson.D{{Key: "batchSize", Value: 2}}}}), 2, false)
	id := wantBatch(t, "listCollections batchSize 1", mustRunIn(t, sc, db, bson.D{{Key: "listCollections", Value: 1},
		{Key: "cursor", Value: bson.D{{Key: "batchSize", Value: 1}}}}), 1, true)
	wantBatch(t, "its getMore batchSize 1", getMore(t, sc, db, "$cmd.listCollections", id, 1), 1, false)
	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "n", Value: 1}}}); err != nil {
		t.Fatal(err)
	}
	wantBatch(t, "listIndexes batchSize 2", mustRunIn(t, sc, db, bson.D{{Key: "listIndexes", Value: "a"},
		{Key: "cursor", Value: bson.D{{Key: "batchSize", Value: 2}}}}), 2, false)
}

// TestFidelityCursorTailable: mongod keeps a tailable cursor unless the
// capped collection is empty.
func TestFidelityCursorTailable(t *testing.T) {
	db := startServer(t).client().Database("cur")
	mustRun(t, db, bson.D{{Key: "create", Value: "log"}, {Key: "capped", Value: true}, {Key: "size", Value: 4096}})
	tail := bson.D{{Key: "find", Value: "log"}, {Key: "tailable", Value: true}}
	wantBatch(t, "tailable on an empty capped collection", mustRun(t, db, tail), 0, false)
	insertIDs(t, db.Collection("log"), 1, 2)
	wantBatch(t, "tailable over what it holds", mustRun(t, db, tail), 2, true)
	cur, err := db.Collection("log").Find(ctx, bson.M{}, options.Find().SetCursorType(options.Tailable).SetBatchSize(2))
	if err != nil {
		t.Fatal(err)
	}
	defer cur.Close(ctx)
	if cur.RemainingBatchLength() != 2 || cur.ID() == 0 {
		t.Fatalf("tailable batchSize 2: %d documents, id %d", cur.RemainingBatchLength(), cur.ID())
	}
	for range 2 {
		cur.Next(ctx)
	}
	if cur.TryNext(ctx) || cur.ID() == 0 || cur.Err() != nil {
		t.Fatalf("tailable's empty getMore: id %d, %v", cur.ID(), cur.Err())
	}
}

// TestFidelityCursorDrivers: the driver reads every document whatever the
// batches, and sends the getMore that finds the end empty.
func TestFidelityCursorDrivers(t *testing.T) {
	_, coll := startCollection(t, "cur", "c")
	seed(t, coll, 10)
	for _, bs := range []int32{1, 5, 10, 11} {
		cur, err := coll.Find(ctx, bson.M{}, options.Find().SetBatchSize(bs))
		if err != nil {
			t.Fatal(err)
		}
		if got := ids(t, cur); len(got) != 10 || cur.ID() != 0 {
			t.Fatalf("find batchSize %d: %d documents, id %d", bs, len(got), cur.ID())
		}
		acur, err := coll.Aggregate(ctx, bson.A{}, options.Aggregate().SetBatchSize(bs))
		if err != nil {
			t.Fatal(err)
		}
		var all []bson.M
		if err := acur.All(ctx, &all); err != nil || len(all) != 10 {
			t.Fatalf("aggregate batchSize %d: %d documents, %v", bs, len(all), err)
		}
	}
	cur, err := coll.Find(ctx, bson.M{}, options.Find().SetBatchSize(2).SetLimit(5))
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(t, cur); len(got) != 5 {
		t.Fatalf("find limit 5 batchSize 2: %d documents", len(got))
	}
}
