package doctree

import (
	"bytes"
	"context"
	"hash/maphash"
	"sync"

	"github.com/dolthub/dolt/go/store/hash"
	"github.com/dolthub/dolt/go/store/prolly"
	"github.com/dolthub/dolt/go/store/prolly/tree"
	"github.com/dolthub/dolt/go/store/types"
)

// Writer builds doctrees into one node store and remembers the nodes it
// wrote by a cheap hash of their bytes. Writing an equal node again (a
// copy of a document with a small change, a document imported back, a
// merge result) then costs a look-up and a comparison instead of a SHA-512
// and a chunk-store put: content-defined segments make such copies consist
// almost only of equal nodes.
//
// The memory is only an index of chunks the store holds: Forget must be
// called when the store may have dropped chunks (garbage collection).
type Writer struct {
	ns   tree.NodeStore
	mu   sync.Mutex
	seen map[uint64]hash.Hash
}

// maxRemembered bounds the index (about 60 bytes per node, 4 KiB of
// document per node): past it the index starts over.
const maxRemembered = 1 << 18

var nodeSeed = maphash.MakeSeed()

// NewWriter returns a Writer over ns.
func NewWriter(ns tree.NodeStore) *Writer {
	return &Writer{ns: ns, seen: map[uint64]hash.Hash{}}
}

// Build writes doc as a doctree.
func (w *Writer) Build(ctx context.Context, doc []byte) (prolly.Map, error) {
	return Build(ctx, dedupStore{NodeStore: w.ns, w: w}, doc)
}

// Forget drops what the Writer remembers.
func (w *Writer) Forget() {
	w.mu.Lock()
	w.seen = map[uint64]hash.Hash{}
	w.mu.Unlock()
}

func (w *Writer) lookup(k uint64) (hash.Hash, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	h, ok := w.seen[k]
	return h, ok
}

func (w *Writer) remember(k uint64, h hash.Hash) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.seen) >= maxRemembered {
		w.seen = map[uint64]hash.Hash{}
	}
	w.seen[k] = h
}

// dedupStore is the node store a Writer's builds write through.
type dedupStore struct {
	tree.NodeStore
	w *Writer
}

func nodeBytes(nd *tree.Node) []byte { return []byte(tree.ValueFromNode(nd).(types.SerialMessage)) }

func (s dedupStore) Write(ctx context.Context, nd *tree.Node) (hash.Hash, error) {
	b := nodeBytes(nd)
	k := maphash.Bytes(nodeSeed, b)
	if addr, ok := s.w.lookup(k); ok {
		if old, err := s.NodeStore.Read(ctx, addr); err == nil && bytes.Equal(nodeBytes(old), b) {
			return addr, nil
		}
	}
	addr, err := s.NodeStore.Write(ctx, nd)
	if err == nil {
		s.w.remember(k, addr)
	}
	return addr, err
}
