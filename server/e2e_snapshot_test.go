package server_test

import (
	"fmt"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestReadAtClusterTime: readConcern snapshot with atClusterTime reads the
// branch as it was at that time, also after a GC; a
// snapshot read without it reports the time it read at; times before the
// kept history, in the future, or without level snapshot are refused.
func TestReadAtClusterTime(t *testing.T) {
	ts := startServer(t)
	db := ts.client().Database("snap")
	first := mustRun(t, db, bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: 1}, {Key: "v", Value: 1}}}}})
	t1 := first["operationTime"].(bson.Timestamp)
	second := mustRun(t, db, bson.D{{Key: "update", Value: "c"}, {Key: "updates", Value: bson.A{
		bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: 1}}}, {Key: "u", Value: bson.D{{Key: "$set", Value: bson.D{{Key: "v", Value: 2}}}}}}}}})
	t2 := second["operationTime"].(bson.Timestamp)
	mustRun(t, db, bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: 2}, {Key: "v", Value: 3}}}}})

	findAt := func(at bson.Timestamp) bson.M {
		t.Helper()
		return mustRun(t, db, bson.D{{Key: "find", Value: "c"}, {Key: "sort", Value: bson.D{{Key: "_id", Value: 1}}},
			{Key: "readConcern", Value: bson.D{{Key: "level", Value: "snapshot"}, {Key: "atClusterTime", Value: at}}}})
	}
	values := func(reply bson.M) []any {
		var out []any
		for _, doc := range get(reply, "cursor", "firstBatch").(bson.A) {
			out = append(out, get(doc, "v"))
		}
		return out
	}
	check := func(at bson.Timestamp, want string) {
		t.Helper()
		reply := findAt(at)
		if got := fmt.Sprint(values(reply)); got != want {
			t.Errorf("find at %v: values %s, want %s", at, got, want)
		}
		if got := get(reply, "cursor", "atClusterTime"); got != at {
			t.Errorf("find at %v reports atClusterTime %v", at, got)
		}
	}
	// A GC (which checkpoints) in between; storage's
	// TestHistoryKeepsPastStates checks that GC keeps the kept states' trees.
	mustRun(t, db, bson.D{{Key: "dumboGC", Value: 1}})
	check(t1, "[1]")
	check(t2, "[2]")

	now := mustRun(t, db, bson.D{{Key: "distinct", Value: "c"}, {Key: "key", Value: "v"},
		{Key: "readConcern", Value: bson.D{{Key: "level", Value: "snapshot"}}}})
	at, ok := now["atClusterTime"].(bson.Timestamp)
	if !ok || at.T < t2.T || (at.T == t2.T && at.I <= t2.I) {
		t.Errorf("distinct at snapshot reports atClusterTime %v (after %v expected)", now["atClusterTime"], t2)
	}
	if got := fmt.Sprint(now["values"]); got != "[1 3]" && got != "[2 3]" {
		t.Errorf("distinct now: %s", got)
	}

	_, err := run(t, db, bson.D{{Key: "find", Value: "c"}, {Key: "readConcern", Value: bson.D{{Key: "level", Value: "snapshot"}, {Key: "atClusterTime", Value: bson.Timestamp{T: 1, I: 1}}}}})
	wantCode(t, err, 239, "SnapshotTooOld")
	_, err = run(t, db, bson.D{{Key: "find", Value: "c"}, {Key: "readConcern", Value: bson.D{{Key: "level", Value: "snapshot"}, {Key: "atClusterTime", Value: bson.Timestamp{T: t2.T + 3600, I: 1}}}}})
	wantCode(t, err, 72, "InvalidOptions")
	_, err = run(t, db, bson.D{{Key: "find", Value: "c"}, {Key: "readConcern", Value: bson.D{{Key: "level", Value: "majority"}, {Key: "atClusterTime", Value: t1}}}})
	wantCode(t, err, 72, "InvalidOptions")

	// A window of 0 keeps only the current state from the next write on.
	admin := db.Client().Database("admin")
	if was := mustRun(t, admin, bson.D{{Key: "setParameter", Value: 1}, {Key: "minSnapshotHistoryWindowInSeconds", Value: 0}})["was"]; was != int64(300) {
		t.Errorf("setParameter was %v, want 300", was)
	}
	mustRun(t, db, bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: 4}}}}})
	_, err = run(t, db, bson.D{{Key: "find", Value: "c"}, {Key: "readConcern", Value: bson.D{{Key: "level", Value: "snapshot"}, {Key: "atClusterTime", Value: t2}}}})
	wantCode(t, err, 239, "SnapshotTooOld")
}

// TestSnapshotSessionGetMore: a snapshot session's find over several
// batches: the driver repeats the snapshot read concern on each getMore,
// which reads as its cursor does, and every document comes back.
func TestSnapshotSessionGetMore(t *testing.T) {
	c := startServer(t).client()
	coll := c.Database("snap").Collection("c")
	docs := make([]any, 10)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: i}}
	}
	if _, err := coll.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	sess, err := c.StartSession(options.Session().SetSnapshot(true))
	if err != nil {
		t.Fatal(err)
	}
	defer sess.EndSession(ctx)
	cur, err := coll.Find(mongo.NewSessionContext(ctx, sess), bson.D{}, options.Find().SetBatchSize(3))
	if err != nil {
		t.Fatal(err)
	}
	var got []bson.M
	if err := cur.All(mongo.NewSessionContext(ctx, sess), &got); err != nil || len(got) != 10 {
		t.Fatalf("snapshot find over getMores: %d documents, %v", len(got), err)
	}
}
