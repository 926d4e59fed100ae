package storage

import (
	"fmt"
	"runtime"
	"testing"
)

// TestEditSizeMatchesTheHeap holds the budget's accounting to the heap
// the edits really take: 100,000 small documents set as Tx.put sets them
// (keyAndValue, setEdit, ascending _ids), the heap's growth against what
// editSize counted. An undercount lets the server pass --cacheSizeMB
// without checkpointing; a large overcount checkpoints too often. It
// works on a collection alone, so that no background goroutine of an
// engine moves the heap while it measures.
func TestEditSizeMatchesTheHeap(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector multiplies memory")
	}
	heap := func() int64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return int64(ms.HeapAlloc)
	}
	const n = 100_000
	c := &collection{edits: newEdits()}
	pad := "padding to a document of about eighty bytes......"
	docs := make([][]byte, n)
	for i := range docs {
		docs[i] = doc(int32(i), fmt.Sprint(pad, i))
	}
	before := heap()
	for i, d := range docs {
		key, value := keyAndValue(encodeID(idValue(int32(i))), d)
		c.setEdit(&edit{key: key, value: value}, false)
	}
	grown := heap() - before
	runtime.KeepAlive(docs)
	ratio := float64(c.editBytes) / float64(grown)
	t.Logf("heap grew %d bytes (%d a document); the edits count %d (%.2f x)", grown, grown/n, c.editBytes, ratio)
	if ratio < 0.95 || ratio > 1.3 {
		t.Fatalf("the edits count %.2f x the heap they take, want 0.95-1.3", ratio)
	}
	runtime.KeepAlive(c)
}
