package storage

import (
	"sync"
	"sync/atomic"

	"github.com/dolthub/dolt/go/store/hash"
	"github.com/dolthub/dolt/go/store/prolly/tree"
)

// nodeCache is the engine's cache of decoded prolly tree nodes, shared by
// the node stores of all its databases (nodestore.go) in place of Dolt's
// package-level cache. It is bounded in bytes, the least recently used
// node going first, and keyed by store as well as address, so that a
// database's GC or close drops its own nodes and no other's. Node stores
// also drop the nodes a new root replaced (nodeforget.go): without that, a
// workload whose data does not grow still fills the cache with the old
// versions of every node its checkpoints rewrite.
type nodeCache struct {
	shards [nodeCacheShards]cacheShard
	bytes  atomic.Int64  // the shards' bytes, summed
	stores atomic.Uint64 // the last store id handed out
}

const (
	// defaultNodeCacheBytes is the cache's bound: 256 MB, as Dolt's cache
	// it replaces (docs/design/resources.md, "Memory bounded by the
	// budget").
	defaultNodeCacheBytes = 256 << 20
	// nodeCacheShards spreads the lock over addresses, uniform by nature.
	nodeCacheShards = 64
	// nodeEntryOverhead is what a cached node costs beside its bytes: the
	// decoded node with its two item indexes and boxed hash, the entry
	// and its map slot, 264 bytes (TestNodeCacheCountsTheHeap), and the
	// rounding up of the bytes' own allocation to a size class.
	nodeEntryOverhead = 320
)

// cacheKey names a node of one store: two databases holding the same
// chunk cache it twice, so that either can purge its own.
type cacheKey struct {
	store uint64
	addr  hash.Hash
}

type cacheEntry struct {
	key        cacheKey
	node       *tree.Node
	size       int64
	prev, next *cacheEntry // in the shard's recency list
}

// cacheShard is one lock's share of the cache: its entries and their
// recency list, most recent first after the sentinel.
type cacheShard struct {
	mu      sync.Mutex
	entries map[cacheKey]*cacheEntry
	lru     cacheEntry // sentinel: lru.next is the most recent entry
	bytes   int64
	limit   int64
}

func newNodeCache(limit int64) *nodeCache {
	c := &nodeCache{}
	for i := range c.shards {
		s := &c.shards[i]
		s.entries = map[cacheKey]*cacheEntry{}
		s.lru.prev, s.lru.next = &s.lru, &s.lru
		s.limit = max(limit/nodeCacheShards, 1)
	}
	return c
}

// newStore returns an id no other store of this cache has.
func (c *nodeCache) newStore() uint64 { return c.stores.Add(1) }

func (c *nodeCache) shard(k cacheKey) *cacheShard {
	return &c.shards[int(k.addr[0])%nodeCacheShards]
}

// Bytes is what the cached nodes take, their overhead counted.
func (c *nodeCache) Bytes() int64 { return c.bytes.Load() }

// get returns a cached node and marks it the most recently used.
func (c *nodeCache) get(k cacheKey) (*tree.Node, bool) { return c.find(k, true) }

// peek returns a cached node without making it more recent: looking a node
// up to forget it is not a use.
func (c *nodeCache) peek(k cacheKey) (*tree.Node, bool) { return c.find(k, false) }

func (c *nodeCache) find(k cacheKey, use bool) (*tree.Node, bool) {
	s := c.shard(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.entries[k]
	if !ok {
		return nil, false
	}
	if use {
		s.unlink(e)
		s.pushFront(e)
	}
	return e.node, true
}

// insert caches nd (or marks the cached one used), then evicts the least
// recently used nodes past the shard's bound.
func (c *nodeCache) insert(k cacheKey, nd *tree.Node) {
	s := c.shard(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.entries[k]; ok {
		s.unlink(e)
		s.pushFront(e)
		return
	}
	e := &cacheEntry{key: k, node: nd, size: int64(nd.Size()) + nodeEntryOverhead}
	s.entries[k] = e
	s.pushFront(e)
	s.bytes += e.size
	c.bytes.Add(e.size)
	for s.bytes > s.limit && s.lru.prev != &s.lru {
		c.removeLocked(s, s.lru.prev)
	}
}

// remove drops a node if cached.
func (c *nodeCache) remove(k cacheKey) {
	s := c.shard(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.entries[k]; ok {
		c.removeLocked(s, e)
	}
}

// purgeStore drops every node of one store. It visits the whole cache, so
// it is for GC and closes, not for every write.
func (c *nodeCache) purgeStore(store uint64) {
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		for k, e := range s.entries {
			if k.store == store {
				c.removeLocked(s, e)
			}
		}
		s.mu.Unlock()
	}
}

func (c *nodeCache) removeLocked(s *cacheShard, e *cacheEntry) {
	s.unlink(e)
	delete(s.entries, e.key)
	s.bytes -= e.size
	c.bytes.Add(-e.size)
}

func (s *cacheShard) unlink(e *cacheEntry) {
	e.prev.next, e.next.prev = e.next, e.prev
	e.prev, e.next = nil, nil
}

func (s *cacheShard) pushFront(e *cacheEntry) {
	e.prev, e.next = &s.lru, s.lru.next
	s.lru.next.prev = e
	s.lru.next = e
}
