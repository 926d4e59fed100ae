package storage

import (
	"context"
	"errors"
	"fmt"

	"dumbodb/index"

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

// ErrIndexNotFound: an index scan named an index the collection lacks.
var ErrIndexNotFound = errors.New("index not found")

// Indexes lists a collection's secondary indexes.
func (s *Snapshot) Indexes(coll string) []IndexInfo {
	c, ok := s.st.colls[coll]
	if !ok {
		return nil
	}
	return indexInfos(c)
}

// IndexScan walks one index's entries within an interval.
func (s *Snapshot) IndexScan(ctx context.Context, coll, name string, iv index.Interval) (*IndexIterator, error) {
	c, ok := s.st.colls[coll]
	if !ok {
		return nil, ErrNamespaceNotFound
	}
	ix := c.index(name)
	if ix == nil {
		return nil, fmt.Errorf("%w: %s", ErrIndexNotFound, name)
	}
	return newIndexIterator(ctx, s.ns, ix.base, ix.edits, iv)
}

// GetKey returns the document stored under an encoded _id key.
func (s *Snapshot) GetKey(ctx context.Context, coll string, idKey []byte) (bsoncore.Document, bool, error) {
	c, ok := s.st.colls[coll]
	if !ok {
		return nil, false, nil
	}
	v, found, err := lookup(ctx, s.ns, c.base, c.edits, idKey)
	return append(bsoncore.Document(nil), v...), found, err
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
	// editsIn copies the edits in range, which freezes them.
	return newIndexIterator(ctx, tx.ns, ix.base, ix.edits, iv)
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
