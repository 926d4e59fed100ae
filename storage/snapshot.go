package storage

import (
	"context"

	"github.com/dumbodb/dumbodb/index"

	"github.com/dolthub/dolt/go/store/prolly/tree"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Reader is what both a Snapshot and a Tx offer for reading.
type Reader interface {
	Collections() []CollectionInfo
	Collection(name string) (CollectionInfo, bool)
	Get(ctx context.Context, coll string, id bsoncore.Value) (bsoncore.Document, bool, error)
	Scan(ctx context.Context, coll string) (*Iterator, error)
	// ScanRange iterates over the documents whose encoded _id key lies in
	// an interval (index.EncodeKey order), in _id order.
	ScanRange(ctx context.Context, coll string, iv index.Interval) (*Iterator, error)
	// Indexes lists a collection's secondary indexes.
	Indexes(coll string) []IndexInfo
	// IndexScan walks one index's entries within an interval.
	IndexScan(ctx context.Context, coll, name string, iv index.Interval) (*IndexIterator, error)
	// GetKey returns the document stored under an encoded _id key.
	GetKey(ctx context.Context, coll string, idKey []byte) (bsoncore.Document, bool, error)
}

// Snapshot is an immutable view of a branch at one moment.
type Snapshot struct {
	ns tree.NodeStore
	st *rootState
	// tombstones is the database's meter of tombstones scans step over
	// (nil: not metered).
	tombstones *tombstoneMeter
	// pins are the database's (nil for EmptySnapshot), which an index
	// built ahead from the snapshot is pinned in.
	pins *pins
}

var _ Reader = (*Snapshot)(nil)

// EmptySnapshot is the view of a database that does not exist.
func EmptySnapshot() *Snapshot { return &Snapshot{st: &rootState{}} }

// Collections lists the collections, sorted by name.
func (s *Snapshot) Collections() []CollectionInfo { return s.st.collectionInfos() }

// Collection returns one collection's catalog entry.
func (s *Snapshot) Collection(name string) (CollectionInfo, bool) {
	c, ok := s.st.colls.lookup(name)
	if !ok {
		return CollectionInfo{}, false
	}
	return c.info, true
}

// Conflicted reports whether a collection has unresolved merge conflicts,
// which keep it from being dropped or renamed (Tx.DropCollection).
func (s *Snapshot) Conflicted(coll string) bool {
	_, ok := s.st.conflicts[coll]
	return ok
}

// Get returns the document whose _id equals id.
func (s *Snapshot) Get(ctx context.Context, coll string, id bsoncore.Value) (bsoncore.Document, bool, error) {
	c, ok := s.st.colls.lookup(coll)
	if !ok {
		return nil, false, nil
	}
	key := encodeID(id)
	return ownedLookup(ctx, s.ns, c, key)
}

// ownedLookup is lookup of a document the caller owns: one from the edits
// is copied (they are shared), one from the map is a copy already.
func ownedLookup(ctx context.Context, ns tree.NodeStore, c *collection, key []byte) (bsoncore.Document, bool, error) {
	if e, ok := c.edits.getKey(key); ok {
		if !e.live() {
			return nil, false, nil
		}
		return append(bsoncore.Document(nil), e.doc()...), true, nil
	}
	v, found, err := lookup(ctx, ns, c.base, nil, key)
	if !found || err != nil {
		return nil, false, err
	}
	return v, true, nil
}

// Scan iterates over a collection's documents in _id order.
func (s *Snapshot) Scan(ctx context.Context, coll string) (*Iterator, error) {
	c, ok := s.st.colls.lookup(coll)
	if !ok {
		return &Iterator{}, nil
	}
	if c.capped != nil { // a capped collection's natural order is its insertion order
		return s.NaturalScan(ctx, coll, false)
	}
	it, err := newIterator(ctx, s.ns, c.base, c.edits)
	if it != nil {
		it.owner = s // keeps the snapshot, and so its GC pin, alive
		it.eds.dead.meter = s.tombstones
	}
	return it, err
}

// ScanRange iterates over a collection's documents with _id keys in iv.
func (s *Snapshot) ScanRange(ctx context.Context, coll string, iv index.Interval) (*Iterator, error) {
	c, ok := s.st.colls.lookup(coll)
	if !ok {
		return &Iterator{}, nil
	}
	it, err := newRangeIterator(ctx, s.ns, c.base, c.edits, iv)
	if it != nil {
		it.eds.dead.meter = s.tombstones
		it.owner = s
	}
	return it, err
}

// Count returns the number of documents in a collection.
func (s *Snapshot) Count(coll string) (int, error) {
	c, ok := s.st.colls.lookup(coll)
	if !ok {
		return 0, nil
	}
	return c.count, nil
}
