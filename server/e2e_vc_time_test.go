package server_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestRevisionsByTime: db@main@{time} and db@{time} read the newest commit
// of the branch at or before the time, found down the first-parent chain
// (so a commit whose clock ran behind its parent's is found where the
// graph puts it); they are read-only; a time before the first commit, or
// no time at all, names nothing.
func TestRevisionsByTime(t *testing.T) {
	ts := startServer(t)
	c := ts.client()
	db := c.Database("timed")
	base := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	commit := func(n int, at time.Time) {
		t.Helper()
		if _, err := db.Collection("c").InsertOne(ctx, bson.M{"_id": n}); err != nil {
			t.Fatal(err)
		}
		mustRun(t, db, bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "c"}, {Key: "timestamp", Value: at}})
	}
	commit(1, base)
	commit(2, base.Add(time.Hour))
	commit(3, base.Add(2*time.Hour))
	commit(4, base.Add(90*time.Minute)) // a clock behind its parent's
	count := func(name string) (int64, error) {
		return c.Database(name).Collection("c").CountDocuments(ctx, bson.M{})
	}
	for _, tc := range []struct {
		rev  string
		want int64
	}{
		{"main@{2026-12-01T10:00:00Z}", 1},
		{"main@{2026-12-01T10:59:59Z}", 1},
		{"main@{2026-12-01T11:29:00+00:00}", 2}, // 4 (11:30) and 3 (12:00) are later
		{"main@{2026-12-01T11:30:00Z}", 4},      // 4 is nearer the head than 3
		{"main@{2026-12-01T12:15:00Z}", 4},
		{"{2026-12-01T13:00:00Z}", 4},
		{"main@{2026-12-02}", 4},
		{"main@{2026-12-01T11:00:00Z}~1", 1},
	} {
		got, err := count("timed@" + tc.rev)
		if err != nil || got != tc.want {
			t.Errorf("timed@%s: %d documents (%v), want %d", tc.rev, got, err, tc.want)
		}
	}
	for _, rev := range []string{"main@{2026-11-30T00:00:00Z}", "main@{yesterday}"} {
		if _, err := count("timed@" + rev); !isCode(err, 20001) {
			t.Errorf("timed@%s: %v, want RevisionNotFound", rev, err)
		}
	}
	diff := mustRun(t, db, bson.D{{Key: "dumboDiff", Value: 1}, {Key: "from", Value: "main@{2026-12-01T10:30:00Z}"}, {Key: "to", Value: "@{2026-12-01T11:00:00Z}"}})
	cols, _ := diff["collections"].(bson.A)
	if len(cols) != 1 || !strings.Contains(fmt.Sprint(cols[0]), `"added":[{"_id":{"$numberInt":"2"}}],"removed":[],"modified":[]`) {
		t.Errorf("dumboDiff between two times: %v, want commit 2's insert alone", cols)
	}
	_, err := c.Database("timed@main@{2026-12-02}").Collection("c").InsertOne(ctx, bson.M{"_id": 9})
	if !isCode(err, 20000) {
		t.Errorf("write to a revision by time: %v, want ReadOnlyRevision", err)
	}
}
