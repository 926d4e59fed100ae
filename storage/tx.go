package storage

import (
	"context"
	"crypto/rand"
	"fmt"

	"dumbodb/index"

	"github.com/dolthub/dolt/go/store/prolly"
	"github.com/dolthub/dolt/go/store/prolly/tree"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Tx is a write transaction on one branch, handed to the function given to
// Database.Write. It reads its own writes. It is not safe for concurrent use.
type Tx struct {
	ns      tree.NodeStore
	base    *rootState
	overlay map[string]*txColl // name -> new state; nil value = dropped
}

type txColl struct {
	info        CollectionInfo
	data        prolly.Map
	mut         *prolly.MutableMap // nil until the first document write
	infoChanged bool
}

var _ Reader = (*Tx)(nil)

func newTx(_ context.Context, ns tree.NodeStore, base *rootState) *Tx {
	return &Tx{ns: ns, base: base, overlay: map[string]*txColl{}}
}

func (tx *Tx) dirty() bool {
	for _, c := range tx.overlay {
		if c == nil || c.infoChanged || (c.mut != nil && c.mut.HasEdits()) {
			return true
		}
		if base, ok := tx.base.colls[c.info.Name]; !ok || base.data.HashOf() != c.data.HashOf() {
			return true
		}
	}
	return false
}

// coll returns the transaction's view of a collection, or nil.
func (tx *Tx) coll(name string) *txColl {
	if c, ok := tx.overlay[name]; ok {
		return c
	}
	c, ok := tx.base.colls[name]
	if !ok {
		return nil
	}
	tc := &txColl{info: c.info, data: c.data}
	tx.overlay[name] = tc
	return tc
}

// peek is coll without copying a base collection into the overlay.
func (tx *Tx) peek(name string) (CollectionInfo, bool) {
	if c, ok := tx.overlay[name]; ok {
		if c == nil {
			return CollectionInfo{}, false
		}
		return c.info, true
	}
	c, ok := tx.base.colls[name]
	if !ok {
		return CollectionInfo{}, false
	}
	return c.info, true
}

// Collections lists the collections as this transaction sees them.
func (tx *Tx) Collections() []CollectionInfo {
	seen := map[string]bool{}
	var out []CollectionInfo
	for _, n := range tx.base.collectionNames() {
		seen[n] = true
		if ci, ok := tx.peek(n); ok {
			out = append(out, ci)
		}
	}
	for n, c := range tx.overlay {
		if !seen[n] && c != nil {
			out = append(out, c.info)
		}
	}
	sortInfos(out)
	return out
}

// Collection returns one collection's catalog entry.
func (tx *Tx) Collection(name string) (CollectionInfo, bool) { return tx.peek(name) }

// CreateCollection adds an empty collection.
func (tx *Tx) CreateCollection(ctx context.Context, name string, options bsoncore.Document) (CollectionInfo, error) {
	if _, ok := tx.peek(name); ok {
		return CollectionInfo{}, ErrNamespaceExists
	}
	data, err := emptyMap(ctx, tx.ns)
	if err != nil {
		return CollectionInfo{}, err
	}
	if options == nil {
		options = bsoncore.NewDocumentBuilder().Build()
	}
	info := CollectionInfo{Name: name, Options: options}
	if _, err := rand.Read(info.UUID[:]); err != nil {
		return CollectionInfo{}, err
	}
	info.UUID[6] = info.UUID[6]&0x0f | 0x40 // RFC 4122 version 4
	info.UUID[8] = info.UUID[8]&0x3f | 0x80
	tx.overlay[name] = &txColl{info: info, data: data, infoChanged: true}
	return info, nil
}

// EnsureCollection creates the collection if it does not exist (MongoDB's
// implicit creation on first write) and reports whether it did.
func (tx *Tx) EnsureCollection(ctx context.Context, name string) (bool, error) {
	if _, ok := tx.peek(name); ok {
		return false, nil
	}
	_, err := tx.CreateCollection(ctx, name, nil)
	return err == nil, err
}

// DropCollection removes a collection and its documents.
func (tx *Tx) DropCollection(name string) error {
	if _, ok := tx.peek(name); !ok {
		return ErrNamespaceNotFound
	}
	tx.overlay[name] = nil
	return nil
}

// RenameCollection moves a collection to a new name, keeping its UUID. With
// dropTarget an existing target is dropped first.
func (tx *Tx) RenameCollection(from, to string, dropTarget bool) error {
	src := tx.coll(from)
	if src == nil {
		return ErrNamespaceNotFound
	}
	if _, exists := tx.peek(to); exists {
		if !dropTarget {
			return ErrNamespaceExists
		}
	}
	moved := *src
	moved.info.Name = to
	moved.infoChanged = true
	tx.overlay[to] = &moved
	tx.overlay[from] = nil
	return nil
}

// Get returns the document whose _id equals id.
func (tx *Tx) Get(ctx context.Context, coll string, id bsoncore.Value) (bsoncore.Document, bool, error) {
	c := tx.coll(coll)
	if c == nil {
		return nil, false, nil
	}
	k, err := idKey(tx.ns, id)
	if err != nil {
		return nil, false, err
	}
	if c.mut != nil {
		return getValue(ctx, tx.ns, c.mut, k)
	}
	return getValue(ctx, tx.ns, c.data, k)
}

// Scan iterates over a collection as of this call; writes made while
// iterating do not show up in the iteration.
func (tx *Tx) Scan(ctx context.Context, coll string) (*Iterator, error) {
	c := tx.coll(coll)
	if c == nil {
		return &Iterator{}, nil
	}
	if c.mut != nil {
		// Freeze pending edits so the iterator walks an immutable tree.
		m, err := c.mut.Map(ctx)
		if err != nil {
			return nil, err
		}
		c.data, c.mut = m, nil
	}
	it, err := c.data.IterAll(ctx)
	if err != nil {
		return nil, err
	}
	return &Iterator{ns: tx.ns, it: it}, nil
}

func (tx *Tx) mutable(coll string) (*txColl, error) {
	c := tx.coll(coll)
	if c == nil {
		return nil, ErrNamespaceNotFound
	}
	if c.mut == nil {
		c.mut = c.data.Mutate()
	}
	return c, nil
}

// Insert adds doc, whose first field must be its _id. It fails with
// ErrDuplicateKey when a document with an equal _id exists.
func (tx *Tx) Insert(ctx context.Context, coll string, doc bsoncore.Document) error {
	return tx.put(ctx, coll, doc, true)
}

// Replace stores doc in place of the document with the same _id.
func (tx *Tx) Replace(ctx context.Context, coll string, doc bsoncore.Document) error {
	return tx.put(ctx, coll, doc, false)
}

func (tx *Tx) put(ctx context.Context, coll string, doc bsoncore.Document, mustBeNew bool) error {
	c, err := tx.mutable(coll)
	if err != nil {
		return err
	}
	id, err := doc.LookupErr("_id")
	if err != nil {
		return fmt.Errorf("document without _id: %w", err)
	}
	k, err := idKey(tx.ns, id)
	if err != nil {
		return err
	}
	if mustBeNew {
		exists, err := c.mut.Has(ctx, k)
		if err != nil {
			return err
		}
		if exists {
			return ErrDuplicateKey
		}
	}
	v, err := valueTuple(ctx, tx.ns, doc)
	if err != nil {
		return err
	}
	return c.mut.Put(ctx, k, v)
}

// Delete removes the document whose _id equals id.
func (tx *Tx) Delete(ctx context.Context, coll string, id bsoncore.Value) error {
	c, err := tx.mutable(coll)
	if err != nil {
		return err
	}
	k, err := idKey(tx.ns, id)
	if err != nil {
		return err
	}
	return c.mut.Delete(ctx, k)
}

// apply writes the transaction's maps and returns the new root state.
func (tx *Tx) apply(ctx context.Context) (*rootState, error) {
	st := &rootState{colls: make(map[string]*collection, len(tx.base.colls)+len(tx.overlay))}
	for n, c := range tx.base.colls {
		st.colls[n] = c
	}
	rootEd := tx.base.root.Editor()
	catMut := tx.base.catalog.Mutate()
	for name, c := range tx.overlay {
		if err := tx.applyOne(ctx, st, rootEd, catMut, name, c); err != nil {
			return nil, fmt.Errorf("collection %q: %w", name, err)
		}
	}
	var err error
	if st.catalog, err = catMut.Map(ctx); err != nil {
		return nil, err
	}
	if err := rootEd.Update(ctx, rootCatalog, st.catalog.HashOf()); err != nil {
		return nil, err
	}
	if st.root, err = rootEd.Flush(ctx); err != nil {
		return nil, err
	}
	return st, nil
}

func (tx *Tx) applyOne(ctx context.Context, st *rootState, rootEd prolly.AddressMapEditor, catMut *prolly.MutableMap, name string, c *txColl) error {
	k, err := keyTuple(tx.ns, []byte(name))
	if err != nil {
		return err
	}
	if c == nil {
		delete(st.colls, name)
		if err := rootEd.Delete(ctx, rootDataPrefix+name); err != nil {
			return err
		}
		return catMut.Delete(ctx, k)
	}
	if c.mut != nil {
		if c.data, err = c.mut.Map(ctx); err != nil {
			return err
		}
	}
	st.colls[name] = &collection{info: c.info, data: c.data}
	if err := rootEd.Update(ctx, rootDataPrefix+name, c.data.HashOf()); err != nil {
		return err
	}
	if !c.infoChanged {
		return nil
	}
	v, err := valueTuple(ctx, tx.ns, c.info.encode())
	if err != nil {
		return err
	}
	return catMut.Put(ctx, k, v)
}

// ValidateKey reports whether id can be stored as an _id (its encoded key
// fits index.MaxKeySize).
func ValidateKey(id bsoncore.Value) error {
	if len(index.EncodeKey(nil, id)) > index.MaxKeySize {
		return ErrKeyTooLong
	}
	return nil
}
