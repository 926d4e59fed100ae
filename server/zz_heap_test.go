package server_test

import (
	"os"
	"runtime"
	"runtime/pprof"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

func TestZZHeapInsertMany(t *testing.T) {
	if os.Getenv("ZZHEAP") == "" {
		t.Skip()
	}
	ts := startServer(t)
	coll := ts.client().Database("bench").Collection("c")
	docs := make([]any, 1000)
	id := 0
	for round := 0; round < 1200; round++ {
		for j := range docs {
			docs[j] = bson.D{{Key: "_id", Value: id}, {Key: "a", Value: id % 97}, {Key: "p", Value: "padding to one hundred bytes.............................."}}
			id++
		}
		if _, err := coll.InsertMany(ctx, docs); err != nil {
			t.Fatal(err)
		}
		if round%200 == 199 {
			var ms runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&ms)
			t.Logf("round %d: live heap %d MB", round+1, ms.HeapAlloc>>20)
		}
	}
	f, _ := os.Create("/tmp/heap.prof")
	runtime.GC()
	pprof.WriteHeapProfile(f)
	f.Close()
}
