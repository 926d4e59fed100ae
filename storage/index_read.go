package storage

import (
	"context"
	"fmt"

	"github.com/dumbodb/dumbodb/index"
	"github.com/dumbodb/dumbodb/storage/doctree"

	"github.com/dolthub/dolt/go/store/prolly"
	"github.com/dolthub/dolt/go/store/prolly/tree"
	"github.com/dolthub/dolt/go/store/val"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// indexCandidates are the index states a merged collection can start
// from: ours (when it has no pending edits, so its maps are complete) and
// theirs.
func indexCandidates(o, t *collection) []*indexState {
	var out []*indexState
	if o != nil && (o.edits == nil || o.edits.Len() == 0) {
		out = append(out, o.indexes...)
	}
	if t != nil {
		out = append(out, t.indexes...)
	}
	return out
}

// Indexes lists a collection's secondary indexes.
func (s *Snapshot) Indexes(coll string) []IndexInfo {
	c, ok := s.st.colls.lookup(coll)
	if !ok {
		return nil
	}
	return indexInfos(c)
}

// IndexScan walks one index's entries within an interval.
func (s *Snapshot) IndexScan(ctx context.Context, coll, name string, iv index.Interval) (*IndexIterator, error) {
	c, ok := s.st.colls.lookup(coll)
	if !ok {
		return nil, ErrNamespaceNotFound
	}
	ix := c.index(name)
	if ix == nil {
		return nil, fmt.Errorf("%w: %s", ErrIndexNotFound, name)
	}
	it, err := newIndexIterator(ctx, s.ns, ix.base, ix.edits, iv)
	if it != nil {
		it.owner = s // keeps the snapshot, and so its pin, alive
		it.eds.dead.meter = s.tombstones
	}
	return it, err
}

// GetKey returns the document stored under an encoded _id key.
func (s *Snapshot) GetKey(ctx context.Context, coll string, idKey []byte) (bsoncore.Document, bool, error) {
	c, ok := s.st.colls.lookup(coll)
	if !ok {
		return nil, false, nil
	}
	return ownedLookup(ctx, s.ns, c, idKey)
}

// GetKeyFields is GetKey reading of a document stored as a doctree only
// the fields listed (a smaller document is read whole).
func (s *Snapshot) GetKeyFields(ctx context.Context, coll string, idKey []byte, fields []string) (bsoncore.Document, bool, error) {
	c, ok := s.st.colls.lookup(coll)
	if !ok {
		return nil, false, nil
	}
	if c.edits != nil {
		if e, ok := c.edits.Get(&edit{key: idKey}); ok {
			if e.rope != nil {
				return e.rope.bytes(), true, nil
			}
			return append(bsoncore.Document(nil), e.value...), e.value != nil, nil
		}
	}
	k, err := doctree.KeyTuple(s.ns, idKey)
	if err != nil {
		return nil, false, err
	}
	var out []byte
	var found bool
	err = c.base.Get(ctx, k, func(key, v val.Tuple) error {
		if key == nil {
			return nil
		}
		found = true
		b, err := valueFields(ctx, s.ns, v, doctree.NewFields(fields))
		out = append([]byte(nil), b...)
		return err
	})
	return out, found, err
}

// Indexes lists a collection's secondary indexes as this transaction sees
// them.
func (tx *Tx) Indexes(coll string) []IndexInfo {
	c := tx.view(coll)
	if c == nil {
		return nil
	}
	return indexInfos(c)
}

// IndexScan walks one index's entries as of this call; later writes of the
// transaction do not show up in it.
func (tx *Tx) IndexScan(ctx context.Context, coll, name string, iv index.Interval) (*IndexIterator, error) {
	c := tx.view(coll)
	if c == nil {
		return nil, ErrNamespaceNotFound
	}
	ix := c.index(name)
	if ix == nil {
		return nil, fmt.Errorf("%w: %s", ErrIndexNotFound, name)
	}
	ed := ix.edits
	if _, own := tx.overlay[coll]; own && ed != nil {
		// Freeze: the transaction may go on editing while it iterates
		// (an update that moves entries ahead of the scan must not meet
		// them again).
		ed = ed.Clone()
	}
	it, err := newIndexIterator(ctx, tx.ns, ix.base, ed, iv)
	if it != nil {
		it.eds.dead.meter = tx.tombstones
	}
	return it, err
}

// GetKey returns the document stored under an encoded _id key.
func (tx *Tx) GetKey(ctx context.Context, coll string, idKey []byte) (bsoncore.Document, bool, error) {
	c := tx.view(coll)
	if c == nil {
		return nil, false, nil
	}
	v, found, err := lookup(ctx, tx.ns, c.base, c.edits, idKey)
	return append(bsoncore.Document(nil), v...), found, err
}

// IndexSize is the estimated size of one index in bytes.
type IndexSize struct {
	Name  string
	Bytes int64
}

// IndexSizes estimates the size of each secondary index of coll: the
// serialized bytes of every node of its checkpointed prolly map (found by
// walking the tree), plus the key and value bytes of the entries written
// since the last checkpoint. Chunks shared with other maps or versions are
// counted in full, as they are in each map that holds them.
func (s *Snapshot) IndexSizes(ctx context.Context, coll string) ([]IndexSize, error) {
	c, ok := s.st.colls.lookup(coll)
	if !ok {
		return nil, nil
	}
	out := make([]IndexSize, 0, len(c.indexes))
	for _, ix := range c.indexes {
		n, err := mapBytes(ctx, ix.base)
		if err != nil {
			return nil, err
		}
		if ix.edits != nil {
			ix.edits.Ascend(func(e *edit) bool {
				if e.value != nil {
					n += int64(len(e.key) + len(e.value))
				}
				return true
			})
		}
		out = append(out, IndexSize{Name: ix.spec.Name, Bytes: n})
	}
	return out, nil
}

// CollectionBytes is the stored size of a collection's documents: the
// serialized nodes of its document map plus the bytes of its edits not yet
// checkpointed (collStats' storageSize).
func (s *Snapshot) CollectionBytes(ctx context.Context, coll string) (int64, error) {
	c, ok := s.st.colls.lookup(coll)
	if !ok {
		return 0, nil
	}
	n, err := mapBytes(ctx, c.base)
	if err != nil {
		return 0, err
	}
	if c.edits != nil {
		c.edits.Ascend(func(e *edit) bool {
			n += int64(len(e.key) + e.docLen())
			return true
		})
	}
	return n, nil
}

func mapBytes(ctx context.Context, m prolly.Map) (int64, error) {
	root := m.Node()
	if root == nil {
		return 0, nil
	}
	var n int64
	err := tree.WalkNodes(ctx, root, m.NodeStore(), func(_ context.Context, nd *tree.Node) error {
		if nd != nil {
			n += int64(nd.Size())
		}
		return nil
	})
	return n, err
}
