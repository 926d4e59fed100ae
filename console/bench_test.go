package console_test

import (
	"net/http"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// BenchmarkLogFirstPage times the first page of the commit graph of a
// database with 10,000 commits, whole, and filtered by a collection that
// every other commit changed and by one document of it, which only one
// commit did: a filtered page also finds, for each commit listed, the
// next one its parent leads to (docs/console.md#figures).
func BenchmarkLogFirstPage(b *testing.B) {
	f := startConsole(b, false)
	for i := range 10_000 {
		f.insert("hist", []string{"events", "other"}[i%2], bson.D{{Key: "_id", Value: i}})
		f.commit("hist", "event")
	}
	br := f.browser()
	for _, c := range []struct {
		name, query string
		rows        int
	}{
		{"all", "", 50},
		{"collection", "?collection=events", 50},
		{"document", "?collection=events&_id=4", 1},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if status, body := br.get("db/hist/log" + c.query); status != http.StatusOK || strings.Count(body, "<svg") != c.rows {
					b.Fatalf("status %d, %d commits drawn", status, strings.Count(body, "<svg"))
				}
			}
		})
	}
}

// BenchmarkDiffPage times the diff page of two commits that differ in
// 10 documents of a collection of 1,000 and of 100,000: the cost should
// be the 10 documents' (docs/console.md#figures).
func BenchmarkDiffPage(b *testing.B) {
	for _, n := range []int{1_000, 100_000} {
		b.Run(map[int]string{1_000: "1k", 100_000: "100k"}[n], func(b *testing.B) {
			f := startConsole(b, false)
			batch := make([]any, 0, 1000)
			for i := range n {
				batch = append(batch, bson.D{{Key: "_id", Value: i}, {Key: "name", Value: "item"}, {Key: "qty", Value: i % 97}})
				if len(batch) == cap(batch) {
					f.insert("big", "items", batch...)
					batch = batch[:0]
				}
			}
			from := f.commit("big", "load")
			for i := range 10 {
				f.run("big", bson.D{{Key: "update", Value: "items"}, {Key: "updates", Value: bson.A{bson.D{
					{Key: "q", Value: bson.D{{Key: "_id", Value: i * (n / 10)}}},
					{Key: "u", Value: bson.D{{Key: "$set", Value: bson.D{{Key: "qty", Value: -1}}}}}}}}})
			}
			to := f.commit("big", "ten changes")
			br := f.browser()
			for b.Loop() {
				if status, body := br.get("db/big/diff?from=" + from + "&to=" + to); status != http.StatusOK || !strings.Contains(body, "10 modified") {
					b.Fatalf("status %d\n%s", status, body)
				}
			}
		})
	}
}
