package storage

import (
	"context"
	"errors"
	"fmt"
	"github.com/dumbodb/dumbodb/storage/doctree"
	"io"
	"sort"
	"strings"

	"github.com/dolthub/dolt/go/store/hash"
	"github.com/dolthub/dolt/go/store/prolly"
	"github.com/dolthub/dolt/go/store/prolly/tree"
	"github.com/dolthub/dolt/go/store/val"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Root entry names (docs/format/root.md).
const (
	rootCatalog         = "catalog"
	rootDataPrefix      = "data/"
	rootMerge           = "merge"
	rootMergeKey        = "state"
	rootConflictsPrefix = "conflicts/"
)

// CollectionInfo is a collection's catalog entry.
type CollectionInfo struct {
	Name    string
	UUID    [16]byte
	Options bsoncore.Document // create options as given; never nil
	// Indexes are the secondary index specs, as listIndexes shows them.
	Indexes []bsoncore.Document
}

// IsView reports whether the entry is a view's (docs/design/views.md) or
// a time-series collection's (docs/format/timeseries.md): neither holds
// documents of its own. The time-series collection's bucket collection,
// system.buckets.<name>, has the same timeseries option but is an ordinary
// collection.
func (ci CollectionInfo) IsView() bool {
	if _, ok := ci.Options.Lookup("viewOn").StringValueOK(); ok {
		return true
	}
	_, ts := ci.Options.Lookup("timeseries").DocumentOK()
	return ts && !strings.HasPrefix(ci.Name, "system.buckets.")
}

func (ci CollectionInfo) encode() []byte {
	opts := ci.Options
	if opts == nil {
		opts = bsoncore.NewDocumentBuilder().Build()
	}
	b := bsoncore.NewDocumentBuilder().
		AppendString("name", ci.Name).
		AppendString("type", "collection").
		AppendBinary("uuid", 4, ci.UUID[:]).
		AppendDocument("options", opts)
	if len(ci.Indexes) > 0 {
		arr := bsoncore.NewArrayBuilder()
		for _, s := range ci.Indexes {
			arr.AppendDocument(s)
		}
		b.AppendArray("indexes", arr.Build())
	}
	return b.Build()
}

// clone copies ci's documents, which may share bytes with a request.
func (ci CollectionInfo) clone() CollectionInfo {
	ci.Options = append(bsoncore.Document(nil), ci.Options...)
	specs := ci.Indexes[:0:0]
	for _, s := range ci.Indexes {
		specs = append(specs, append(bsoncore.Document(nil), s...))
	}
	ci.Indexes = specs
	return ci
}

func decodeCollectionInfo(b []byte) (CollectionInfo, error) {
	doc := bsoncore.Document(b)
	if err := doc.Validate(); err != nil {
		return CollectionInfo{}, fmt.Errorf("catalog entry: %w", err)
	}
	var ci CollectionInfo
	ci.Name = doc.Lookup("name").StringValue()
	if _, data, ok := doc.Lookup("uuid").BinaryOK(); ok && len(data) == 16 {
		copy(ci.UUID[:], data)
	}
	opts, _ := doc.Lookup("options").DocumentOK()
	ci.Options = append(bsoncore.Document(nil), opts...)
	if arr, ok := doc.Lookup("indexes").ArrayOK(); ok {
		vals, _ := arr.Values()
		for _, v := range vals {
			if d, ok := v.DocumentOK(); ok {
				ci.Indexes = append(ci.Indexes, append(bsoncore.Document(nil), d...))
			}
		}
	}
	return ci, nil
}

// rootState is one immutable state of a branch: the checkpointed maps, the
// edits acknowledged since, and the catalog. Readers share it without locks.
type rootState struct {
	colls collMap
	lsn   uint64 // last log record applied
	// ckptLSN is the last log record the durable working root includes;
	// the log after it is needed to rebuild this state.
	ckptLSN uint64
	// checkpointed is false when anything differs from the working root
	// last written to Dolt.
	checkpointed bool
	// root is that working root; valid when checkpointed.
	root prolly.AddressMap
	// merge is the state of a merge in progress (nil: none) and conflicts
	// its unresolved conflicts per collection.
	merge     bsoncore.Document
	conflicts map[string]prolly.Map
	// superseded is the memory of the edits publishing this state
	// replaced or removed, which only the states before it hold.
	superseded int64
}

// collection is one collection's state within a rootState.
type collection struct {
	info      CollectionInfo
	base      prolly.Map // documents as of the last checkpoint
	edits     *edits     // changes since; nil when none
	count     int        // live documents
	editBytes int64      // memory of the edits, index edits included
	// superseded is the memory of the edits that the transaction owning
	// this copy replaced or removed: the states published before still
	// hold them, and the history bounds what they keep (history.go).
	superseded int64
	indexes    []*indexState
	// capped is a capped collection's insertion order (nil: not capped).
	capped *cappedState
}

// loadRootState reads a root value and every map it names.
func loadRootState(ctx context.Context, ns tree.NodeStore, addr [20]byte) (*rootState, error) {
	nd, err := ns.Read(ctx, addr)
	if err != nil {
		return nil, fmt.Errorf("read root %x: %w", addr, err)
	}
	root, err := prolly.NewAddressMap(nd, ns)
	if err != nil {
		return nil, err
	}
	st, err := upgradeRoot(ctx, ns, &rootState{checkpointed: true, root: root})
	if err != nil {
		return nil, fmt.Errorf("root %x: %w", addr, err)
	}
	if err := loadMergeState(ctx, ns, root, st); err != nil {
		return nil, err
	}
	catAddr, err := root.Get(ctx, rootCatalog)
	if err != nil {
		return nil, err
	}
	if catAddr.IsEmpty() {
		return st, nil
	}
	catalog, err := loadMap(ctx, ns, catAddr)
	if err != nil {
		return nil, fmt.Errorf("load catalog: %w", err)
	}
	it, err := catalog.IterAll(ctx)
	if err != nil {
		return nil, err
	}
	colls := map[string]*collection{}
	for {
		k, v, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			st.colls = newCollMap(colls)
			return st, nil
		}
		if err != nil {
			return nil, err
		}
		c, err := loadCollection(ctx, ns, root, string(keyBytes(k)), v)
		if err != nil {
			return nil, err
		}
		colls[c.info.Name] = c
	}
}

func loadCollection(ctx context.Context, ns tree.NodeStore, root prolly.AddressMap, name string, catalogValue []byte) (*collection, error) {
	raw, err := valueBytes(ctx, ns, catalogValue)
	if err != nil {
		return nil, err
	}
	info, err := decodeCollectionInfo(raw)
	if err != nil {
		return nil, err
	}
	info.Name = name
	dataAddr, err := root.Get(ctx, rootDataPrefix+name)
	if err != nil {
		return nil, err
	}
	data, err := loadMap(ctx, ns, dataAddr)
	if err != nil {
		return nil, fmt.Errorf("load collection %q: %w", name, err)
	}
	n, err := data.Count()
	if err != nil {
		return nil, err
	}
	c := &collection{info: info, base: data, count: n}
	if err := loadIndexes(ctx, ns, root, c); err != nil {
		return nil, err
	}
	if err := loadCapped(ctx, ns, root, c); err != nil {
		return nil, err
	}
	return c, nil
}

// buildRoot writes the root value for a state whose collections have no
// edits (after a checkpoint folded them into their base maps).
func buildRoot(ctx context.Context, ns tree.NodeStore, st *rootState) (prolly.AddressMap, error) {
	if err := syncStateIndexes(ctx, ns, st); err != nil {
		return prolly.AddressMap{}, err
	}
	if err := syncStateCapped(ctx, ns, st); err != nil {
		return prolly.AddressMap{}, err
	}
	names := st.collectionNames()
	catalog, err := buildCatalog(ctx, ns, st, names)
	if err != nil {
		return prolly.AddressMap{}, err
	}
	root, err := prolly.NewEmptyAddressMap(ns)
	if err != nil {
		return prolly.AddressMap{}, err
	}
	ed := root.Editor()
	if err := ed.Update(ctx, rootCatalog, catalog.HashOf()); err != nil {
		return prolly.AddressMap{}, err
	}
	if err := putRootFormat(ctx, ns, ed); err != nil {
		return prolly.AddressMap{}, err
	}
	for _, n := range names {
		if err := ed.Update(ctx, rootDataPrefix+n, st.colls.get(n).base.HashOf()); err != nil {
			return prolly.AddressMap{}, err
		}
		if err := putIndexRoots(ctx, ed, st.colls.get(n)); err != nil {
			return prolly.AddressMap{}, err
		}
		if err := putCappedRoot(ctx, ed, st.colls.get(n)); err != nil {
			return prolly.AddressMap{}, err
		}
	}
	if err := putMergeState(ctx, ns, ed, st); err != nil {
		return prolly.AddressMap{}, err
	}
	return ed.Flush(ctx)
}

func buildCatalog(ctx context.Context, ns tree.NodeStore, st *rootState, names []string) (prolly.Map, error) {
	tuples := make([]val.Tuple, 0, 2*len(names)) // key, value, key, value, ... sorted
	for _, n := range names {
		k, err := doctree.KeyTuple(ns, []byte(n))
		if err != nil {
			return prolly.Map{}, err
		}
		v, err := valueTuple(ctx, ns, st.colls.get(n).info.encode())
		if err != nil {
			return prolly.Map{}, err
		}
		tuples = append(tuples, k, v)
	}
	return prolly.NewMapFromTuples(ctx, ns, keyDesc, valDesc, tuples...)
}

// putMergeState adds the merge state and conflict maps to a root.
func putMergeState(ctx context.Context, ns tree.NodeStore, ed prolly.AddressMapEditor, st *rootState) error {
	if st.merge != nil {
		m, err := singleEntryMap(ctx, ns, rootMergeKey, st.merge)
		if err != nil {
			return err
		}
		if err := ed.Update(ctx, rootMerge, m.HashOf()); err != nil {
			return err
		}
	}
	for coll, m := range st.conflicts {
		if err := ed.Update(ctx, rootConflictsPrefix+coll, m.HashOf()); err != nil {
			return err
		}
	}
	return nil
}

// loadMergeState reads the merge state and conflict maps of a root.
func loadMergeState(ctx context.Context, ns tree.NodeStore, root prolly.AddressMap, st *rootState) error {
	return root.IterAll(ctx, func(name string, addr hash.Hash) error {
		switch {
		case name == rootMerge:
			var err error
			st.merge, err = singleEntry(ctx, ns, addr, rootMergeKey)
			return err
		case strings.HasPrefix(name, rootConflictsPrefix):
			m, err := loadMap(ctx, ns, addr)
			if err != nil {
				return err
			}
			if st.conflicts == nil {
				st.conflicts = map[string]prolly.Map{}
			}
			st.conflicts[strings.TrimPrefix(name, rootConflictsPrefix)] = m
		}
		return nil
	})
}

func (st *rootState) hasMerge() bool { return st.merge != nil }

// withoutMerge is st with its merge state and conflicts dropped and its
// root rebuilt without them. st must be checkpointed.
func withoutMerge(ctx context.Context, ns tree.NodeStore, st *rootState) (*rootState, error) {
	if !st.hasMerge() && len(st.conflicts) == 0 {
		return st, nil
	}
	clean := *st
	clean.merge, clean.conflicts = nil, nil
	root, err := buildRoot(ctx, ns, &clean)
	clean.root = root
	return &clean, err
}

func (st *rootState) collectionNames() []string {
	names := make([]string, 0, st.colls.len())
	for n := range st.colls.all() {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// collectionInfos lists the collections' catalog entries, sorted by name.
func (st *rootState) collectionInfos() []CollectionInfo {
	names := st.collectionNames()
	out := make([]CollectionInfo, len(names))
	for i, n := range names {
		out[i] = st.colls.get(n).info
	}
	return out
}

func sortInfos(infos []CollectionInfo) {
	sort.Slice(infos, func(i, j int) bool { return infos[i].Name < infos[j].Name })
}
