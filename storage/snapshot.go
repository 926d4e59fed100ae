package storage

import (
	"context"
	"errors"
	"io"

	"dumbodb/index"

	"github.com/dolthub/dolt/go/store/prolly"
	"github.com/dolthub/dolt/go/store/prolly/tree"
	"github.com/dolthub/dolt/go/store/val"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Reader is what both a Snapshot and a Tx offer for reading.
type Reader interface {
	Collections() []CollectionInfo
	Collection(name string) (CollectionInfo, bool)
	Get(ctx context.Context, coll string, id bsoncore.Value) (bsoncore.Document, bool, error)
	Scan(ctx context.Context, coll string) (*Iterator, error)
}

// Snapshot is an immutable view of a branch at one moment.
type Snapshot struct {
	ns tree.NodeStore
	st *rootState
}

var _ Reader = (*Snapshot)(nil)

// EmptySnapshot is the view of a database that does not exist.
func EmptySnapshot() *Snapshot { return &Snapshot{st: &rootState{colls: map[string]*collection{}}} }

// Collections lists the collections, sorted by name.
func (s *Snapshot) Collections() []CollectionInfo {
	names := s.st.collectionNames()
	out := make([]CollectionInfo, len(names))
	for i, n := range names {
		out[i] = s.st.colls[n].info
	}
	return out
}

// Collection returns one collection's catalog entry.
func (s *Snapshot) Collection(name string) (CollectionInfo, bool) {
	c, ok := s.st.colls[name]
	if !ok {
		return CollectionInfo{}, false
	}
	return c.info, true
}

// Get returns the document whose _id equals id.
func (s *Snapshot) Get(ctx context.Context, coll string, id bsoncore.Value) (bsoncore.Document, bool, error) {
	c, ok := s.st.colls[coll]
	if !ok {
		return nil, false, nil
	}
	k, err := idKey(s.ns, id)
	if err != nil {
		return nil, false, err
	}
	b, found, err := getValue(ctx, s.ns, c.data, k)
	return b, found, err
}

// Scan iterates over a collection's documents in _id order.
func (s *Snapshot) Scan(ctx context.Context, coll string) (*Iterator, error) {
	c, ok := s.st.colls[coll]
	if !ok {
		return &Iterator{}, nil
	}
	it, err := c.data.IterAll(ctx)
	if err != nil {
		return nil, err
	}
	return &Iterator{ns: s.ns, it: it}, nil
}

// Count returns the number of documents in a collection.
func (s *Snapshot) Count(coll string) (int, error) {
	c, ok := s.st.colls[coll]
	if !ok {
		return 0, nil
	}
	return c.data.Count()
}

// Iterator walks documents in _id order. Next returns io.EOF at the end.
type Iterator struct {
	ns tree.NodeStore
	it prolly.MapIter
}

// Next returns the next document; the caller owns the returned bytes.
func (i *Iterator) Next(ctx context.Context) (bsoncore.Document, error) {
	if i.it == nil {
		return nil, io.EOF
	}
	_, v, err := i.it.Next(ctx)
	if err != nil {
		if errors.Is(err, io.EOF) {
			i.it = nil
		}
		return nil, err
	}
	b, err := valueBytes(ctx, i.ns, v)
	if err != nil {
		return nil, err
	}
	return append(bsoncore.Document(nil), b...), nil
}

func idKey(ns tree.NodeStore, id bsoncore.Value) (val.Tuple, error) {
	enc := index.EncodeKey(nil, id)
	if len(enc) > index.MaxKeySize {
		return nil, ErrKeyTooLong
	}
	return keyTuple(ns, enc)
}
