package storage

import (
	"bytes"
	"context"
	"slices"
	"sort"

	"github.com/dolthub/dolt/go/store/hash"
	"github.com/dolthub/dolt/go/store/prolly/tree"
	"github.com/dolthub/dolt/go/store/val"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// GetKeys returns the documents stored under encoded _id keys, in the
// order of keys (nil where there is none): the documents an index range
// names. The keys the edits do not decide are looked up together in one
// descent of the collection's map in key order, which reads each node on
// the way once for the batch instead of once per key.
func (s *Snapshot) GetKeys(ctx context.Context, coll string, keys [][]byte) ([]bsoncore.Document, error) {
	out := make([]bsoncore.Document, len(keys))
	c, ok := s.st.colls.lookup(coll)
	if !ok {
		return out, nil
	}
	var pending []int // indexes of keys to look up in the map
	for i, k := range keys {
		if e, ok := c.edits.getKey(k); ok {
			if e.live() {
				out[i] = append(bsoncore.Document(nil), e.doc()...)
			}
			continue
		}
		pending = append(pending, i)
	}
	slices.SortFunc(pending, func(a, b int) int { return bytes.Compare(keys[a], keys[b]) })
	err := getSorted(ctx, s.ns, c.base.Node(), keys, pending, func(i int, v val.Tuple) error {
		doc, err := valueBytes(ctx, s.ns, v)
		out[i] = append(bsoncore.Document(nil), doc...)
		return err
	})
	return out, err
}

// getSorted finds keys[i] for each i of pending (ordered by key) in the
// tree under nd, calling found with each one present. An internal node's
// keys are the last keys of its children, so the pending keys split into
// consecutive runs, one per child they fall in.
func getSorted(ctx context.Context, ns tree.NodeStore, nd *tree.Node, keys [][]byte, pending []int, found func(i int, v val.Tuple) error) error {
	from := 0 // the node's entries before from hold no pending key
	for len(pending) > 0 && nd.Count() > 0 {
		k := keys[pending[0]]
		j := from + sort.Search(nd.Count()-from, func(x int) bool {
			return bytes.Compare(keyBytes(val.Tuple(nd.GetKey(from+x))), k) >= 0
		})
		if j == nd.Count() {
			return nil // past the map's last key
		}
		if nd.IsLeaf() {
			if bytes.Equal(keyBytes(val.Tuple(nd.GetKey(j))), k) {
				if err := found(pending[0], val.Tuple(nd.GetValue(j))); err != nil {
					return err
				}
			}
			pending, from = pending[1:], j
			continue
		}
		last := keyBytes(val.Tuple(nd.GetKey(j)))
		n := sort.Search(len(pending), func(x int) bool { return bytes.Compare(keys[pending[x]], last) > 0 })
		child, err := ns.Read(ctx, hash.New(nd.GetValue(j)))
		if err != nil {
			return err
		}
		if err := getSorted(ctx, ns, child, keys, pending[:n], found); err != nil {
			return err
		}
		pending, from = pending[n:], j+1
	}
	return nil
}
