package storage

import (
	"encoding/binary"
	"math/rand"
	"slices"
	"sort"
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

// TestEditsOrderAsBytes: the inline prefixes order keys as bytes.Compare
// does, for keys shorter than, as long as and sharing the 16 bytes,
// trailing zeros included.
func TestEditsOrderAsBytes(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	ed := newEdits()
	want := map[string]bool{}
	for range 5000 {
		k := make([]byte, rng.Intn(24))
		for i := range k {
			k[i] = byte(rng.Intn(3)) // few values: many shared prefixes and zeros
		}
		want[string(k)] = true
		ed.ReplaceOrInsert(&edit{key: k, value: []byte{1}})
	}
	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var got []string
	ed.Ascend(func(e *edit) bool { got = append(got, string(e.key)); return true })
	if !slices.Equal(got, keys) {
		t.Fatalf("%d edits in tree order differ from %d keys in byte order", len(got), len(keys))
	}
	for _, k := range keys {
		if e, ok := ed.Get(&edit{key: []byte(k)}); !ok || string(e.key) != k {
			t.Fatalf("Get(%x) = %v, %v", k, e, ok)
		}
	}
}

// BenchmarkEditsGet and BenchmarkEditsMapGet: a look-up among 100,000
// edits in the tree, and in a Go map for comparison (docs/design/geo.md).
func BenchmarkEditsGet(b *testing.B) {
	ed, keys := benchEdits(100_000)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, ok := ed.Get(&edit{key: keys[i%len(keys)]}); !ok {
			b.Fatal("missing")
		}
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
