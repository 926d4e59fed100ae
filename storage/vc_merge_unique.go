package storage

import (
	"bytes"
	"context"
	"errors"
	"io"

	"github.com/dumbodb/dumbodb/index"

	"github.com/dolthub/dolt/go/store/prolly"
	"github.com/dolthub/dolt/go/store/prolly/tree"
	"github.com/dolthub/dolt/go/store/val"
)

// A merge's unique-index clashes: documents the merge changed that claim
// a key another document holds go back to ours' version and become
// conflicts.

// mergedDoc is a document a three-way merge changed relative to ours.
type mergedDoc struct {
	key          []byte
	ours, merged []byte // nil: absent
	reverted     bool   // ours is back in place (a unique-index clash)
	// oursKeys and mergedKeys are its entries' key fields per checked
	// unique index.
	oursKeys, mergedKeys [][][]byte
}

func (m *mergedDoc) keys(i int) [][]byte {
	if m.reverted {
		return m.oursKeys[i]
	}
	return m.mergedKeys[i]
}

// uniqueClashes finds the documents a merge added or changed (relative to
// ours) that claim a key of a unique index another document holds. Each
// gets ours' version back in the merged map (or is removed, when ours
// lacks it) and becomes a conflict with theirs' version as theirs. Only
// the merge's changes are looked at, so the cost follows their size;
// documents merge leaves as in ours are checked through ours' index.
func (d *Database) uniqueClashes(ctx context.Context, info CollectionInfo, o *collection,
	baseMap, oursMap, theirsMap, merged prolly.Map) (prolly.Map, []conflictRec, error) {
	specs, err := specsOf(info)
	if err != nil {
		return merged, nil, err
	}
	// A prepareUnique index takes no new duplicates from a merge either.
	var checked []*indexState // ours' states of the unique indexes
	for _, s := range specs {
		if !s.RefusesDuplicates() {
			continue
		}
		// Ours' entries serve when the merged spec differs from ours' in
		// nothing the entries depend on (theirs set prepareUnique).
		if ix := o.index(s.Name); ix != nil && index.SameEntries(ix.spec, s) {
			checked = append(checked, ix)
		}
		// An index ours lacks is built after the merge, which checks it.
	}
	if len(checked) == 0 || merged.HashOf() == oursMap.HashOf() {
		return merged, nil, nil
	}
	var docs []*mergedDoc
	err = prolly.DiffMaps(ctx, oursMap, merged, false, func(ctx context.Context, df tree.Diff) error {
		m := &mergedDoc{key: append([]byte(nil), keyBytes(val.Tuple(df.Key))...)}
		var err error
		if m.ours, err = diffDoc(ctx, d.ns, df.From); err != nil {
			return err
		}
		if m.merged, err = diffDoc(ctx, d.ns, df.To); err != nil {
			return err
		}
		for _, ix := range checked {
			ok, _, err := keysOf(ix.spec, m.ours)
			if err != nil {
				return err
			}
			mk, _, err := keysOf(ix.spec, m.merged)
			if err != nil {
				return err
			}
			m.oursKeys, m.mergedKeys = append(m.oursKeys, ok), append(m.mergedKeys, mk)
		}
		docs = append(docs, m)
		return nil
	})
	if !errors.Is(err, io.EOF) { // DiffMaps ends with io.EOF
		return merged, nil, err
	}
	byKey := make(map[string]*mergedDoc, len(docs))
	// claims[i][fields] are the changed documents whose current entries in
	// index i have those key fields.
	claims := make([]map[string][]*mergedDoc, len(checked))
	for i := range checked {
		claims[i] = map[string][]*mergedDoc{}
	}
	for _, m := range docs {
		byKey[string(m.key)] = m
		for i := range checked {
			for _, k := range m.mergedKeys[i] {
				claims[i][string(k)] = append(claims[i][string(k)], m)
			}
		}
	}
	clashes := func(m *mergedDoc) (bool, error) {
		for i, ix := range checked {
			_, added := keyDiff(m.oursKeys[i], m.mergedKeys[i])
			for _, k := range added {
				for _, other := range claims[i][string(k)] {
					if other != m && containsKey(other.keys(i), k) {
						return true, nil
					}
				}
				held, err := heldOutside(ctx, d.ns, ix, k, byKey)
				if err != nil || held {
					return held, err
				}
			}
		}
		return false, nil
	}
	var reverted []*mergedDoc
	for again := true; again; {
		again = false
		for _, m := range docs {
			if m.reverted {
				continue
			}
			clash, err := clashes(m)
			if err != nil {
				return merged, nil, err
			}
			if !clash {
				continue
			}
			m.reverted, again = true, true
			reverted = append(reverted, m)
			for i := range checked {
				for _, k := range m.oursKeys[i] {
					claims[i][string(k)] = append(claims[i][string(k)], m)
				}
			}
		}
	}
	if len(reverted) == 0 {
		return merged, nil, nil
	}
	ed := newEdits()
	recs := make([]conflictRec, 0, len(reverted))
	for _, m := range reverted {
		ed.ReplaceOrInsert(&edit{key: m.key, value: m.ours})
		rec := conflictRec{key: m.key, ours: m.ours}
		for _, side := range []struct {
			dst *[]byte
			src prolly.Map
		}{{&rec.base, baseMap}, {&rec.theirs, theirsMap}} {
			v, found, err := lookup(ctx, d.ns, side.src, nil, m.key)
			if err != nil {
				return merged, nil, err
			}
			if found {
				*side.dst = append([]byte(nil), v...)
			}
		}
		recs = append(recs, rec)
	}
	merged, err = foldEdits(ctx, d.ns, &collection{base: merged, edits: ed}, d.largeDoc())
	return merged, recs, err
}

func containsKey(keys [][]byte, k []byte) bool {
	for _, x := range keys {
		if bytes.Equal(x, k) {
			return true
		}
	}
	return false
}

// heldOutside reports whether a document the merge left as in ours holds
// key fields in ours' index ix.
func heldOutside(ctx context.Context, ns tree.NodeStore, ix *indexState, fields []byte, changed map[string]*mergedDoc) (bool, error) {
	it, err := newIndexIterator(ctx, ns, ix.base, ix.edits, prefixInterval(fields))
	if err != nil {
		return false, err
	}
	for {
		_, id, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if _, ok := changed[string(id)]; !ok {
			return true, nil
		}
	}
}
