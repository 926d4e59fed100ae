package storage

import (
	"context"
	"fmt"
	"github.com/dumbodb/dumbodb/internal/formatversion"
	"github.com/dumbodb/dumbodb/storage/doctree"

	"github.com/dolthub/dolt/go/store/hash"
	"github.com/dolthub/dolt/go/store/prolly"
	"github.com/dolthub/dolt/go/store/prolly/tree"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// A root records its format version in its format entry
// (docs/format/root.md, "Format entry"; docs/format/versions.md).
const (
	rootFormat    = "format"
	rootFormatKey = "version"
)

// rootUpgrades are the steps from each older root version to the next.
var rootUpgrades = formatversion.Steps[*rootState]{
	// Version 1 is version 2 without the format entry: the maps read the
	// same, and buildRoot records version 2 in the next root it writes.
	1: func(st *rootState) (*rootState, error) { return st, nil },
}

// singleEntryMap is a map holding one document under key, as the merge
// state and the format entry are stored.
func singleEntryMap(ctx context.Context, ns tree.NodeStore, key string, doc bsoncore.Document) (prolly.Map, error) {
	k, err := doctree.KeyTuple(ns, []byte(key))
	if err != nil {
		return prolly.Map{}, err
	}
	v, err := valueTuple(ctx, ns, doc)
	if err != nil {
		return prolly.Map{}, err
	}
	return prolly.NewMapFromTuples(ctx, ns, keyDesc, valDesc, k, v)
}

// singleEntry reads the document under key from the map at addr.
func singleEntry(ctx context.Context, ns tree.NodeStore, addr hash.Hash, key string) (bsoncore.Document, error) {
	m, err := loadMap(ctx, ns, addr)
	if err != nil {
		return nil, err
	}
	k, err := doctree.KeyTuple(ns, []byte(key))
	if err != nil {
		return nil, err
	}
	doc, _, err := getValue(ctx, ns, m, k)
	return doc, err
}

// rootVersionWritten is the version buildRoot writes: the current one,
// except in tests that make data as another version would.
var rootVersionWritten = formatversion.Root.Current

// putRootFormat records the format version in a root (version 1 roots
// have no entry).
func putRootFormat(ctx context.Context, ns tree.NodeStore, ed prolly.AddressMapEditor) error {
	if rootVersionWritten < 2 {
		return nil
	}
	doc := bsoncore.NewDocumentBuilder().AppendInt32(rootFormatKey, int32(rootVersionWritten)).Build()
	m, err := singleEntryMap(ctx, ns, rootFormatKey, doc)
	if err != nil {
		return err
	}
	return ed.Update(ctx, rootFormat, m.HashOf())
}

// rootVersion reads a root's format version: 1 when it has no format
// entry.
func rootVersion(ctx context.Context, ns tree.NodeStore, root prolly.AddressMap) (uint32, error) {
	addr, err := root.Get(ctx, rootFormat)
	if err != nil || addr.IsEmpty() {
		return 1, err
	}
	doc, err := singleEntry(ctx, ns, addr, rootFormatKey)
	if err != nil {
		return 0, fmt.Errorf("root format entry: %w", err)
	}
	v, ok := doc.Lookup(rootFormatKey).Int32OK()
	if !ok || v < 1 {
		return 0, fmt.Errorf("root format entry: no version in %v", doc)
	}
	return uint32(v), nil
}

// upgradeRoot checks a loaded root's version and upgrades its state.
func upgradeRoot(ctx context.Context, ns tree.NodeStore, st *rootState) (*rootState, error) {
	v, err := rootVersion(ctx, ns, st.root)
	if err != nil {
		return nil, err
	}
	return formatversion.Upgrade(formatversion.Root, v, st, rootUpgrades)
}

// sameData reports whether a root holds what the root at other does: the
// same root, or roots that differ only in their format entry (a branch
// committed by an older version and written back since).
func sameData(ctx context.Context, ns tree.NodeStore, root prolly.AddressMap, other hash.Hash) (bool, error) {
	if root.HashOf() == other {
		return true, nil
	}
	nd, err := ns.Read(ctx, other)
	if err != nil {
		return false, fmt.Errorf("read root %s: %w", other, err)
	}
	o, err := prolly.NewAddressMap(nd, ns)
	if err != nil {
		return false, err
	}
	a, err := entriesBesideFormat(ctx, root)
	if err != nil {
		return false, err
	}
	b, err := entriesBesideFormat(ctx, o)
	if err != nil {
		return false, err
	}
	if len(a) != len(b) {
		return false, nil
	}
	for name, addr := range a {
		if b[name] != addr {
			return false, nil
		}
	}
	return true, nil
}

func entriesBesideFormat(ctx context.Context, root prolly.AddressMap) (map[string]hash.Hash, error) {
	out := map[string]hash.Hash{}
	err := root.IterAll(ctx, func(name string, addr hash.Hash) error {
		if name != rootFormat {
			out[name] = addr
		}
		return nil
	})
	return out, err
}
