package storage

import (
	"os"
	"path/filepath"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// BenchmarkDocumentHistory measures a document's history (Log by _id) and
// its blame in a database of 10,000 commits, 50 of which touched that
// document (every 200th); each commit changes one document.
func BenchmarkDocumentHistory(b *testing.B) {
	e := openEngine(b, b.TempDir(), Options{})
	defer e.Close()
	d, _ := e.Database(ctx, "db", true)
	for i := range 10000 {
		id := int32(1 + i%199) // documents other than 0
		if i%200 == 0 {
			id = 0
		}
		put(b, d, "main", docKV(id, "n", i, "s", "x"))
		if _, err := d.Commit(ctx, "main", CommitOptions{Message: "c"}); err != nil {
			b.Fatal(err)
		}
	}
	main := Revision{Branch: "main"}
	// cold: the history index built from nothing, as after its file is
	// lost; then log and blame with the index built.
	b.Run("log-cold", func(b *testing.B) {
		for range b.N {
			ix := &d.historyIdx
			ix.mu.Lock()
			ix.loaded, ix.byAddr, ix.pending = false, nil, nil
			ix.mu.Unlock()
			os.Remove(filepath.Join(d.dir, historyIndexFile))
			if _, err := d.Log(ctx, LogOptions{From: main, Collections: []string{"c"}, IDs: []bsoncore.Value{idValue(0)}}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("log", func(b *testing.B) {
		for range b.N {
			log, err := d.Log(ctx, LogOptions{From: main, Collections: []string{"c"}, IDs: []bsoncore.Value{idValue(0)}})
			if err != nil || len(log) != 50 {
				b.Fatalf("%d commits, %v", len(log), err)
			}
		}
	})
	b.Run("blame", func(b *testing.B) {
		for range b.N {
			if _, lines, err := d.Blame(ctx, main, "c", idValue(0)); err != nil || len(lines) != 3 {
				b.Fatalf("%d lines, %v", len(lines), err)
			}
		}
	})
}
