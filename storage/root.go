package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/dolthub/dolt/go/store/prolly"
	"github.com/dolthub/dolt/go/store/prolly/tree"
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
	ci.Options, _ = doc.Lookup("options").DocumentOK()
	ci.Options = append(bsoncore.Document(nil), ci.Options...)
	return ci, nil
}

// rootState is one immutable state of a branch: the root value and the maps
// it names, already loaded. Readers share it without locks.
type rootState struct {
	root    prolly.AddressMap
	catalog prolly.Map
	colls   map[string]*collection
}

type collection struct {
	info CollectionInfo
	data prolly.Map
}

func emptyRootState(ctx context.Context, ns tree.NodeStore) (*rootState, error) {
	cat, err := emptyMap(ctx, ns)
	if err != nil {
		return nil, err
	}
	root, err := prolly.NewEmptyAddressMap(ns)
	if err != nil {
		return nil, err
	}
	ed := root.Editor()
	if err := ed.Update(ctx, rootCatalog, cat.HashOf()); err != nil {
		return nil, err
	}
	if root, err = ed.Flush(ctx); err != nil {
		return nil, err
	}
	return &rootState{root: root, catalog: cat, colls: map[string]*collection{}}, nil
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
	st := &rootState{root: root, colls: map[string]*collection{}}
	catAddr, err := root.Get(ctx, rootCatalog)
	if err != nil {
		return nil, err
	}
	if st.catalog, err = loadMap(ctx, ns, catAddr); err != nil {
		return nil, fmt.Errorf("load catalog: %w", err)
	}
	it, err := st.catalog.IterAll(ctx)
	if err != nil {
		return nil, err
	}
	for {
		k, v, err := it.Next(ctx)
		if err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, err
		}
		raw, err := valueBytes(ctx, ns, v)
		if err != nil {
			return nil, err
		}
		info, err := decodeCollectionInfo(raw)
		if err != nil {
			return nil, err
		}
		name := string(keyBytes(k))
		dataAddr, err := root.Get(ctx, rootDataPrefix+name)
		if err != nil {
			return nil, err
		}
		data, err := loadMap(ctx, ns, dataAddr)
		if err != nil {
			return nil, fmt.Errorf("load collection %q: %w", name, err)
		}
		st.colls[name] = &collection{info: info, data: data}
	}
	return st, nil
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
