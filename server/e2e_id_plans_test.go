package server_test

import (
	"fmt"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestIDInAndRangePlans: an _id $in looks each value up and an _id range
// reads only its part of the collection (explain: IXSCAN of _id_, and
// only those documents examined), with the same results as a scan, over
// checkpointed and newer documents alike.
func TestIDInAndRangePlans(t *testing.T) {
	ts := startServer(t)
	db := ts.client().Database("ids")
	coll := db.Collection("c")
	var docs []any
	for i := range 1000 {
		docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "g", Value: i % 7}})
	}
	coll.InsertMany(ctx, docs)
	mustRun(t, db, bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "checkpointed part"}})
	coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 1000}, {Key: "g", Value: 0}})
	coll.DeleteOne(ctx, bson.D{{Key: "_id", Value: 20}})
	coll.InsertOne(ctx, bson.D{{Key: "_id", Value: "s"}, {Key: "g", Value: 0}})

	cases := []struct {
		filter   bson.D
		sort     bson.D
		want     string
		examined int32
	}{
		{bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: bson.A{5, 1000, 5, "s", 20, 2000}}}}}, nil, "[5 1000 s]", 3},
		{bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: bson.A{7, 14, 15}}}}, {Key: "g", Value: 0}}, nil, "[7 14]", 3},
		{bson.D{{Key: "_id", Value: bson.D{{Key: "$gte", Value: 18}, {Key: "$lt", Value: 23}}}}, nil, "[18 19 21 22]", 4},
		{bson.D{{Key: "_id", Value: bson.D{{Key: "$gt", Value: 995}}}}, bson.D{{Key: "_id", Value: 1}}, "[996 997 998 999 1000]", 5},
		{bson.D{{Key: "_id", Value: bson.D{{Key: "$gt", Value: 995}}}}, bson.D{{Key: "_id", Value: -1}}, "[1000 999 998 997 996]", 5},
		{bson.D{{Key: "_id", Value: bson.D{{Key: "$lte", Value: 3}}}, {Key: "g", Value: bson.D{{Key: "$gt", Value: 1}}}}, nil, "[2 3]", 4},
	}
	for _, c := range cases {
		opts := options.Find()
		if c.sort != nil {
			opts.SetSort(c.sort)
		}
		cur, err := coll.Find(ctx, c.filter, opts)
		if err != nil {
			t.Fatal(err)
		}
		var got []bson.M
		cur.All(ctx, &got)
		ids := make([]any, len(got))
		for i, d := range got {
			ids[i] = d["_id"]
		}
		if fmt.Sprint(ids) != c.want {
			t.Errorf("%v: %v, want %s", c.filter, ids, c.want)
		}
		explain := mustRun(t, db, bson.D{{Key: "explain", Value: bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: c.filter}}},
			{Key: "verbosity", Value: "executionStats"}})
		stage := get(explain, "queryPlanner", "winningPlan", "inputStage", "indexName")
		examined := get(explain, "executionStats", "totalDocsExamined")
		if stage != "_id_" || fmt.Sprint(examined) != fmt.Sprint(c.examined) {
			t.Errorf("%v: plan %v, %v documents examined, want the _id index and %d", c.filter,
				get(explain, "queryPlanner", "winningPlan"), examined, c.examined)
		}
	}
}
