package server_test

import (
	"context"
	"slices"
	"sync"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// foundIDs runs a find and lists the _ids it returns, in order.
func foundIDs(t *testing.T, coll *mongo.Collection, filter bson.D, opts ...options.Lister[options.FindOptions]) []int32 {
	t.Helper()
	cur, err := coll.Find(context.Background(), filter, opts...)
	if err != nil {
		t.Fatal(err)
	}
	var docs []struct {
		ID int32 `bson:"_id"`
	}
	if err := cur.All(context.Background(), &docs); err != nil {
		t.Fatal(err)
	}
	out := make([]int32, len(docs))
	for i, d := range docs {
		out[i] = d.ID
	}
	return out
}

// TestIndexRangeFetchesInBatches: an index range, whose documents the
// server fetches in batches, returns the documents a collection scan
// finds, in index order, for a past revision as for the branch, and
// while writers move documents in and out of the range.
func TestIndexRangeFetchesInBatches(t *testing.T) {
	ctx := context.Background()
	client := startServer(t).client()
	db := client.Database("fetch")
	coll := db.Collection("c")
	var docs []any
	for i := range int32(2000) {
		docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "k", Value: (i * 7919) % 500}, {Key: "tags", Value: bson.A{i % 3, i % 5}}})
	}
	if _, err := coll.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.Indexes().CreateMany(ctx, []mongo.IndexModel{{Keys: bson.D{{Key: "k", Value: 1}}}, {Keys: bson.D{{Key: "tags", Value: 1}}}}); err != nil {
		t.Fatal(err)
	}
	mustRun(t, db, bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "loaded"}})
	byScan := func(c *mongo.Collection, filter bson.D) []int32 {
		return foundIDs(t, c, filter, options.Find().SetHint(bson.D{{Key: "$natural", Value: 1}}))
	}
	ranged := bson.D{{Key: "k", Value: bson.D{{Key: "$gte", Value: 100}, {Key: "$lt", Value: 300}}}}
	sortedByK := func(ids []int32) []int32 { // index order: k, then _id
		out := slices.Clone(ids)
		slices.SortFunc(out, func(a, b int32) int {
			if ka, kb := (a*7919)%500, (b*7919)%500; ka != kb {
				return int(ka - kb)
			}
			return int(a - b)
		})
		return out
	}
	want := sortedByK(byScan(coll, ranged))
	if got := foundIDs(t, coll, ranged, options.Find().SetHint("k_1")); !slices.Equal(got, want) || len(want) != 800 {
		t.Fatalf("through the index %d documents, by a scan %d, or out of order", len(got), len(want))
	}
	// Documents fetched ahead count as examined only once taken: a
	// limit of 1 examined one key and one document, as on mongod.
	e := mustRun(t, db, bson.D{{Key: "explain", Value: bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: ranged},
		{Key: "hint", Value: "k_1"}, {Key: "limit", Value: 1}}}, {Key: "verbosity", Value: "executionStats"}})
	if keys, docs := num(get(e, "executionStats", "totalKeysExamined")), num(get(e, "executionStats", "totalDocsExamined")); keys != 1 || docs != 1 {
		t.Fatalf("limit 1 through the index examined %v keys and %v documents", keys, docs)
	}
	multikey := bson.D{{Key: "tags", Value: bson.D{{Key: "$in", Value: bson.A{1, 2}}}}}
	if got, want := foundIDs(t, coll, multikey, options.Find().SetHint("tags_1")), byScan(coll, multikey); len(got) != len(want) {
		t.Fatalf("multikey: %d documents through the index, %d by a scan", len(got), len(want))
	}

	// Writers move documents out of the range and back; every read sees
	// one state: distinct documents, in index order, all in the range.
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int32(w); ; i += 2 {
				select {
				case <-stop:
					return
				default:
				}
				id := (i * 31) % 2000
				k := []int32{(id * 7919) % 500, 1000}[i%2]
				coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: id}}, bson.D{{Key: "$set", Value: bson.D{{Key: "k", Value: k}}}})
			}
		}()
	}
	for range 30 {
		cur, err := coll.Find(ctx, ranged, options.Find().SetHint("k_1"))
		if err != nil {
			t.Fatal(err)
		}
		var got []struct {
			ID int32 `bson:"_id"`
			K  int32 `bson:"k"`
		}
		if err := cur.All(ctx, &got); err != nil {
			t.Fatal(err)
		}
		seen := map[int32]bool{}
		for i, d := range got {
			if d.K < 100 || d.K >= 300 || seen[d.ID] || (i > 0 && (got[i-1].K > d.K || got[i-1].K == d.K && got[i-1].ID > d.ID)) {
				t.Fatalf("document %d of the range read: %+v after %+v", i, d, got[max(i-1, 0)])
			}
			seen[d.ID] = true
		}
	}
	close(stop)
	wg.Wait()

	// The committed revision reads as it was committed.
	past := client.Database("fetch@main~0").Collection("c")
	if got := foundIDs(t, past, ranged, options.Find().SetHint("k_1")); !slices.Equal(got, want) {
		t.Fatalf("the committed revision through the index: %d documents, want %d", len(got), len(want))
	}
}
