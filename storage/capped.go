package storage

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/dumbodb/dumbodb/index"
	"github.com/dumbodb/dumbodb/mongoerr"

	"github.com/dolthub/dolt/go/store/prolly"
	"github.com/dolthub/dolt/go/store/prolly/tree"
)

// rootNaturalPrefix names a capped collection's insertion-order map in a
// root: natural/<collection> (docs/format/capped.md).
const rootNaturalPrefix = "natural/"

// Key tags of the insertion-order map.
const (
	cappedMetaTag  = 0x00 // last record id and live bytes
	cappedOrderTag = 0x01 // record id -> _id key
	cappedPosTag   = 0x02 // _id key -> record id
)

var cappedMetaKey = []byte{cappedMetaTag}

// cappedState is a capped collection's insertion order, kept like its
// documents: a checkpointed map plus the edits made since. last and bytes
// are the meta entry's figures as of the edits, kept decoded so that a
// write need not read them back.
type cappedState struct {
	base  prolly.Map
	edits *edits
	last  int64 // highest record id given
	bytes int64 // BSON bytes of the live documents
}

// Capped reports whether the catalog entry is a capped collection's.
func (ci CollectionInfo) Capped() bool {
	b, ok := ci.Options.Lookup("capped").BooleanOK()
	return ok && b
}

// CappedLimits are a capped collection's size in bytes and its maximum
// document count (0: none).
func (ci CollectionInfo) CappedLimits() (size, max int64) {
	size, _ = ci.Options.Lookup("size").AsInt64OK()
	max, _ = ci.Options.Lookup("max").AsInt64OK()
	return size, max
}

func orderKey(rid int64) []byte {
	k := make([]byte, 9)
	k[0] = cappedOrderTag
	binary.BigEndian.PutUint64(k[1:], uint64(rid))
	return k
}

func posKey(idKey []byte) []byte {
	return append([]byte{cappedPosTag}, idKey...)
}

func ridBytes(rid int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(rid)) }

func (cs *cappedState) metaValue() []byte {
	return binary.BigEndian.AppendUint64(ridBytes(cs.last), uint64(cs.bytes))
}

// clone is the copy a transaction edits (copy-on-write edits).
func (cs *cappedState) clone() *cappedState {
	if cs == nil {
		return nil
	}
	c := *cs
	if c.edits == nil {
		c.edits = newEdits()
	} else {
		c.edits = c.edits.Clone()
	}
	return &c
}

func newCappedState(ctx context.Context, ns tree.NodeStore) (*cappedState, error) {
	m, err := emptyMap(ctx, ns)
	return &cappedState{base: m, edits: newEdits()}, err
}

// loadCapped reads a capped collection's order map from a root; a root
// without one gets it rebuilt from the documents, in _id order.
func loadCapped(ctx context.Context, ns tree.NodeStore, root prolly.AddressMap, c *collection) error {
	if !c.info.Capped() {
		return nil
	}
	addr, err := root.Get(ctx, rootNaturalPrefix+c.info.Name)
	if err != nil {
		return err
	}
	if addr.IsEmpty() {
		return rebuildCapped(ctx, ns, c, nil)
	}
	m, err := loadMap(ctx, ns, addr)
	if err != nil {
		return fmt.Errorf("load order of %s: %w", c.info.Name, err)
	}
	cs := &cappedState{base: m, edits: newEdits()}
	meta, found, err := lookup(ctx, ns, m, nil, cappedMetaKey)
	if err != nil {
		return err
	}
	if found && len(meta) == 16 {
		cs.last = int64(binary.BigEndian.Uint64(meta))
		cs.bytes = int64(binary.BigEndian.Uint64(meta[8:]))
	}
	c.capped = cs
	return nil
}

// set records one edit of the order map, keeping the collection's edit
// memory right.
func (c *collection) setCappedEdit(key, value []byte) {
	e := &edit{key: key, value: value}
	if old, ok := c.capped.edits.ReplaceOrInsert(e); ok {
		c.dropEdit(old, e)
	}
	c.editBytes += editSize(e)
}

// noteCapped keeps the order map in step with one document write: a new
// document gets the next record id, a replaced one keeps its own, a
// deleted one loses both entries. old is nil when no document was there.
func (c *collection) noteCapped(ctx context.Context, ns tree.NodeStore, idKey, old, new []byte) error {
	cs := c.capped
	if cs == nil {
		return nil
	}
	switch {
	case old == nil && new != nil:
		cs.last++
		c.setCappedEdit(orderKey(cs.last), append([]byte(nil), idKey...))
		c.setCappedEdit(posKey(idKey), ridBytes(cs.last))
	case old != nil && new == nil:
		pk := posKey(idKey)
		rid, found, err := lookup(ctx, ns, cs.base, cs.edits, pk)
		if err != nil {
			return err
		}
		if found && len(rid) == 8 {
			c.setCappedEdit(orderKey(int64(binary.BigEndian.Uint64(rid))), nil)
		}
		c.setCappedEdit(pk, nil)
	}
	cs.bytes += int64(len(new)) - int64(len(old))
	c.setCappedEdit(cappedMetaKey, cs.metaValue())
	return nil
}

// NaturalEntry is a document's place in a capped collection's insertion
// order.
type NaturalEntry struct {
	RecordID int64
	IDKey    []byte
}

// naturalAfter lists the collection's documents inserted after record id
// after (0: all), oldest first.
func naturalAfter(ctx context.Context, ns tree.NodeStore, cs *cappedState, after int64) ([]NaturalEntry, error) {
	iv := index.Interval{Start: orderKey(after + 1), Stop: []byte{cappedPosTag}}
	it, err := newIndexIterator(ctx, ns, cs.base, cs.edits, iv)
	if err != nil {
		return nil, err
	}
	var out []NaturalEntry
	for {
		k, id, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		out = append(out, NaturalEntry{RecordID: int64(binary.BigEndian.Uint64(k[1:])), IDKey: id})
	}
}

// oldest is the _id key of the oldest document (nil: none).
func oldest(ctx context.Context, ns tree.NodeStore, cs *cappedState) ([]byte, error) {
	iv := index.Interval{Start: orderKey(0), Stop: []byte{cappedPosTag}}
	it, err := newIndexIterator(ctx, ns, cs.base, cs.edits, iv)
	if err != nil {
		return nil, err
	}
	_, id, err := it.Next(ctx)
	if errors.Is(err, io.EOF) {
		return nil, nil
	}
	return append([]byte(nil), id...), err
}

// checkCappedWrite refuses, before anything is written, what mongod
// refuses on a capped collection: any write inside a multi-statement
// transaction, and a new document larger than the collection may hold.
func (tx *Tx) checkCappedWrite(c *collection, doc []byte, isNew bool) error {
	if c.capped == nil {
		return nil
	}
	if tx.inTxn {
		return mongoerr.New(mongoerr.OperationNotSupportedInTransaction,
			"Collection '%s' is a capped collection. Writes in transactions are not allowed on capped collections.", c.info.Name)
	}
	if size, _ := c.info.CappedLimits(); isNew && size > 0 && int64(len(doc)) > size {
		return mongoerr.New(mongoerr.BadValue, "object to insert exceeds cappedMaxSize")
	}
	return nil
}

// trimCapped removes the oldest documents while the collection is over
// its size or its document count, as ordinary deletes in the same write
// (logged, so replay does not trim again, and seen by change streams).
func (tx *Tx) trimCapped(ctx context.Context, coll string) error {
	c := tx.view(coll)
	if c == nil || c.capped == nil {
		return nil
	}
	size, max := c.info.CappedLimits()
	for (max > 0 && int64(c.count) > max) || (size > 0 && c.capped.bytes > size) {
		key, err := oldest(ctx, tx.ns, c.capped)
		if err != nil || key == nil {
			return err
		}
		if err := tx.deleteKey(ctx, coll, key); err != nil {
			return err
		}
	}
	return nil
}

// foldCapped applies a capped collection's order edits to its map at a
// checkpoint.
func foldCapped(ctx context.Context, ns tree.NodeStore, cs *cappedState) (*cappedState, error) {
	if cs == nil {
		return nil, nil
	}
	m, err := foldEdits(ctx, ns, &collection{base: cs.base, edits: cs.edits}, nil)
	if err != nil {
		return nil, err
	}
	return &cappedState{base: m, edits: newEdits(), last: cs.last, bytes: cs.bytes}, nil
}

// putCappedRoot adds a capped collection's order map to a root being
// built.
func putCappedRoot(ctx context.Context, ed prolly.AddressMapEditor, c *collection) error {
	if c.capped == nil {
		return nil
	}
	return ed.Update(ctx, rootNaturalPrefix+c.info.Name, c.capped.base.HashOf())
}
