package storage

import (
	"encoding/binary"
	"math/rand"
	"testing"
)

func benchEdits(n int) (*edits, [][]byte) {
	ed := newEdits()
	keys := make([][]byte, n)
	for i := range keys {
		k := make([]byte, 10)
		k[0] = 0x10
		binary.BigEndian.PutUint64(k[1:], uint64(i)*7919)
		keys[i] = k
		ed.ReplaceOrInsert(&edit{key: k, value: make([]byte, 60)})
	}
	rand.New(rand.NewSource(1)).Shuffle(n, func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	return ed, keys
}

func BenchmarkEditsGet(b *testing.B) {
	ed, keys := benchEdits(100_000)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, ok := ed.Get(&edit{key: keys[i%len(keys)]}); !ok {
			b.Fatal("missing")
		}
	}
}

func BenchmarkEditsAscend(b *testing.B) {
	ed, _ := benchEdits(100_000)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		k := 0
		ed.Ascend(func(e *edit) bool { k += len(e.key); return true })
	}
}

func BenchmarkEditsMapGet(b *testing.B) {
	_, keys := benchEdits(100_000)
	m := make(map[string]*edit, len(keys))
	for _, k := range keys {
		m[string(k)] = &edit{key: k}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, ok := m[string(keys[i%len(keys)])]; !ok {
			b.Fatal("missing")
		}
	}
}
