package storage

import (
	"encoding/binary"
	"fmt"
	"maps"
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

// BenchmarkEditsCloneInsert is what a single-document write does to an
// edit set of 100,000: clone the published set, set one edit (ascending
// keys as a collection's ObjectIds; random as an index's keys).
func BenchmarkEditsCloneInsert(b *testing.B) {
	for _, order := range []string{"ascending", "random"} {
		b.Run(order, func(b *testing.B) {
			ed, _ := benchEdits(100_000)
			rng := rand.New(rand.NewSource(2))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				n := uint64(100_000 + i)
				if order == "random" {
					n = rng.Uint64() >> 20
				}
				k := make([]byte, 10)
				k[0] = 0x10
				binary.BigEndian.PutUint64(k[1:], n*7919)
				ed = ed.Clone()
				ed.ReplaceOrInsert(&edit{key: k, value: k})
			}
		})
	}
}

// TestEditsAgainstAModel runs random sets, clones and reads on edit sets
// against a map per version: every read of every version kept, older
// ones included, agrees with its model after later versions changed
// (recent's and settled's copy-on-write, settle in the middle of it).
func TestEditsAgainstAModel(t *testing.T) {
	rng := rand.New(rand.NewSource(11))
	type version struct {
		ed    *edits
		model map[string]string
	}
	key := func() []byte { return []byte{0x10, byte(rng.Intn(40)), byte(rng.Intn(40))} }
	check := func(v version) {
		var keys []string
		for k := range v.model {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var got []string
		v.ed.Ascend(func(e *edit) bool {
			if string(e.value) != v.model[string(e.key)] {
				t.Fatalf("Ascend: %x has %q, want %q", e.key, e.value, v.model[string(e.key)])
			}
			got = append(got, string(e.key))
			return true
		})
		if !slices.Equal(got, keys) {
			t.Fatalf("Ascend: %d keys, want %d", len(got), len(keys))
		}
		from := key()
		want := keys[sort.SearchStrings(keys, string(from)):]
		got, limit := got[:0], rng.Intn(len(want)+2)
		v.ed.AscendGreaterOrEqual(&edit{key: from}, func(e *edit) bool {
			got = append(got, string(e.key))
			return len(got) < limit
		})
		if n := min(limit, len(want)); len(want) > 0 && limit > 0 && !slices.Equal(got, want[:n]) {
			t.Fatalf("AscendGreaterOrEqual(%x) up to %d: %x, want %x", from, limit, got, want[:n])
		}
		for range 20 {
			k := key()
			e, ok := v.ed.Get(&edit{key: k})
			w, wok := v.model[string(k)]
			if ok != wok || (ok && string(e.value) != w) {
				t.Fatalf("Get(%x) = %v %v, want %q %v", k, e, ok, w, wok)
			}
		}
	}
	cur := version{ed: newEdits(), model: map[string]string{}}
	var kept []version
	for step := 0; step < 4000; step++ {
		if step%97 == 0 { // publish: keep this version, go on with a clone
			kept = append(kept, cur)
			cur = version{ed: cur.ed.Clone(), model: maps.Clone(cur.model)}
		}
		k, val := key(), fmt.Sprint(step)
		old, replaced := cur.ed.ReplaceOrInsert(&edit{key: k, value: []byte(val)})
		if w, ok := cur.model[string(k)]; ok != replaced || (ok && string(old.value) != w) {
			t.Fatalf("ReplaceOrInsert(%x) replaced %v %v, want %q %v", k, old, replaced, w, ok)
		}
		cur.model[string(k)] = val
		if step%13 == 0 {
			check(cur)
			check(kept[rng.Intn(len(kept))])
		}
	}
	for _, v := range append(kept, cur) {
		check(v)
	}
}

// TestFrozenLayersMergeAsOneSet: a set frozen below fresh trees (twice
// over, as after a failed fold) reads as one set: lookups and iterations
// from any key see each key's newest edit once, in order; replacing a
// frozen edit does not report it replaced (it is still held).
func TestFrozenLayersMergeAsOneSet(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	want := map[string]string{}
	ed := newEdits()
	key := func() []byte { return []byte{0x10, byte(rng.Intn(40)), byte(rng.Intn(8))} }
	for layer := range 3 {
		if layer > 0 {
			ed = frozenOver(ed)
		}
		replacedInLayer := map[string]bool{}
		for i := range 300 {
			k := key()
			v := fmt.Sprintf("%d-%d", layer, i)
			old, replaced := ed.ReplaceOrInsert(&edit{key: k, value: []byte(v)})
			if replaced != replacedInLayer[string(k)] {
				t.Fatalf("layer %d: replacing %x reported %v (%v)", layer, k, replaced, old)
			}
			replacedInLayer[string(k)] = true
			want[string(k)] = v
		}
	}
	for k, v := range want {
		if e, ok := ed.Get(&edit{key: []byte(k)}); !ok || string(e.value) != v {
			t.Fatalf("get %x: %v %v, want %q", k, ok, e, v)
		}
	}
	keys := slices.Sorted(maps.Keys(want))
	for _, from := range [][]byte{nil, {0x10, 7}, {0x10, 39, 7}, {0x11}} {
		var got []string
		visit := func(e *edit) bool {
			if string(e.value) != want[string(e.key)] {
				t.Fatalf("from %x: %x = %q, want %q", from, e.key, e.value, want[string(e.key)])
			}
			got = append(got, string(e.key))
			return true
		}
		if from == nil {
			ed.Ascend(visit)
		} else {
			ed.AscendGreaterOrEqual(&edit{key: from}, visit)
		}
		i := sort.SearchStrings(keys, string(from))
		if !slices.Equal(got, keys[i:]) {
			t.Fatalf("from %x: %d keys, want %d", from, len(got), len(keys)-i)
		}
		stopped := 0
		ed.Ascend(func(*edit) bool { stopped++; return stopped < 5 })
		if stopped != 5 {
			t.Fatalf("an iteration told to stop went on to %d edits", stopped)
		}
	}
	if _, ok := ed.Get(&edit{key: []byte{0x20}}); ok {
		t.Fatal("found a key never set")
	}
}

// TestEditsTopBoundsEveryLayer: a set's top (the greatest key it held)
// lets look-ups and inserts above it skip the trees' searches. Against a
// model, through ascending runs of keys that share their 16 inline bytes
// (so that the order falls to the whole keys), rewrites of older keys,
// clones, frozen layers and a set that drops its frozen layer: every
// look-up finds what the model holds and every insert reports a
// replacement exactly when the upper trees held the key.
func TestEditsTopBoundsEveryLayer(t *testing.T) {
	rng := rand.New(rand.NewSource(19))
	next := 0
	key := func(n int) []byte { // 16 shared bytes, then n
		k := append(make([]byte, 16), 0, 0, 0)
		k[0] = 0x10
		return binary.BigEndian.AppendUint32(k[:16], uint32(n))
	}
	ed, model := newEdits(), map[string]string{}
	upper := map[string]bool{} // keys in the upper trees, not only in a frozen layer
	for step := range 3000 {
		n := next
		if rng.Intn(4) == 0 && next > 0 {
			n = rng.Intn(next) // an older key
		} else {
			next++
		}
		k, v := key(n), fmt.Sprint(step)
		if _, replaced := ed.ReplaceOrInsert(&edit{key: k, value: []byte(v)}); replaced != upper[string(k)] {
			t.Fatalf("step %d: inserting key %d reported replaced %v, want %v", step, n, replaced, upper[string(k)])
		}
		model[string(k)], upper[string(k)] = v, true
		switch rng.Intn(200) {
		case 0:
			ed, upper = frozenOver(ed), map[string]bool{}
		case 1:
			if frozenOf(ed) != nil { // the fold's swap: the frozen keys are in the base now
				ed = withoutFrozen(ed)
				kept := map[string]string{}
				for k := range upper {
					kept[k] = model[k]
				}
				model = kept
			}
		case 2:
			ed = ed.Clone()
		}
		for _, probe := range []int{n, rng.Intn(next + 1), next, next + 1} {
			k := key(probe)
			e, ok := ed.getKey(k)
			want, wantOK := model[string(k)]
			if ok != wantOK || (ok && string(e.value) != want) {
				t.Fatalf("step %d: key %d found %v (%v), want %q %v", step, probe, ok, e, want, wantOK)
			}
		}
	}
}

// TestLookupAboveTheEditsDoesNotAllocate: looking up a key above every
// edit (an insert of an ascending _id) searches no tree and allocates
// nothing.
func TestLookupAboveTheEditsDoesNotAllocate(t *testing.T) {
	ed, _ := benchEdits(1000)
	above := []byte{0x20}
	allocs := testing.AllocsPerRun(100, func() {
		if _, ok := ed.getKey(above); ok {
			t.Fatal("found a key above the set")
		}
	})
	if allocs != 0 {
		t.Fatalf("a look-up above the set: %.1f allocations", allocs)
	}
}

// BenchmarkEditsInsertAscending is a write's work in a collection's edits
// for an insert of an ascending _id among 100,000 edits: the look-up for
// a duplicate, then the insert.
func BenchmarkEditsInsertAscending(b *testing.B) {
	ed, _ := benchEdits(100_000)
	keys := make([][]byte, b.N)
	for i := range keys {
		k := make([]byte, 10)
		k[0] = 0x10
		binary.BigEndian.PutUint64(k[1:], uint64(100_000+i)*7919)
		keys[i] = k
	}
	b.ReportAllocs()
	b.ResetTimer()
	for _, k := range keys {
		if _, ok := ed.getKey(k); ok {
			b.Fatal("found a new key")
		}
		ed.ReplaceOrInsert(&edit{key: k, value: k})
	}
}
