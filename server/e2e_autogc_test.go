package server_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/dumbodb/dumbodb/storage"
)

// TestRewritesAreCollectedAutomatically: documents rewritten through the
// driver across many checkpoints leave replaced nodes behind, which the
// server collects on its own (serverStatus.storageEngine.autoGCs and
// autoGCFreedBytes); the documents read the same before and after.
func TestRewritesAreCollectedAutomatically(t *testing.T) {
	ts := startServerWith(t, storage.Options{CheckpointInterval: 50 * time.Millisecond, AutoGCMinBytes: 128 << 10})
	c := ts.client()
	coll := c.Database("test").Collection("rewritten")
	const n = 500
	pad := strings.Repeat("x", 200)
	want := map[int32]string{}
	for round := 0; round < 2000 && storageEngineStat(t, c, "autoGCs") == 0; round++ {
		docs := make([]any, 0, n/10)
		for i := range int32(n / 10) {
			id := (int32(round)*n/10 + i) % n
			want[id] = fmt.Sprint(round, pad)
			docs = append(docs, bson.D{{Key: "_id", Value: id}, {Key: "v", Value: want[id]}})
		}
		if _, err := coll.DeleteMany(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: idsOf(docs)}}}}); err != nil {
			t.Fatal(err)
		}
		if _, err := coll.InsertMany(ctx, docs); err != nil {
			t.Fatal(err)
		}
	}
	if gcs, freed := storageEngineStat(t, c, "autoGCs"), storageEngineStat(t, c, "autoGCFreedBytes"); gcs == 0 || freed <= 0 {
		t.Fatalf("after the rewrites, %d automatic GCs freed %d bytes", gcs, freed)
	}
	cur, err := coll.Find(ctx, bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	var got []struct {
		ID int32  `bson:"_id"`
		V  string `bson:"v"`
	}
	if err := cur.All(ctx, &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d documents, want %d", len(got), len(want))
	}
	for _, d := range got {
		if d.V != want[d.ID] {
			t.Fatalf("document %d: %.20q…, want %.20q…", d.ID, d.V, want[d.ID])
		}
	}
}

// idsOf are the _id values of docs.
func idsOf(docs []any) bson.A {
	out := make(bson.A, len(docs))
	for i, d := range docs {
		out[i] = d.(bson.D)[0].Value
	}
	return out
}
