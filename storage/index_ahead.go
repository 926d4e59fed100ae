package storage

import (
	"bytes"
	"context"
	"errors"
	"io"
	"runtime"
	"sort"

	"github.com/dumbodb/dumbodb/index"

	"github.com/dolthub/dolt/go/store/prolly"
	"github.com/dolthub/dolt/go/store/prolly/tree"
	"github.com/dolthub/dolt/go/store/val"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// PreparedIndexes are indexes built from a snapshot of a collection
// without the branch's write lock, so that building an index over a large
// collection does not stop its writers. Tx.SetIndexes takes them and, under
// the lock, only catches them up with the writes made since the snapshot.
type PreparedIndexes struct {
	from  *collection            // the collection as built from
	built map[string]*indexState // by raw spec
	snap  *Snapshot              // keeps from's trees pinned against GC
	// current says the collection they are taken into is still from:
	// there is nothing to catch up.
	current bool
}

// PrepareIndexes builds the indexes among raws that coll lacks in snap
// (nil when there is nothing to build). A unique index whose keys clash in
// the snapshot fails here, with the build's DuplicateKeyError.
func PrepareIndexes(ctx context.Context, snap *Snapshot, coll string, raws []bsoncore.Document) (*PreparedIndexes, error) {
	c := snap.st.colls.get(coll)
	if c == nil {
		return nil, nil
	}
	specs, err := specsOf(CollectionInfo{Name: coll, Indexes: raws})
	if err != nil {
		return nil, err
	}
	p := &PreparedIndexes{from: c, built: map[string]*indexState{}, snap: snap}
	if snap.pins != nil {
		snap.pins.building.RLock()
		defer snap.pins.building.RUnlock()
		defer p.pin(snap.pins)
	}
	var missing []*index.Spec
	for _, s := range specs {
		if ix := c.index(s.Name); ix == nil || !bytes.Equal(ix.spec.Raw, s.Raw) {
			missing = append(missing, s)
		}
	}
	if len(missing) == 0 {
		return p, nil
	}
	it, err := newIterator(ctx, snap.ns, c.base, c.edits)
	if err != nil {
		return nil, err
	}
	built, err := buildIndexes(ctx, snap.ns, coll, missing, it)
	if err != nil {
		return nil, err
	}
	for i, s := range missing {
		p.built[string(s.Raw)] = built[i]
	}
	return p, nil
}

// pin keeps the built indexes from GC for as long as p is reachable: a
// state whose one collection holds them (from's base kept beside).
func (p *PreparedIndexes) pin(pins *pins) {
	if len(p.built) == 0 {
		return
	}
	held := &collection{info: p.from.info, base: p.from.base}
	for _, ix := range p.built {
		held.indexes = append(held.indexes, ix)
	}
	st := &rootState{colls: newCollMap(map[string]*collection{p.from.info.Name: held})}
	pins.add(st)
	runtime.AddCleanup(p, func(st *rootState) { pins.remove(st) }, st)
}

// take returns a copy of the index prepared for raw spec, caught up with
// the documents of c, or nil when none was prepared.
func (p *PreparedIndexes) take(ctx context.Context, ns tree.NodeStore, c *collection, raw []byte) (*indexState, error) {
	if p == nil || p.built[string(raw)] == nil {
		return nil, nil
	}
	built := p.built[string(raw)]
	ix := &indexState{spec: built.spec, base: built.base, edits: newEdits(), multikey: built.multikey}
	if p.current {
		return ix, nil
	}
	changes, err := changedDocs(ctx, ns, p.from, c)
	if err != nil {
		return nil, err
	}
	// Entries of old versions go first, so that a key a document gave up
	// during the build is free for another one that took it.
	for _, removing := range []bool{true, false} {
		for _, ch := range changes {
			old, new := ch.old, ch.new
			if removing {
				new = nil
			} else {
				old = nil
			}
			plan, err := ix.plan(ctx, ns, c.info.Name, ch.id, old, new)
			if err != nil {
				return nil, err
			}
			c.applyIndexWrite([]indexChange{plan}, ch.id)
		}
	}
	return ix, nil
}

// docChange is one document that differs between two states of a
// collection (nil: absent).
type docChange struct{ id, old, new []byte }

// changedDocs lists the documents that differ between two states of a
// collection, looking only at what may have changed: the edits of both and
// the difference of their checkpointed maps.
func changedDocs(ctx context.Context, ns tree.NodeStore, from, to *collection) ([]docChange, error) {
	keys := map[string]bool{}
	for _, ed := range []*edits{from.edits, to.edits} {
		if ed != nil {
			ed.Ascend(func(e *edit) bool { keys[string(e.key)] = true; return true })
		}
	}
	if from.base.HashOf() != to.base.HashOf() {
		err := prolly.DiffMaps(ctx, from.base, to.base, false, func(_ context.Context, d tree.Diff) error {
			keys[string(keyBytes(val.Tuple(d.Key)))] = true
			return nil
		})
		if !errors.Is(err, io.EOF) { // DiffMaps ends with io.EOF
			return nil, err
		}
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	var out []docChange
	for _, k := range sorted {
		old, _, err := lookup(ctx, ns, from.base, from.edits, []byte(k))
		if err != nil {
			return nil, err
		}
		new, _, err := lookup(ctx, ns, to.base, to.edits, []byte(k))
		if err != nil {
			return nil, err
		}
		if !bytes.Equal(old, new) {
			out = append(out, docChange{id: []byte(k), old: clone(old), new: clone(new)})
		}
	}
	return out, nil
}

func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte(nil), b...)
}
