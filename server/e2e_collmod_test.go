package server_test

import (
	"errors"
	"fmt"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// TestCollModIndexOptions: collMod hides and unhides an index and changes
// a TTL, reporting old and new values as mongod does; the planner follows,
// the index keeps answering (also after a restart), and mongod's errors
// come back for bad arguments.
func TestCollModIndexOptions(t *testing.T) {
	ts := startServer(t)
	db := ts.client().Database("cm")
	c := db.Collection("c")
	docs := make([]any, 300)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: i}, {Key: "a", Value: i % 30}, {Key: "b", Value: i}}
	}
	if _, err := c.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	if _, err := createIx(db, "c", ixSpec(bson.D{{Key: "a", Value: 1}}, "a_1"),
		ixSpec(bson.D{{Key: "t", Value: 1}}, "t_1", bson.E{Key: "expireAfterSeconds", Value: 3600})); err != nil {
		t.Fatal(err)
	}
	collMod := func(index bson.D) (bson.M, error) {
		return run(t, db, bson.D{{Key: "collMod", Value: "c"}, {Key: "index", Value: index}})
	}
	a5 := bson.D{{Key: "a", Value: 5}}
	want := fmt.Sprint(findIDs(t, c, a5, bson.D{{Key: "_id", Value: 1}}, nil, nil))

	res, err := collMod(bson.D{{Key: "keyPattern", Value: bson.D{{Key: "a", Value: 1}}}, {Key: "hidden", Value: true}})
	if err != nil || res["hidden_old"] != false || res["hidden_new"] != true {
		t.Fatalf("hide: %v %v", res, err)
	}
	if h := lookupD(listIx(t, c)["a_1"], "hidden"); h != true {
		t.Errorf("listIndexes after hiding: hidden = %v", h)
	}
	if st := explainFind(t, db, "c", a5, nil, nil); hasStage(st, "IXSCAN:a_1") {
		t.Errorf("a hidden index was planned: %v", st)
	}
	if _, err := c.InsertOne(ctx, bson.D{{Key: "_id", Value: 1000}, {Key: "a", Value: 5}}); err != nil {
		t.Fatal(err)
	}
	want = want[:len(want)-1] + " 1000]"
	if res, err = collMod(bson.D{{Key: "name", Value: "a_1"}, {Key: "hidden", Value: false}}); err != nil || res["hidden_new"] != false {
		t.Fatalf("unhide: %v %v", res, err)
	}
	if st := explainFind(t, db, "c", a5, nil, nil); !hasStage(st, "IXSCAN:a_1") {
		t.Errorf("the unhidden index is not planned: %v", st)
	}
	if got := fmt.Sprint(findIDs(t, c, a5, bson.D{{Key: "_id", Value: 1}}, nil, nil)); got != want {
		t.Errorf("through the index after collMod: %s, want %s", got, want)
	}

	res, err = collMod(bson.D{{Key: "name", Value: "t_1"}, {Key: "expireAfterSeconds", Value: 10}})
	if err != nil || res["expireAfterSeconds_old"] != int64(3600) || res["expireAfterSeconds_new"] != int64(10) {
		t.Fatalf("TTL: %v %v", res, err)
	}
	ts.restart()
	db = ts.client().Database("cm")
	c = db.Collection("c")
	if e := lookupD(listIx(t, c)["t_1"], "expireAfterSeconds"); fmt.Sprint(e) != "10" {
		t.Errorf("expireAfterSeconds after a restart: %v", e)
	}
	if got := fmt.Sprint(findIDs(t, c, a5, bson.D{{Key: "_id", Value: 1}}, nil, nil)); got != want {
		t.Errorf("through the index after a restart: %s, want %s", got, want)
	}

	for _, tc := range []struct {
		cmd  bson.D
		code int32
	}{
		{bson.D{{Key: "collMod", Value: "missing"}, {Key: "index", Value: bson.D{{Key: "name", Value: "a_1"}, {Key: "hidden", Value: true}}}}, 26},
		{bson.D{{Key: "collMod", Value: "c"}, {Key: "index", Value: bson.D{{Key: "name", Value: "nope"}, {Key: "hidden", Value: true}}}}, 27},
		{bson.D{{Key: "collMod", Value: "c"}, {Key: "index", Value: bson.D{{Key: "hidden", Value: true}}}}, 72},
		{bson.D{{Key: "collMod", Value: "c"}, {Key: "index", Value: bson.D{{Key: "name", Value: "a_1"}}}}, 72},
		{bson.D{{Key: "collMod", Value: "c"}, {Key: "index", Value: bson.D{{Key: "name", Value: "_id_"}, {Key: "hidden", Value: true}}}}, 2},
		{bson.D{{Key: "collMod", Value: "c"}, {Key: "index", Value: bson.D{{Key: "name", Value: "a_1"}, {Key: "hidden", Value: "yes"}}}}, 14},
		{bson.D{{Key: "collMod", Value: "c"}, {Key: "index", Value: bson.D{{Key: "name", Value: "a_1"}, {Key: "bogus", Value: 1}}}}, 40415},
		{bson.D{{Key: "collMod", Value: "c"}, {Key: "index", Value: bson.D{{Key: "name", Value: "t_1"}, {Key: "expireAfterSeconds", Value: -5}}}}, 67}, // createIndexes' validation
		{bson.D{{Key: "collMod", Value: "c"}, {Key: "cappedSize", Value: 4096}}, 72},                                                                   // InvalidOptions: not capped
	} {
		_, err := run(t, db, tc.cmd)
		var ce mongo.CommandError
		if !errors.As(err, &ce) || ce.Code != tc.code {
			t.Errorf("%v: %v, want code %d", tc.cmd, err, tc.code)
		}
	}
}
