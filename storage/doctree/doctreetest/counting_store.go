// Package doctreetest holds test support for the packages that store
// documents as doctrees: doctree itself and storage.
package doctreetest

import (
	"context"

	"github.com/dolthub/dolt/go/store/hash"
	"github.com/dolthub/dolt/go/store/prolly/tree"
)

// CountingStore is an in-memory node store that records the distinct nodes
// read from it, so that a test can check that a read (a projection, a
// diff) touches a few nodes and not the whole tree.
type CountingStore struct {
	tree.NodeStore
	read map[hash.Hash]bool
}

// NewCountingStore returns an empty in-memory CountingStore.
func NewCountingStore() *CountingStore {
	return &CountingStore{NodeStore: tree.NewTestNodeStore(), read: map[hash.Hash]bool{}}
}

func (c *CountingStore) Read(ctx context.Context, ref hash.Hash) (*tree.Node, error) {
	c.read[ref] = true
	return c.NodeStore.Read(ctx, ref)
}

func (c *CountingStore) ReadMany(ctx context.Context, refs hash.HashSlice) ([]*tree.Node, error) {
	for _, r := range refs {
		c.read[r] = true
	}
	return c.NodeStore.ReadMany(ctx, refs)
}

// NodesRead is how many distinct nodes were read since the store was made
// or last reset.
func (c *CountingStore) NodesRead() int { return len(c.read) }

// Reset forgets the nodes read so far: what follows is counted alone.
func (c *CountingStore) Reset() { c.read = map[hash.Hash]bool{} }
