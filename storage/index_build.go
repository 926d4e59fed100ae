package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/dumbodb/dumbodb/index"
	"github.com/dumbodb/dumbodb/interrupt"
	"github.com/dumbodb/dumbodb/storage/doctree"

	"github.com/dolthub/dolt/go/store/prolly"
	"github.com/dolthub/dolt/go/store/prolly/tree"
	"github.com/dolthub/dolt/go/store/val"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// specsOf parses a catalog entry's index specs.
func specsOf(info CollectionInfo) ([]*index.Spec, error) {
	specs := make([]*index.Spec, 0, len(info.Indexes))
	for _, raw := range info.Indexes {
		s, err := index.LoadSpec(raw, compilePartialFilter)
		if err != nil {
			return nil, fmt.Errorf("collection %q: %w", info.Name, err)
		}
		specs = append(specs, s)
	}
	return specs, nil
}

// builtEntry is an index entry a diff added: its key fields, the _id key
// and its value.
type builtEntry struct{ fields, id, value []byte }

// setIndexes makes c's indexes exactly specs: kept ones stay as they are,
// new ones are taken from prep or built from the collection's documents,
// all in one scan.
func (c *collection) setIndexes(ctx context.Context, ns tree.NodeStore, specs []*index.Spec, prep *PreparedIndexes) error {
	out := make([]*indexState, len(specs))
	var missing []*index.Spec
	for i, s := range specs {
		ix, err := c.keptIndex(ctx, ns, s, prep)
		if err != nil {
			return err
		}
		if out[i] = ix; ix == nil {
			missing = append(missing, s)
		}
	}
	if len(missing) > 0 {
		it, err := newIterator(ctx, ns, c.base, c.edits)
		if err != nil {
			return err
		}
		built, err := buildIndexes(ctx, ns, c.info.Name, missing, it)
		if err != nil {
			return err
		}
		for i := range out {
			if out[i] == nil {
				out[i], built = built[0], built[1:]
			}
		}
	}
	for _, ix := range c.indexes {
		if !containsIndex(out, ix) {
			c.dropIndexEdits(ix)
		}
	}
	c.indexes = out
	return nil
}

// keptIndex is c's state of spec s when c has it (collMod may have
// changed what its entries do not depend on) or prep built it, else nil.
func (c *collection) keptIndex(ctx context.Context, ns tree.NodeStore, s *index.Spec, prep *PreparedIndexes) (*indexState, error) {
	ix := c.index(s.Name)
	switch {
	case ix != nil && string(ix.spec.Raw) == string(s.Raw):
		return ix, nil
	case ix != nil && index.SameEntries(ix.spec, s):
		// hidden, expireAfterSeconds: keep the entries under the new spec
		kept := *ix
		kept.spec = s
		return &kept, nil
	}
	return prep.take(ctx, ns, c, s.Raw)
}

func containsIndex(list []*indexState, ix *indexState) bool {
	for _, x := range list {
		if x == ix {
			return true
		}
	}
	return false
}

// dropIndexEdits gives back the memory a dropped index's edits took.
func (c *collection) dropIndexEdits(ix *indexState) {
	if ix.edits == nil {
		return
	}
	// Every layer's edits, shadowed ones too: the byte count covers them.
	ix.edits.eachHeld(func(e *edit) { c.dropEdit(e, nil) })
}

// SetIndexes replaces a collection's secondary index specs (createIndexes,
// dropIndexes): new indexes are built from the documents now, or taken
// from prepared (PrepareIndexes) and caught up; dropped ones disappear. The
// catalog entry is logged; index entries never are, since they derive from
// the documents.
func (tx *Tx) SetIndexes(ctx context.Context, coll string, raws []bsoncore.Document, prepared ...*PreparedIndexes) error {
	_, touched := tx.overlay[coll]
	c, err := tx.mutableData(coll)
	if err != nil {
		return err
	}
	before, info := c.info, c.info
	info.Indexes = raws
	if len(prepared) > 0 && prepared[0] != nil {
		p := *prepared[0]
		// Nothing wrote the collection since the build's snapshot: the
		// built indexes need no catching up.
		p.current = !touched && tx.base.colls.get(coll) == p.from
		tx.prepared = &p
		defer func() { tx.prepared = nil }()
	}
	if err := tx.applyInfo(ctx, c, info); err != nil {
		return err
	}
	tx.noteMeta(before, info)
	tx.ops = append(tx.ops, walOp{op: opMeta, coll: coll, value: info.encode()})
	return nil
}

// SetOptions replaces a collection's options (collMod); desc is what the
// command asked for, which its change event reports.
func (tx *Tx) SetOptions(coll string, options, desc bsoncore.Document) error {
	c, err := tx.mutable(coll)
	if err != nil {
		return err
	}
	before := c.info
	c.info.Options = options
	if tx.capture {
		tx.events = append(tx.events, ChangeEvent{Op: "modify", Coll: coll, UUID: c.info.UUID, Desc: desc,
			Before: bsoncore.NewDocumentBuilder().AppendDocument("collectionOptions", optionsWithUUID(before)).Build()})
	}
	tx.ops = append(tx.ops, walOp{op: opMeta, coll: coll, value: c.info.encode()})
	return nil
}

// optionsWithUUID is a collection's options as a modify event's
// stateBeforeChange shows them: with its uuid first.
func optionsWithUUID(info CollectionInfo) bsoncore.Document {
	b := bsoncore.NewDocumentBuilder().AppendBinary("uuid", 4, info.UUID[:])
	els, _ := info.Options.Elements()
	for _, el := range els {
		b.AppendValue(el.Key(), el.Value())
	}
	return b.Build()
}

func (tx *Tx) applyInfo(ctx context.Context, c *collection, info CollectionInfo) error {
	specs, err := specsOf(info)
	if err != nil {
		return err
	}
	if err := c.setIndexes(ctx, tx.ns, specs, tx.prepared); err != nil {
		return err
	}
	c.info = info
	return nil
}

// redoMeta replays a catalog entry change.
func (tx *Tx) redoMeta(ctx context.Context, o walOp) error {
	c, err := tx.mutable(o.coll)
	if err != nil {
		return err
	}
	info, err := decodeCollectionInfo(o.value)
	if err != nil {
		return err
	}
	info.Name = o.coll
	before := c.info
	if err := tx.applyInfo(ctx, c, info); err != nil {
		return err
	}
	tx.noteMeta(before, info)
	tx.ops = append(tx.ops, o)
	return nil
}

// foldIndexes folds a collection's index edits at a checkpoint; data is
// the folded document map, which the folded indexes now describe.
func foldIndexes(ctx context.Context, ns tree.NodeStore, c *collection, data prolly.Map) ([]*indexState, error) {
	out := make([]*indexState, len(c.indexes))
	for i, ix := range c.indexes {
		m, err := foldEdits(ctx, ns, &collection{base: ix.base, edits: ix.edits}, nil)
		if err != nil {
			return nil, fmt.Errorf("index %s: %w", ix.spec.Name, err)
		}
		out[i] = &indexState{spec: ix.spec, base: m, of: &data, multikey: ix.multikey}
	}
	return out, nil
}

// syncIndexes brings the indexes of an edit-free collection up to date
// with its document map after the map was replaced wholesale (merge,
// conflict resolution) or loaded without them. It returns c itself when
// nothing had to change, else an updated copy.
func syncIndexes(ctx context.Context, ns tree.NodeStore, c *collection) (*collection, error) {
	specs, err := specsOf(c.info)
	if err != nil {
		return nil, err
	}
	if indexesInSync(c, specs) {
		return c, nil
	}
	out := make([]*indexState, len(specs))
	var missing []*index.Spec
	for i, s := range specs {
		ix, err := syncIndex(ctx, ns, c, s)
		if err != nil {
			return nil, err
		}
		if out[i] = ix; ix == nil {
			missing = append(missing, s)
		}
	}
	if len(missing) > 0 {
		it, err := newIterator(ctx, ns, c.base, nil)
		if err != nil {
			return nil, err
		}
		built, err := buildIndexes(ctx, ns, c.info.Name, missing, it)
		if err != nil {
			return nil, err
		}
		for i := range out {
			if out[i] == nil {
				out[i], built = built[0], built[1:]
				out[i].of = &c.base
			}
		}
	}
	next := *c
	next.indexes = out
	return &next, nil
}

func indexesInSync(c *collection, specs []*index.Spec) bool {
	if len(c.indexes) != len(specs) {
		return false
	}
	for i, ix := range c.indexes {
		if string(ix.spec.Raw) != string(specs[i].Raw) || !ix.current(c.base) {
			return false
		}
	}
	return true
}

// current reports whether ix indexes exactly the document map data.
func (ix *indexState) current(data prolly.Map) bool {
	return ix.of != nil && ix.of.HashOf() == data.HashOf() && (ix.edits == nil || ix.edits.Len() == 0)
}

// syncIndex finds a state of spec among c's candidates and diffs it up to
// c's map; nil when there is none, and the index must be built afresh.
func syncIndex(ctx context.Context, ns tree.NodeStore, c *collection, s *index.Spec) (*indexState, error) {
	for _, ix := range c.indexes {
		if string(ix.spec.Raw) != string(s.Raw) || ix.of == nil || (ix.edits != nil && ix.edits.Len() > 0) {
			continue
		}
		if ix.of.HashOf() == c.base.HashOf() {
			return ix, nil
		}
		return diffIndex(ctx, ns, c.info.Name, ix, c.base)
	}
	return nil, nil
}

// diffIndex applies the document changes from ix.of to data to ix.
func diffIndex(ctx context.Context, ns tree.NodeStore, coll string, ix *indexState, data prolly.Map) (*indexState, error) {
	next := &indexState{spec: ix.spec, multikey: ix.multikey, edits: newEdits()}
	var added []builtEntry
	var interrupt interrupt.Pacer
	err := prolly.DiffMaps(ctx, *ix.of, data, false, func(ctx context.Context, d tree.Diff) error {
		if err := interrupt.Check(ctx); err != nil {
			return err
		}
		id := append([]byte(nil), keyBytes(val.Tuple(d.Key))...)
		oldDoc, err := diffDoc(ctx, ns, d.From)
		if err != nil {
			return err
		}
		newDoc, err := diffDoc(ctx, ns, d.To)
		if err != nil {
			return err
		}
		oldKeys, oldMK, err := keysOf(ix.spec, oldDoc)
		if err != nil {
			return err
		}
		newKeys, mk, err := keysOf(ix.spec, newDoc)
		if err != nil {
			return err
		}
		del, add := keyDiff(oldKeys, newKeys)
		for _, k := range del {
			next.edits.ReplaceOrInsert(&edit{key: entryKey(k, id)})
		}
		value := index.EntryValue(id, ix.spec.Covered(newDoc, mk))
		for _, k := range add {
			next.edits.ReplaceOrInsert(&edit{key: entryKey(k, id), value: value})
			added = append(added, builtEntry{k, id, value})
		}
		if newDoc != nil && oldDoc != nil {
			if !bytes.Equal(index.EntryValue(id, ix.spec.Covered(oldDoc, oldMK)), value) {
				for _, k := range newKeys {
					if !containsKey(add, k) {
						next.edits.ReplaceOrInsert(&edit{key: entryKey(k, id), value: value})
					}
				}
			}
		}
		next.multikey = next.multikey || mk
		return nil
	})
	if !errors.Is(err, io.EOF) { // DiffMaps ends with io.EOF
		return nil, err
	}
	if next.multikey {
		next.edits.ReplaceOrInsert(&edit{key: index.MultikeyMarker, value: []byte{}})
	}
	m, err := foldEdits(ctx, ns, &collection{base: ix.base, edits: next.edits}, nil)
	if err != nil {
		return nil, err
	}
	next.base, next.edits, next.of = m, newEdits(), &data
	return next, checkAddedUnique(ctx, ns, coll, next, added, data)
}

func diffDoc(ctx context.Context, ns tree.NodeStore, it tree.Item) ([]byte, error) {
	if it == nil {
		return nil, nil
	}
	b, err := valueBytes(ctx, ns, val.Tuple(it))
	return append([]byte(nil), b...), err
}

// checkAddedUnique fails when an entry a diff added to a unique index
// shares its key with another document's.
func checkAddedUnique(ctx context.Context, ns tree.NodeStore, coll string, ix *indexState, added []builtEntry, data prolly.Map) error {
	if !ix.spec.Unique {
		return nil
	}
	for _, e := range added {
		other, err := ix.holder(ctx, ns, e.fields, e.id)
		if err != nil || other == nil {
			if err != nil {
				return err
			}
			continue
		}
		doc, _, err := lookup(ctx, ns, data, nil, e.id)
		if err != nil {
			return err
		}
		return ix.duplicate(coll, e.fields, e.id, doc)
	}
	return nil
}

// loadIndexes reads a collection's index maps from a root, building any
// the root lacks (a root written before the index existed).
func loadIndexes(ctx context.Context, ns tree.NodeStore, root prolly.AddressMap, c *collection) error {
	specs, err := specsOf(c.info)
	if err != nil {
		return err
	}
	for _, s := range specs {
		addr, err := root.Get(ctx, indexRootName(c.info.Name, s.Name))
		if err != nil {
			return err
		}
		if addr.IsEmpty() {
			continue // syncIndexes builds it
		}
		m, err := loadMap(ctx, ns, addr)
		if err != nil {
			return fmt.Errorf("load index %s.%s: %w", c.info.Name, s.Name, err)
		}
		mk, err := hasKey(ctx, ns, m, index.MultikeyMarker)
		if err != nil {
			return err
		}
		data := c.base
		c.indexes = append(c.indexes, &indexState{spec: s, base: m, edits: newEdits(), of: &data, multikey: mk})
	}
	synced, err := syncIndexes(ctx, ns, c)
	if err != nil {
		return err
	}
	*c = *synced
	return nil
}

func hasKey(ctx context.Context, ns tree.NodeStore, m prolly.Map, key []byte) (bool, error) {
	k, err := doctree.KeyTuple(ns, key)
	if err != nil {
		return false, err
	}
	_, found, err := getValue(ctx, ns, m, k)
	return found, err
}

// putIndexRoots adds a collection's index maps to a root being built.
func putIndexRoots(ctx context.Context, ed prolly.AddressMapEditor, c *collection) error {
	for _, ix := range c.indexes {
		if err := ed.Update(ctx, indexRootName(c.info.Name, ix.spec.Name), ix.base.HashOf()); err != nil {
			return err
		}
	}
	return nil
}

// syncStateIndexes brings every collection of an edit-free state in line
// before its root is written, so that no root ever holds a stale index.
// Only collections whose indexes changed are replaced in st.colls; a
// published state is always in sync and so is never modified.
func syncStateIndexes(ctx context.Context, ns tree.NodeStore, st *rootState) error {
	changed := map[string]*collection{}
	for name, c := range st.colls.all() {
		synced, err := syncIndexes(ctx, ns, c)
		if err != nil {
			return fmt.Errorf("indexes of %s: %w", name, err)
		}
		if synced != c {
			changed[name] = synced
		}
	}
	if len(changed) > 0 { // a published state is in sync: never written
		st.colls = st.colls.with(changed)
	}
	return nil
}
