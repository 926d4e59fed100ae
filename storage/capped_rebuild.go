package storage

import (
	"bytes"
	"context"
	"errors"
	"github.com/dumbodb/dumbodb/storage/doctree"
	"io"
	"sort"

	"github.com/dolthub/dolt/go/store/prolly"
	"github.com/dolthub/dolt/go/store/prolly/tree"
	"github.com/dolthub/dolt/go/store/val"
)

// rebuildCapped writes a capped collection's order map anew from its
// document map (which must have no edits): the documents in the order of
// each of orders in turn (a merge passes ours, then theirs), then any
// document none of them holds, in _id order; record ids are renumbered
// from 1. Documents the orders name but the map lacks (deleted on either
// side of a merge) are left out.
func rebuildCapped(ctx context.Context, ns tree.NodeStore, c *collection, orders []*cappedState) error {
	sizes, ids, err := docSizes(ctx, ns, c)
	if err != nil {
		return err
	}
	var seq [][]byte
	placed := make(map[string]bool, len(ids))
	for _, o := range orders {
		if o == nil {
			continue
		}
		entries, err := naturalAfter(ctx, ns, o, 0)
		if err != nil {
			return err
		}
		for _, e := range entries {
			k := string(e.IDKey)
			if _, live := sizes[k]; live && !placed[k] {
				placed[k] = true
				seq = append(seq, e.IDKey)
			}
		}
	}
	for _, id := range ids {
		if !placed[string(id)] {
			seq = append(seq, id)
		}
	}
	cs, err := writeOrder(ctx, ns, seq, sizes)
	if err != nil {
		return err
	}
	c.capped = cs
	return nil
}

// docSizes reads every document's _id key and BSON size, in _id order.
func docSizes(ctx context.Context, ns tree.NodeStore, c *collection) (map[string]int64, [][]byte, error) {
	it, err := newIterator(ctx, ns, c.base, c.edits)
	if err != nil {
		return nil, nil, err
	}
	sizes := map[string]int64{}
	var ids [][]byte
	for {
		doc, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			return sizes, ids, nil
		}
		if err != nil {
			return nil, nil, err
		}
		key := encodeID(doc.Lookup("_id"))
		sizes[string(key)] = int64(len(doc))
		ids = append(ids, key)
	}
}

// writeOrder builds the order map of documents in seq's order.
func writeOrder(ctx context.Context, ns tree.NodeStore, seq [][]byte, sizes map[string]int64) (*cappedState, error) {
	cs := &cappedState{edits: newEdits(), last: int64(len(seq))}
	type kv struct{ k, v []byte }
	order := make([]kv, 0, len(seq))
	pos := make([]kv, 0, len(seq))
	for i, id := range seq {
		rid := int64(i + 1)
		order = append(order, kv{orderKey(rid), id})
		pos = append(pos, kv{posKey(id), ridBytes(rid)})
		cs.bytes += sizes[string(id)]
	}
	sort.Slice(pos, func(i, j int) bool { return bytes.Compare(pos[i].k, pos[j].k) < 0 })
	all := append(append([]kv{{cappedMetaKey, cs.metaValue()}}, order...), pos...)
	tuples := make([]val.Tuple, 0, 2*len(all))
	for _, e := range all {
		k, err := doctree.KeyTuple(ns, e.k)
		if err != nil {
			return nil, err
		}
		v, err := valueTuple(ctx, ns, e.v)
		if err != nil {
			return nil, err
		}
		tuples = append(tuples, k, v)
	}
	m, err := prolly.NewMapFromTuples(ctx, ns, keyDesc, valDesc, tuples...)
	if err != nil {
		return nil, err
	}
	cs.base = m
	return cs, nil
}

// mergeCapped gives a merged capped collection its order: ours', then
// theirs' new documents in theirs' order (docs/format/capped.md).
func mergeCapped(ctx context.Context, ns tree.NodeStore, merged, ours, theirs *collection) error {
	if !merged.info.Capped() {
		return nil
	}
	var orders []*cappedState
	for _, side := range []*collection{ours, theirs} {
		if side != nil {
			orders = append(orders, side.capped)
		}
	}
	return rebuildCapped(ctx, ns, merged, orders)
}

// syncStateCapped gives every capped collection of an edit-free state
// that lacks an order map one, before its root is written. Collections it
// changes are replaced in st.colls, as syncStateIndexes does.
func syncStateCapped(ctx context.Context, ns tree.NodeStore, st *rootState) error {
	changed := map[string]*collection{}
	for name, c := range st.colls.all() {
		if !c.info.Capped() || c.capped != nil {
			continue
		}
		next := *c
		if err := rebuildCapped(ctx, ns, &next, nil); err != nil {
			return err
		}
		changed[name] = &next
	}
	if len(changed) > 0 { // a published state is in sync: never written
		st.colls = st.colls.with(changed)
	}
	return nil
}

// settleCapped keeps the order map of a collection whose conflict is
// resolved with doc (nil: deleted) in step, folded at once as settle
// folds the document.
func settleCapped(ctx context.Context, ns tree.NodeStore, c *collection, key, doc []byte) error {
	if c.capped == nil {
		return nil
	}
	old, existed, err := lookup(ctx, ns, c.base, nil, key)
	if err != nil {
		return err
	}
	c.capped = c.capped.clone()
	if err := c.noteCapped(ctx, ns, key, oldIf(old, existed), doc); err != nil {
		return err
	}
	c.capped, err = foldCapped(ctx, ns, c.capped)
	return err
}
