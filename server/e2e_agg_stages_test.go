package server_test

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// aggJSON runs a pipeline and returns the results as one JSON array.
func aggJSON(t *testing.T, coll *mongo.Collection, pipeline bson.A, opts ...options.Lister[options.AggregateOptions]) string {
	t.Helper()
	cur, err := coll.Aggregate(ctx, pipeline, opts...)
	if err != nil {
		t.Fatal(err)
	}
	var out []bson.D
	if err := cur.All(ctx, &out); err != nil {
		t.Fatal(err)
	}
	return js(out)
}

func insertAll(t *testing.T, coll *mongo.Collection, docs ...bson.D) {
	t.Helper()
	var many []any
	for _, d := range docs {
		many = append(many, d)
	}
	if _, err := coll.InsertMany(ctx, many); err != nil {
		t.Fatal(err)
	}
}

func TestAggLookupUnwindFacet(t *testing.T) {
	db := startServer(t).client().Database("agg")
	orders, items := db.Collection("orders"), db.Collection("items")
	insertAll(t, orders,
		bson.D{{Key: "_id", Value: 1}, {Key: "item", Value: "a"}, {Key: "qty", Value: 2}},
		bson.D{{Key: "_id", Value: 2}, {Key: "item", Value: "b"}, {Key: "qty", Value: 1}},
		bson.D{{Key: "_id", Value: 3}})
	insertAll(t, items,
		bson.D{{Key: "_id", Value: "a"}, {Key: "price", Value: 10}, {Key: "tags", Value: bson.A{"x", "y"}}},
		bson.D{{Key: "_id", Value: "b"}, {Key: "price", Value: 3}, {Key: "tags", Value: bson.A{}}})

	got := aggJSON(t, orders, bson.A{
		bson.D{{Key: "$lookup", Value: bson.D{{Key: "from", Value: "items"}, {Key: "localField", Value: "item"}, {Key: "foreignField", Value: "_id"}, {Key: "as", Value: "it"}}}},
		bson.D{{Key: "$unwind", Value: bson.D{{Key: "path", Value: "$it"}, {Key: "preserveNullAndEmptyArrays", Value: true}}}},
		bson.D{{Key: "$unwind", Value: bson.D{{Key: "path", Value: "$it.tags"}, {Key: "includeArrayIndex", Value: "i"}}}},
		bson.D{{Key: "$project", Value: bson.D{{Key: "tag", Value: "$it.tags"}, {Key: "i", Value: 1}}}},
	})
	if want := `[{"_id":1,"i":0,"tag":"x"},{"_id":1,"i":1,"tag":"y"}]`; got != want {
		t.Fatalf("lookup+unwind:\n got %s\nwant %s", got, want)
	}

	// let + pipeline, with the command's let visible inside.
	got = aggJSON(t, orders, bson.A{
		bson.D{{Key: "$match", Value: bson.D{{Key: "item", Value: bson.D{{Key: "$exists", Value: true}}}}}},
		bson.D{{Key: "$lookup", Value: bson.D{{Key: "from", Value: "items"}, {Key: "let", Value: bson.D{{Key: "q", Value: "$qty"}, {Key: "i", Value: "$item"}}},
			{Key: "pipeline", Value: bson.A{
				bson.D{{Key: "$match", Value: bson.D{{Key: "$expr", Value: bson.D{{Key: "$eq", Value: bson.A{"$_id", "$$i"}}}}}}},
				bson.D{{Key: "$project", Value: bson.D{{Key: "_id", Value: 0}, {Key: "total", Value: bson.D{{Key: "$multiply", Value: bson.A{"$price", "$$q", "$$k"}}}}}}},
			}}, {Key: "as", Value: "cost"}}}},
		bson.D{{Key: "$project", Value: bson.D{{Key: "cost", Value: 1}}}},
	}, options.Aggregate().SetLet(bson.D{{Key: "k", Value: 10}}))
	if want := `[{"_id":1,"cost":[{"total":200}]},{"_id":2,"cost":[{"total":30}]}]`; got != want {
		t.Fatalf("lookup pipeline:\n got %s\nwant %s", got, want)
	}

	got = aggJSON(t, orders, bson.A{bson.D{{Key: "$facet", Value: bson.D{
		{Key: "n", Value: bson.A{bson.D{{Key: "$count", Value: "n"}}}},
		{Key: "byItem", Value: bson.A{bson.D{{Key: "$sortByCount", Value: "$item"}}, bson.D{{Key: "$sort", Value: bson.D{{Key: "_id", Value: 1}}}}}},
	}}}})
	if want := `[{"n":[{"n":3}],"byItem":[{"_id":null,"count":1},{"_id":"a","count":1},{"_id":"b","count":1}]}]`; got != want {
		t.Fatalf("facet:\n got %s\nwant %s", got, want)
	}
}

func TestAggOutMerge(t *testing.T) {
	db := startServer(t).client().Database("agg")
	src, dst := db.Collection("src"), db.Collection("dst")
	insertAll(t, src,
		bson.D{{Key: "_id", Value: 1}, {Key: "g", Value: "a"}, {Key: "v", Value: 1}},
		bson.D{{Key: "_id", Value: 2}, {Key: "g", Value: "a"}, {Key: "v", Value: 2}},
		bson.D{{Key: "_id", Value: 3}, {Key: "g", Value: "b"}, {Key: "v", Value: 5}})
	insertAll(t, dst, bson.D{{Key: "_id", Value: "stale"}})

	if got := aggJSON(t, src, bson.A{
		bson.D{{Key: "$group", Value: bson.D{{Key: "_id", Value: "$g"}, {Key: "total", Value: bson.D{{Key: "$sum", Value: "$v"}}}}}},
		bson.D{{Key: "$out", Value: "dst"}},
	}); got != "null" && got != "[]" {
		t.Fatalf("$out returned %s", got)
	}
	if got := aggJSON(t, dst, bson.A{bson.D{{Key: "$sort", Value: bson.D{{Key: "_id", Value: 1}}}}}); got != `[{"_id":"a","total":3},{"_id":"b","total":5}]` {
		t.Fatalf("after $out: %s", got)
	}

	// $merge: matched documents merge their fields, new ones are inserted.
	aggJSON(t, src, bson.A{
		bson.D{{Key: "$project", Value: bson.D{{Key: "_id", Value: "$g"}, {Key: "last", Value: "$v"}}}},
		bson.D{{Key: "$merge", Value: bson.D{{Key: "into", Value: "dst"}, {Key: "whenMatched", Value: "merge"}}}},
	})
	aggJSON(t, db.Collection("none"), bson.A{
		bson.D{{Key: "$documents", Value: bson.A{bson.D{{Key: "_id", Value: "c"}, {Key: "total", Value: 0}}}}},
		bson.D{{Key: "$merge", Value: bson.D{{Key: "into", Value: "dst"}, {Key: "whenMatched", Value: "keepExisting"}}}},
	})
	if got := aggJSON(t, dst, bson.A{bson.D{{Key: "$sort", Value: bson.D{{Key: "_id", Value: 1}}}}}); got != `[{"_id":"a","total":3,"last":2},{"_id":"b","total":5,"last":5},{"_id":"c","total":0}]` {
		t.Fatalf("after $merge: %s", got)
	}

	// whenMatched: fail reports a duplicate key; $out must be last.
	_, err := src.Aggregate(ctx, bson.A{bson.D{{Key: "$project", Value: bson.D{{Key: "_id", Value: "a"}}}}, bson.D{{Key: "$limit", Value: 1}},
		bson.D{{Key: "$merge", Value: bson.D{{Key: "into", Value: "dst"}, {Key: "whenMatched", Value: "fail"}}}}})
	wantCode(t, err, 11000, "DuplicateKey")
	_, err = src.Aggregate(ctx, bson.A{bson.D{{Key: "$out", Value: "x"}}, bson.D{{Key: "$limit", Value: 1}}})
	wantCode(t, err, 40601, "")
}

func TestAggWindowsAndCollectionless(t *testing.T) {
	db := startServer(t).client().Database("agg")
	c := db.Collection("sales")
	insertAll(t, c,
		bson.D{{Key: "_id", Value: 1}, {Key: "s", Value: "x"}, {Key: "day", Value: 1}, {Key: "amt", Value: 10}},
		bson.D{{Key: "_id", Value: 2}, {Key: "s", Value: "x"}, {Key: "day", Value: 2}, {Key: "amt", Value: 20}},
		bson.D{{Key: "_id", Value: 3}, {Key: "s", Value: "y"}, {Key: "day", Value: 1}, {Key: "amt", Value: 7}})
	got := aggJSON(t, c, bson.A{
		bson.D{{Key: "$setWindowFields", Value: bson.D{{Key: "partitionBy", Value: "$s"}, {Key: "sortBy", Value: bson.D{{Key: "day", Value: 1}}},
			{Key: "output", Value: bson.D{
				{Key: "run", Value: bson.D{{Key: "$sum", Value: "$amt"}, {Key: "window", Value: bson.D{{Key: "documents", Value: bson.A{"unbounded", "current"}}}}}},
				{Key: "rank", Value: bson.D{{Key: "$rank", Value: bson.D{}}}},
			}}}}},
		bson.D{{Key: "$project", Value: bson.D{{Key: "run", Value: 1}, {Key: "rank", Value: 1}}}},
	})
	if want := `[{"_id":1,"run":10,"rank":1},{"_id":2,"run":30,"rank":2},{"_id":3,"run":7,"rank":1}]`; got != want {
		t.Fatalf("windows:\n got %s\nwant %s", got, want)
	}

	// {aggregate: 1} with $documents.
	cur, err := db.Aggregate(ctx, bson.A{bson.D{{Key: "$documents", Value: bson.A{bson.D{{Key: "x", Value: 1}}}}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "y", Value: bson.D{{Key: "$add", Value: bson.A{"$x", 1}}}}}}}})
	if err != nil {
		t.Fatal(err)
	}
	var docs []bson.D
	if err := cur.All(ctx, &docs); err != nil {
		t.Fatal(err)
	}
	if got := js(docs); got != `[{"x":1,"y":2}]` {
		t.Fatalf("$documents: %s", got)
	}

	// explain and collation.
	out := mustRun(t, db, bson.D{{Key: "aggregate", Value: "sales"}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$match", Value: bson.D{}}}}}, {Key: "explain", Value: true}})
	if get(out, "queryPlanner", "winningPlan", "stage") != "COLLSCAN" {
		t.Fatalf("explain: %v", out)
	}
	got = aggJSON(t, c, bson.A{bson.D{{Key: "$match", Value: bson.D{{Key: "s", Value: "X"}}}}, bson.D{{Key: "$count", Value: "n"}}},
		options.Aggregate().SetCollation(&options.Collation{Locale: "en", Strength: 2}))
	if got != `[{"n":2}]` {
		t.Fatalf("collation: %s", got)
	}
}
