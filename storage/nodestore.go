package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/dumbodb/dumbodb/interrupt"
	"sync"

	"github.com/dolthub/dolt/go/store/chunks"
	"github.com/dolthub/dolt/go/store/hash"
	"github.com/dolthub/dolt/go/store/pool"
	"github.com/dolthub/dolt/go/store/prolly/message"
	"github.com/dolthub/dolt/go/store/prolly/tree"
	"github.com/dolthub/dolt/go/store/types"
)

// nodeStore is a database's tree.NodeStore: it reads and writes prolly
// tree nodes in the database's chunk store and keeps the decoded nodes in
// the engine's nodeCache (nodecache.go) under its own store id, where
// Dolt's tree.NewNodeStore keeps them in one package-level cache that
// DumboDB can neither bound nor tell what a checkpoint replaced.
type nodeStore struct {
	cs    chunks.ChunkStore
	cache *nodeCache
	id    uint64
	nbf   *types.NomsBinFormat
	// refs is the root of the store's map of refs whose nodes the cache
	// may hold (nodeforget.go).
	refsMu sync.Mutex
	refs   hash.Hash
}

var _ tree.NodeStore = (*nodeStore)(nil)

// errNodeMissing: the chunk store has no chunk at a node's address.
var errNodeMissing = errors.New("tree node not in the chunk store")

// nodeBuffers is the buffer pool node serializers allocate from; Dolt's
// is a plain allocator, so one serves every store.
var nodeBuffers = pool.NewBuffPool()

// blobBuilders keeps blob builders (and their buffers) for reuse across
// stores: BlobBuilder points a builder at its store each time.
var blobBuilders sync.Pool

func newNodeStore(cs chunks.ChunkStore, cache *nodeCache) (*nodeStore, error) {
	nbf, err := types.GetFormatForVersionString(cs.Version())
	if err != nil {
		return nil, fmt.Errorf("chunk store format: %w", err)
	}
	return &nodeStore{cs: cs, cache: cache, id: cache.newStore(), nbf: nbf}, nil
}

func (ns *nodeStore) key(addr hash.Hash) cacheKey { return cacheKey{store: ns.id, addr: addr} }

// Read returns the node at addr, from the cache if there.
func (ns *nodeStore) Read(ctx context.Context, addr hash.Hash) (*tree.Node, error) {
	if nd, ok := ns.cache.get(ns.key(addr)); ok {
		return nd, nil
	}
	c, err := ns.cs.Get(ctx, addr)
	if err != nil {
		return nil, readErr(ctx, err)
	}
	nd, err := decodeNode(&c, addr)
	if err != nil {
		return nil, err
	}
	ns.cache.insert(ns.key(addr), nd)
	return nd, nil
}

// ReadMany returns the nodes at addrs, in their order, fetching the ones
// not cached in one batch.
func (ns *nodeStore) ReadMany(ctx context.Context, addrs hash.HashSlice) ([]*tree.Node, error) {
	nodes := make([]*tree.Node, len(addrs))
	missing := hash.HashSet{}
	for i, addr := range addrs {
		if nd, ok := ns.cache.get(ns.key(addr)); ok {
			nodes[i] = nd
		} else {
			missing.Insert(addr)
		}
	}
	if len(missing) == 0 {
		return nodes, nil
	}
	fetched, err := ns.fetch(ctx, missing)
	if err != nil {
		return nil, readErr(ctx, err)
	}
	for i, addr := range addrs {
		if nodes[i] != nil {
			continue
		}
		nd, ok := fetched[addr]
		if !ok {
			return nil, fmt.Errorf("read node %s: %w", addr, errNodeMissing)
		}
		nodes[i] = nd
		ns.cache.insert(ns.key(addr), nd)
	}
	return nodes, nil
}

// fetch reads and decodes chunks from the store; GetMany calls back
// concurrently.
func (ns *nodeStore) fetch(ctx context.Context, addrs hash.HashSet) (map[hash.Hash]*tree.Node, error) {
	var mu sync.Mutex
	var decodeErr error
	out := make(map[hash.Hash]*tree.Node, len(addrs))
	err := ns.cs.GetMany(ctx, addrs, func(_ context.Context, c *chunks.Chunk) {
		nd, err := decodeNode(c, c.Hash())
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			decodeErr = err
			return
		}
		out[c.Hash()] = nd
	})
	if err == nil {
		err = decodeErr
	}
	return out, err
}

// readErr is the error of a failed read from the chunk store: when ctx
// stopped it, MongoDB's (MaxTimeMSExpired or Interrupted), as the readers'
// own checks of ctx give, not the context's own.
func readErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return interrupt.Err(ctx)
	}
	return err
}

func decodeNode(c *chunks.Chunk, addr hash.Hash) (*tree.Node, error) {
	if c.IsEmpty() {
		return nil, fmt.Errorf("read node %s: %w", addr, errNodeMissing)
	}
	nd, _, err := tree.NodeFromChunk(c)
	if err != nil {
		return nil, fmt.Errorf("decode node %s: %w", addr, err)
	}
	return nd, nil
}

// Write puts nd in the chunk store. It caches the nodes that hold
// addresses: inner nodes, which every read of the new tree walks, and
// leaves pointing at other trees (a database root's map of collections, a
// map's out-of-line documents), from which the next checkpoint's walk
// that forgets what it replaced starts (nodeforget.go): a branch's root
// is held in memory, never read through the cache, and an uncached one
// left every leaf read under it cached for good. Data leaves are cached
// when a read needs them: a bulk load's checkpoints wrote leaves that
// filled the cache (256 MB) with nodes nobody read, on a heap the
// collector then had no room left on: Raw/InsertMany spent 16% of its
// time collecting, 7% without (docs/design/resources.md, "The node
// cache").
func (ns *nodeStore) Write(ctx context.Context, nd *tree.Node) (hash.Hash, error) {
	data := nodeBytes(nd)
	if len(data) == 0 {
		return hash.Hash{}, errors.New("write node: empty node")
	}
	addr := nd.HashOf()
	if err := ns.cs.Put(ctx, chunks.NewChunkWithHash(addr, data), childAddrs); err != nil {
		return hash.Hash{}, err
	}
	if nd.Level() > 0 || holdsAddresses(ctx, data) {
		ns.cache.insert(ns.key(addr), nd)
	}
	return addr, nil
}

// childAddrs tells the chunk store which of a node's children it has not
// been given yet, for its check that a write leaves no dangling address.
func childAddrs(c chunks.Chunk) chunks.GetAddrsCb {
	return func(ctx context.Context, addrs hash.HashSet, exists chunks.PendingRefExists) error {
		return message.WalkAddresses(ctx, c.Data(), func(_ context.Context, a hash.Hash) error {
			if !exists(a) {
				addrs.Insert(a)
			}
			return nil
		})
	}
}

// errHasAddress stops holdsAddresses' walk at the first address.
var errHasAddress = errors.New("holds an address")

// holdsAddresses reports whether a node's message holds an address.
func holdsAddresses(ctx context.Context, msg []byte) bool {
	return message.WalkAddresses(ctx, msg, func(context.Context, hash.Hash) error { return errHasAddress }) == errHasAddress
}

// nodeChildren returns the addresses a node holds: its children, or a
// leaf's out-of-line values and nested trees.
func nodeChildren(ctx context.Context, nd *tree.Node) []hash.Hash {
	var out []hash.Hash
	_ = message.WalkAddresses(ctx, nodeBytes(nd), func(_ context.Context, a hash.Hash) error {
		out = append(out, a)
		return nil
	})
	return out
}

// nodeBytes is a node's serialized message, shared, not copied.
func nodeBytes(nd *tree.Node) []byte {
	return []byte(tree.ValueFromNode(nd).(types.SerialMessage))
}

func (ns *nodeStore) Pool() pool.BuffPool { return nodeBuffers }

func (ns *nodeStore) Format() *types.NomsBinFormat { return ns.nbf }

func (ns *nodeStore) BlobBuilder() *tree.BlobBuilder {
	bb, _ := blobBuilders.Get().(*tree.BlobBuilder)
	if bb == nil {
		var err error
		if bb, err = tree.NewBlobBuilder(tree.DefaultFixedChunkLength); err != nil {
			panic(fmt.Sprintf("blob builder of Dolt's default chunk length: %v", err))
		}
	}
	bb.SetNodeStore(ns)
	return bb
}

func (ns *nodeStore) PutBlobBuilder(bb *tree.BlobBuilder) {
	bb.Reset()
	blobBuilders.Put(bb)
}

// PurgeCaches drops this store's cached nodes: GC may have removed their
// chunks, and a node read from the cache must be one the store still has.
func (ns *nodeStore) PurgeCaches() { ns.cache.purgeStore(ns.id) }

// ReadBytes returns the bytes of the blob at addr: its leaves in order.
func (ns *nodeStore) ReadBytes(ctx context.Context, addr hash.Hash) ([]byte, error) {
	root, err := ns.Read(ctx, addr)
	if err != nil {
		return nil, err
	}
	var out []byte
	err = tree.WalkNodes(ctx, root, ns, func(_ context.Context, nd *tree.Node) error {
		if nd.IsLeaf() {
			out = append(out, nd.GetValue(0)...)
		}
		return nil
	})
	return out, err
}

// WriteBytes writes b as a blob and returns its address.
func (ns *nodeStore) WriteBytes(ctx context.Context, b []byte) (hash.Hash, error) {
	_, addr, err := tree.SerializeBytesToAddr(ctx, ns, bytes.NewReader(b), len(b))
	return addr, err
}
