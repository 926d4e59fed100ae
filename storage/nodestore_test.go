package storage

import (
	"context"
	"errors"
	"fmt"
	"github.com/dumbodb/dumbodb/storage/doctree"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/dolthub/dolt/go/store/chunks"
	"github.com/dolthub/dolt/go/store/hash"
	"github.com/dolthub/dolt/go/store/prolly"
	"github.com/dolthub/dolt/go/store/val"
)

// countingStore counts the chunks read from a chunk store.
type countingStore struct {
	chunks.ChunkStore
	reads atomic.Int64
}

func (s *countingStore) Get(ctx context.Context, h hash.Hash) (chunks.Chunk, error) {
	s.reads.Add(1)
	return s.ChunkStore.Get(ctx, h)
}

func (s *countingStore) GetMany(ctx context.Context, hs hash.HashSet, found func(context.Context, *chunks.Chunk)) error {
	s.reads.Add(int64(len(hs)))
	return s.ChunkStore.GetMany(ctx, hs, found)
}

func newTestNodeStore(t *testing.T, cs chunks.ChunkStore, cache *nodeCache) *nodeStore {
	t.Helper()
	ns, err := newNodeStore(cs, cache)
	if err != nil {
		t.Fatal(err)
	}
	return ns
}

func memoryChunkStore() *countingStore {
	return &countingStore{ChunkStore: chunks.NewMemoryStoreFactory().CreateStore(ctx, "test")}
}

// testMap writes a map of n keys whose values are valueOf(i).
func testMap(t *testing.T, ns *nodeStore, n int, valueOf func(i int) string) prolly.Map {
	t.Helper()
	tuples := make([]val.Tuple, 0, 2*n)
	for i := range n {
		k, err := doctree.KeyTuple(ns, fmt.Appendf(nil, "k%06d", i))
		if err != nil {
			t.Fatal(err)
		}
		v, err := valueTuple(ctx, ns, []byte(valueOf(i)))
		if err != nil {
			t.Fatal(err)
		}
		tuples = append(tuples, k, v)
	}
	m, err := prolly.NewMapFromTuples(ctx, ns, keyDesc, valDesc, tuples...)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// addressMap writes a map of names to addresses (a root's shape).
func addressMap(t *testing.T, ns *nodeStore, entries map[string]hash.Hash) hash.Hash {
	t.Helper()
	am, err := prolly.NewEmptyAddressMap(ns)
	if err != nil {
		t.Fatal(err)
	}
	ed := am.Editor()
	for name, addr := range entries {
		if err := ed.Add(ctx, name, addr); err != nil {
			t.Fatal(err)
		}
	}
	if am, err = ed.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	return am.HashOf()
}

// treeNodes reads every node reachable from root, nested trees included,
// which caches them all.
func treeNodes(t *testing.T, ns *nodeStore, root hash.Hash) hash.HashSet {
	t.Helper()
	seen := hash.NewHashSet()
	for stack := []hash.Hash{root}; len(stack) > 0; {
		addr := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen.Has(addr) {
			continue
		}
		seen.Insert(addr)
		nd, err := ns.Read(ctx, addr)
		if err != nil {
			t.Fatal(err)
		}
		stack = append(stack, nodeChildren(ctx, nd)...)
	}
	return seen
}

func cached(ns *nodeStore, addr hash.Hash) bool {
	_, ok := ns.cache.peek(ns.key(addr))
	return ok
}

func TestNodeStoreReadsFromItsCache(t *testing.T) {
	cs := memoryChunkStore()
	cache := newNodeCache(defaultNodeCacheBytes)
	writer := newTestNodeStore(t, cs, cache)
	m := testMap(t, writer, 3000, func(i int) string { return strings.Repeat("v", i%50) })
	if cache.Bytes() == 0 || cs.reads.Load() != 0 {
		t.Fatalf("after writing: %d bytes cached, %d chunks read; want the written nodes cached and nothing read", cache.Bytes(), cs.reads.Load())
	}
	root := m.HashOf()
	if _, err := writer.Read(ctx, root); err != nil || cs.reads.Load() != 0 {
		t.Fatalf("reading a written node: %v, %d chunks read; want it from the cache", err, cs.reads.Load())
	}

	// Another store over the same chunks (another database) caches apart.
	reader := newTestNodeStore(t, cs, cache)
	nd, err := reader.Read(ctx, root)
	if err != nil || cs.reads.Load() != 1 {
		t.Fatalf("first read by another store: %v, %d chunks read; want 1", err, cs.reads.Load())
	}
	if _, err := reader.Read(ctx, root); err != nil || cs.reads.Load() != 1 {
		t.Fatalf("second read: %v, %d chunks read; want it from the cache", err, cs.reads.Load())
	}
	children := hash.HashSlice(nodeChildren(ctx, nd))
	if len(children) < 2 {
		t.Fatalf("root has %d children; the test wants a taller tree", len(children))
	}
	nodes, err := reader.ReadMany(ctx, append(children, children[0]))
	if err != nil || len(nodes) != len(children)+1 || nodes[len(children)] != nodes[0] {
		t.Fatalf("ReadMany: %v, %d nodes for %d addresses", err, len(nodes), len(children)+1)
	}
	for i, nd := range nodes[:len(children)] {
		if nd.HashOf() != children[i] {
			t.Fatalf("ReadMany's node %d is %s, want %s", i, nd.HashOf(), children[i])
		}
	}
	read := cs.reads.Load()
	if read != 1+int64(len(children)) {
		t.Fatalf("ReadMany read %d chunks for %d uncached children", read-1, len(children))
	}
	if _, err := reader.ReadMany(ctx, children); err != nil || cs.reads.Load() != read {
		t.Fatalf("second ReadMany: %v, %d more chunks read; want none", err, cs.reads.Load()-read)
	}

	// GC purges one store's nodes, not the other's.
	reader.PurgeCaches()
	if _, err := reader.Read(ctx, root); err != nil || cs.reads.Load() != read+1 {
		t.Fatalf("read after purge: %v, %d chunks read; want 1", err, cs.reads.Load()-read)
	}
	if _, err := writer.Read(ctx, root); err != nil || cs.reads.Load() != read+1 {
		t.Fatalf("the other store's read after the purge: %v; want it still cached", err)
	}

	var missing hash.Hash
	missing[0] = 1
	if _, err := reader.ReadMany(ctx, hash.HashSlice{children[0], missing}); !errors.Is(err, errNodeMissing) {
		t.Fatalf("ReadMany of a missing node: %v, want errNodeMissing", err)
	}
	if _, err := reader.Read(ctx, missing); !errors.Is(err, errNodeMissing) {
		t.Fatalf("Read of a missing node: %v, want errNodeMissing", err)
	}
}

func TestNodeStoreWritesAndReadsBytes(t *testing.T) {
	ns := newTestNodeStore(t, memoryChunkStore(), newNodeCache(defaultNodeCacheBytes))
	for _, n := range []int{1, 4000, 50_000} {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(i * 7)
		}
		addr, err := ns.WriteBytes(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		ns.PurgeCaches() // read it back from the chunk store
		got, err := ns.ReadBytes(ctx, addr)
		if err != nil || string(got) != string(b) {
			t.Fatalf("%d bytes read back as %d (%v)", n, len(got), err)
		}
	}
}

func TestNodeCacheStaysWithinItsBound(t *testing.T) {
	const limit = 64 * 16 << 10
	cache := newNodeCache(limit)
	ns := newTestNodeStore(t, memoryChunkStore(), cache)
	m := testMap(t, ns, 40_000, func(i int) string { return fmt.Sprint("value ", i) })
	treeNodes(t, ns, m.HashOf())
	var sum int64
	for i := range cache.shards {
		s := &cache.shards[i]
		s.mu.Lock()
		n := 0
		for e := s.lru.next; e != &s.lru; e = e.next {
			sum += e.size
			n++
		}
		if n != len(s.entries) {
			t.Errorf("shard %d: %d entries listed, %d in its map", i, n, len(s.entries))
		}
		s.mu.Unlock()
	}
	if sum != cache.Bytes() || sum == 0 || sum > limit {
		t.Fatalf("cache holds %d bytes and counts %d; want them equal, above 0 and within %d", sum, cache.Bytes(), limit)
	}
}

// forgetFixture writes two roots (as checkpoints do) and caches both
// trees whole.
type forgetFixture struct {
	ns       *nodeStore
	old, new hash.HashSet // every node of each tree
}

func newForgetFixture(t *testing.T, ns *nodeStore, oldRoot, newRoot hash.Hash) forgetFixture {
	return forgetFixture{ns: ns, old: treeNodes(t, ns, oldRoot), new: treeNodes(t, ns, newRoot)}
}

// check asserts that the new tree is cached whole and the old one only
// where the new holds its nodes.
func (f forgetFixture) check(t *testing.T) {
	t.Helper()
	for addr := range f.new {
		if !cached(f.ns, addr) {
			t.Errorf("node %s of the new tree was dropped", addr)
		}
	}
	replaced := 0
	for addr := range f.old {
		if !f.new.Has(addr) {
			replaced++
			if cached(f.ns, addr) {
				t.Errorf("node %s of the old tree only is still cached", addr)
			}
		}
	}
	if replaced == 0 {
		t.Fatal("the trees share every node: nothing to test")
	}
}

func TestForgetReplacedDropsOnlyTheOldVersions(t *testing.T) {
	ns := newTestNodeStore(t, memoryChunkStore(), newNodeCache(defaultNodeCacheBytes))
	// Documents, some out of line (blobs), and an index-like map that
	// does not change: nested trees both roots hold.
	value := func(i int) string {
		if i%500 == 0 {
			return strings.Repeat(fmt.Sprint(i), 3000)
		}
		return fmt.Sprint("doc ", i)
	}
	docs := testMap(t, ns, 5000, value)
	other := testMap(t, ns, 2000, func(i int) string { return "x" })
	mut := docs.Mutate()
	for _, i := range []int{0, 17, 2500, 2501, 4999} { // a blob among them
		k, _ := doctree.KeyTuple(ns, fmt.Appendf(nil, "k%06d", i))
		v, _ := valueTuple(ctx, ns, []byte(value(i)+" changed"))
		if err := mut.Put(ctx, k, v); err != nil {
			t.Fatal(err)
		}
	}
	changed, err := mut.Map(ctx)
	if err != nil {
		t.Fatal(err)
	}
	oldRoot := addressMap(t, ns, map[string]hash.Hash{"data/c": docs.HashOf(), "index/c": other.HashOf()})
	newRoot := addressMap(t, ns, map[string]hash.Hash{"data/c": changed.HashOf(), "index/c": other.HashOf()})
	f := newForgetFixture(t, ns, oldRoot, newRoot)
	before := ns.cache.Bytes()
	ns.forgetReplaced(ctx, oldRoot, newRoot)
	f.check(t)
	if ns.cache.Bytes() >= before {
		t.Fatalf("cache holds %d bytes after forgetting, %d before", ns.cache.Bytes(), before)
	}
}

// A subtree both roots hold, deeper in the new one than the old side's
// one level of look-ahead: the old side walks into it and must keep it.
func TestForgetReplacedKeepsSharedTreesAtAnyDepth(t *testing.T) {
	ns := newTestNodeStore(t, memoryChunkStore(), newNodeCache(defaultNodeCacheBytes))
	shared := testMap(t, ns, 3000, func(i int) string { return fmt.Sprint(i) }).HashOf()
	oldRoot := addressMap(t, ns, map[string]hash.Hash{"a": shared})
	deep := shared
	for _, name := range []string{"d", "c", "b"} {
		deep = addressMap(t, ns, map[string]hash.Hash{name: deep})
	}
	f := newForgetFixture(t, ns, oldRoot, deep)
	ns.forgetReplaced(ctx, oldRoot, deep)
	f.check(t)
	// And the other way round: the new tree is the old one's subtree.
	f = newForgetFixture(t, ns, deep, shared)
	ns.forgetReplaced(ctx, deep, shared)
	f.check(t)
}

// The cache counts a node as its bytes plus nodeEntryOverhead. The bytes
// of a node read from disk are its own allocation; the rest is measured
// here on nodes read from a memory store, whose bytes it shares.
func TestNodeCacheCountsTheHeap(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes allocation sizes")
	}
	cs := memoryChunkStore()
	writer := newTestNodeStore(t, cs, newNodeCache(defaultNodeCacheBytes))
	addrs := make([]hash.Hash, 20_000) // as many one-entry maps, one node each
	for i := range addrs {
		addrs[i] = testMap(t, writer, 1, func(int) string { return fmt.Sprint(i) }).HashOf()
	}
	reader := newTestNodeStore(t, cs, newNodeCache(defaultNodeCacheBytes))
	var msgBytes int64
	before := heapAlloc()
	for _, addr := range addrs {
		nd, err := reader.Read(ctx, addr)
		if err != nil {
			t.Fatal(err)
		}
		msgBytes += int64(nd.Size())
	}
	after := heapAlloc()
	runtime.KeepAlive(reader)
	perNode := float64(after-before) / float64(len(addrs))
	counted := float64(reader.cache.Bytes()-msgBytes) / float64(len(addrs))
	t.Logf("%d nodes: %.0f bytes of heap each beside their messages; %.0f counted", len(addrs), perNode, counted)
	if perNode > counted*1.3 || perNode < counted*0.7 {
		t.Fatalf("a cached node takes %.0f bytes of heap beside its message; the cache counts %.0f", perNode, counted)
	}
}

func heapAlloc() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// A database's nodes leave the engine's cache when it is dropped or
// closed, and no other database's with them.
func TestClosingADatabaseEmptiesItsNodeCache(t *testing.T) {
	e := openEngine(t, t.TempDir(), Options{})
	defer e.Close()
	fill := func(name string) {
		d, err := e.Database(ctx, name, true)
		if err != nil {
			t.Fatal(err)
		}
		// Enough documents for a map of two levels: a checkpoint caches
		// the inner nodes it writes, and reads bring the data leaves in.
		mustWrite(t, d, func(tx *Tx) error {
			if _, err := tx.EnsureCollection(ctx, "c"); err != nil {
				return err
			}
			for i := range 2000 {
				if err := tx.Insert(ctx, "c", doc(int32(i), name)); err != nil {
					return err
				}
			}
			return nil
		})
		if err := d.Checkpoint(ctx); err != nil {
			t.Fatal(err)
		}
		snap := mainSnapshot(t, d)
		for i := range 2000 {
			if _, found, err := snap.Get(ctx, "c", idValue(int32(i))); err != nil || !found {
				t.Fatalf("read %d of %s: %v %v", i, name, found, err)
			}
		}
	}
	fill("a")
	onlyA := e.DatabaseStats().NodeCacheBytes
	fill("b")
	if both := e.DatabaseStats().NodeCacheBytes; both <= onlyA || onlyA == 0 {
		t.Fatalf("node cache: %d bytes for a, %d with b; want b to add some", onlyA, both)
	}
	if err := e.DropDatabase("b"); err != nil {
		t.Fatal(err)
	}
	if got := e.DatabaseStats().NodeCacheBytes; got != onlyA {
		t.Fatalf("after dropping b the node cache holds %d bytes; want a's %d", got, onlyA)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if got := e.DatabaseStats().NodeCacheBytes; got != 0 {
		t.Fatalf("after closing the engine the node cache holds %d bytes", got)
	}
}

// TestCheckpointsLeaveDataLeavesUncached: a checkpoint leaves in the node
// cache the nodes it wrote that hold addresses (inner nodes, the root's
// map of collections), which every read walks, and not its data leaves,
// which only reads of their keys need: a bulk load does not fill the
// cache (and the heap the collector scans) with leaves nobody reads.
// Reading the documents brings their leaves in.
func TestCheckpointsLeaveDataLeavesUncached(t *testing.T) {
	e := openEngine(t, t.TempDir(), Options{})
	defer e.Close()
	d, err := e.Database(ctx, "db", true)
	if err != nil {
		t.Fatal(err)
	}
	const n = 20_000
	mustWrite(t, d, func(tx *Tx) error {
		if _, err := tx.EnsureCollection(ctx, "c"); err != nil {
			return err
		}
		for i := range n {
			if err := tx.Insert(ctx, "c", doc(int32(i), "some padding to fill the leaves")); err != nil {
				return err
			}
		}
		return nil
	})
	if err := d.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	written := e.DatabaseStats().NodeCacheBytes
	snap := mainSnapshot(t, d)
	for i := range n {
		if _, found, err := snap.Get(ctx, "c", idValue(int32(i))); err != nil || !found {
			t.Fatalf("read %d: %v %v", i, found, err)
		}
	}
	read := e.DatabaseStats().NodeCacheBytes
	t.Logf("node cache: %d bytes after the checkpoint, %d after reading every document", written, read)
	if written == 0 || written*10 > read {
		t.Fatalf("node cache: %d bytes after the checkpoint, %d after reading: want the nodes holding addresses, a small part", written, read)
	}
}
