package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/dolthub/dolt/go/store/prolly"
	"github.com/dolthub/dolt/go/store/prolly/tree"
	"github.com/dolthub/dolt/go/store/val"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Root entry names (docs/format/root.md).
const (
	rootCatalog    = "catalog"
	rootDataPrefix = "data/"
)

// CollectionInfo is a collection's catalog entry.
type CollectionInfo struct {
	Name    string
	UUID    [16]byte
	Options bsoncore.Document // create options as given; never nil
}

func (ci CollectionInfo) encode() []byte {
	opts := ci.Options
	if opts == nil {
		opts = bsoncore.NewDocumentBuilder().Build()
	}
	return bsoncore.NewDocumentBuilder().
		AppendString("name", ci.Name).
		AppendString("type", "collection").
		AppendBinary("uuid", 4, ci.UUID[:]).
		AppendDocument("options", opts).
		Build()
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
	return ci, nil
}

// rootState is one immutable state of a branch: the checkpointed maps, the
// edits acknowledged since, and the catalog. Readers share it without locks.
type rootState struct {
	colls map[string]*collection
	lsn   uint64 // last log record applied
	// checkpointed is false when anything differs from the working root
	// last written to Dolt.
	checkpointed bool
}

// collection is one collection's state within a rootState.
type collection struct {
	info      CollectionInfo
	base      prolly.Map // documents as of the last checkpoint
	edits     *edits     // changes since; nil when none
	count     int        // live documents
	editBytes int64
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
	st := &rootState{colls: map[string]*collection{}, checkpointed: true}
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
	for {
		k, v, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			return st, nil
		}
		if err != nil {
			return nil, err
		}
		c, err := loadCollection(ctx, ns, root, string(keyBytes(k)), v)
		if err != nil {
			return nil, err
		}
		st.colls[c.info.Name] = c
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
	return &collection{info: info, base: data, count: n}, nil
}

// buildRoot writes the root value for a state whose collections have no
// edits (after a checkpoint folded them into their base maps).
func buildRoot(ctx context.Context, ns tree.NodeStore, colls map[string]*collection) (prolly.AddressMap, error) {
	names := make([]string, 0, len(colls))
	for n := range colls {
		names = append(names, n)
	}
	sort.Strings(names)
	tuples := make([]val.Tuple, 0, 2*len(names)) // key, value, key, value, ... sorted
	for _, n := range names {
		k, err := keyTuple(ns, []byte(n))
		if err != nil {
			return prolly.AddressMap{}, err
		}
		v, err := valueTuple(ctx, ns, colls[n].info.encode())
		if err != nil {
			return prolly.AddressMap{}, err
		}
		tuples = append(tuples, k, v)
	}
	catalog, err := prolly.NewMapFromTuples(ctx, ns, keyDesc, valDesc, tuples...)
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
	for _, n := range names {
		if err := ed.Update(ctx, rootDataPrefix+n, colls[n].base.HashOf()); err != nil {
			return prolly.AddressMap{}, err
		}
	}
	return ed.Flush(ctx)
}

func (st *rootState) collectionNames() []string {
	names := make([]string, 0, len(st.colls))
	for n := range st.colls {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func sortInfos(infos []CollectionInfo) {
	sort.Slice(infos, func(i, j int) bool { return infos[i].Name < infos[j].Name })
}
