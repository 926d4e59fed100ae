package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/dumbodb/dumbodb/index"
	"github.com/dumbodb/dumbodb/interrupt"
	"github.com/dumbodb/dumbodb/mongoerr"

	"github.com/dolthub/dolt/go/store/prolly"
	"github.com/dolthub/dolt/go/store/prolly/tree"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// rootIndexPrefix names index maps in a root: index/<collection>/<index>.
const rootIndexPrefix = "index/"

func indexRootName(coll, name string) string { return rootIndexPrefix + coll + "/" + name }

// indexState is one secondary index of a collection, kept like the
// documents: a checkpointed prolly map plus the edits made since. Entry
// keys are the encoded key fields followed by the document's _id key; the
// value is the _id key, so a scan can fetch documents.
type indexState struct {
	spec  *index.Spec
	base  prolly.Map
	edits *edits
	// of is the document map that base indexes, when known; a state whose
	// document map was replaced (merge, conflict resolution) is brought up
	// to date by diffing of against the new map.
	of       *prolly.Map
	multikey bool
}

// IndexInfo describes one secondary index as a reader sees it.
type IndexInfo struct {
	Spec     *index.Spec
	Multikey bool
}

// DuplicateKeyError is a write that would give two documents one key of a
// unique index. It unwraps to MongoDB's E11000 error.
type DuplicateKeyError struct {
	Collection, Index    string
	KeyPattern, KeyValue bsoncore.Document
	// ID is the _id key of the document that was refused.
	ID []byte
}

func (e *DuplicateKeyError) Error() string {
	return fmt.Sprintf("E11000 duplicate key error collection: %s index: %s dup key: %s",
		e.Collection, e.Index, index.ShellDoc(e.KeyValue))
}

// Unwrap gives the MongoDB error, whose Info carries keyPattern and keyValue.
func (e *DuplicateKeyError) Unwrap() error {
	info := bsoncore.NewDocumentBuilder().AppendDocument("keyPattern", e.KeyPattern).
		AppendDocument("keyValue", e.KeyValue).Build()
	return &mongoerr.Error{Code: mongoerr.DuplicateKey, Msg: e.Error(), Info: info}
}

func cloneIndexes(in []*indexState) []*indexState {
	if in == nil {
		return nil
	}
	out := make([]*indexState, len(in))
	for i, ix := range in {
		c := *ix
		if c.edits == nil {
			c.edits = newEdits()
		} else {
			c.edits = c.edits.Clone()
		}
		out[i] = &c
	}
	return out
}

func (c *collection) index(name string) *indexState {
	for _, ix := range c.indexes {
		if ix.spec.Name == name {
			return ix
		}
	}
	return nil
}

func indexInfos(c *collection) []IndexInfo {
	out := make([]IndexInfo, len(c.indexes))
	for i, ix := range c.indexes {
		out[i] = IndexInfo{Spec: ix.spec, Multikey: ix.multikey}
	}
	return out
}

// indexChange is what one document write does to one index.
type indexChange struct {
	ix       *indexState
	del, add [][]byte // entry keys
	multikey bool
	value    []byte // the added entries' value (EntryValue)
}

// planIndexWrite works out the index entries replacing oldDoc by newDoc
// (either may be nil) takes, and refuses it when a unique index already
// holds one of the new keys for another document. Nothing is changed, so
// a refused write leaves the transaction as it was.
func (c *collection) planIndexWrite(ctx context.Context, ns tree.NodeStore, idKey, oldDoc, newDoc []byte) ([]indexChange, error) {
	changes := make([]indexChange, 0, len(c.indexes))
	for _, ix := range c.indexes {
		ch, err := ix.plan(ctx, ns, c.info.Name, idKey, oldDoc, newDoc)
		if err != nil {
			return nil, err
		}
		changes = append(changes, ch)
	}
	return changes, nil
}

func (ix *indexState) plan(ctx context.Context, ns tree.NodeStore, coll string, idKey, oldDoc, newDoc []byte) (indexChange, error) {
	ch := indexChange{ix: ix}
	oldKeys, oldMK, err := keysOf(ix.spec, oldDoc)
	if err != nil {
		return ch, err
	}
	newKeys, mk, err := keysOf(ix.spec, newDoc)
	if err != nil {
		return ch, err
	}
	ch.multikey = mk && !ix.multikey
	del, add := keyDiff(oldKeys, newKeys)
	for _, k := range add {
		// A prepareUnique index refuses new duplicates as a unique one
		// does; the duplicates it already holds stay.
		if ix.spec.RefusesDuplicates() {
			if err := ix.checkUnique(ctx, ns, coll, k, idKey, newDoc); err != nil {
				return ch, err
			}
		}
		ch.add = append(ch.add, entryKey(k, idKey))
	}
	for _, k := range del {
		ch.del = append(ch.del, entryKey(k, idKey))
	}
	newCov := ix.spec.Covered(newDoc, mk)
	ch.value = index.EntryValue(idKey, newCov)
	if len(newKeys) > 0 && len(oldKeys) > 0 {
		// Keys that stay must still carry the document's current key
		// values (1 -> 1.0 keeps the key but changes the value).
		if !bytes.Equal(ix.spec.Covered(oldDoc, oldMK), newCov) {
			for _, k := range newKeys {
				if !containsKey(add, k) {
					ch.add = append(ch.add, entryKey(k, idKey))
				}
			}
		}
	}
	return ch, nil
}

func keysOf(spec *index.Spec, doc []byte) ([][]byte, bool, error) {
	if doc == nil {
		return nil, false, nil
	}
	return spec.Keys(doc)
}

// keyDiff splits two sorted key sets into what goes and what comes.
func keyDiff(old, new [][]byte) (del, add [][]byte) {
	i, j := 0, 0
	for i < len(old) || j < len(new) {
		switch {
		case j == len(new) || (i < len(old) && bytes.Compare(old[i], new[j]) < 0):
			del = append(del, old[i])
			i++
		case i == len(old) || bytes.Compare(old[i], new[j]) > 0:
			add = append(add, new[j])
			j++
		default:
			i++
			j++
		}
	}
	return del, add
}

func entryKey(fields, idKey []byte) []byte {
	return append(append(make([]byte, 0, len(fields)+len(idKey)), fields...), idKey...)
}

// checkUnique fails when another document holds key fields in ix.
func (ix *indexState) checkUnique(ctx context.Context, ns tree.NodeStore, coll string, fields, idKey, doc []byte) error {
	other, err := ix.holder(ctx, ns, fields, idKey)
	if err != nil || other == nil {
		return err
	}
	return ix.duplicate(coll, fields, idKey, doc)
}

// holder returns the _id key of a document other than idKey that has the
// key fields in ix, or nil.
func (ix *indexState) holder(ctx context.Context, ns tree.NodeStore, fields, idKey []byte) ([]byte, error) {
	it, err := newIndexIterator(ctx, ns, ix.base, ix.edits, prefixInterval(fields))
	if err != nil {
		return nil, err
	}
	for {
		_, id, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		if !bytes.Equal(id, idKey) {
			return id, nil
		}
	}
}

func prefixInterval(fields []byte) index.Interval {
	return index.Interval{Start: fields, Stop: append(append([]byte(nil), fields...), index.AfterPrefix)}
}

func (ix *indexState) duplicate(coll string, fields, idKey, doc []byte) error {
	return &DuplicateKeyError{Collection: coll, Index: ix.spec.Name, KeyPattern: ix.spec.Key,
		KeyValue: ix.spec.KeyValue(doc, fields), ID: idKey}
}

// applyIndexWrite records planned index changes as edits.
func (c *collection) applyIndexWrite(changes []indexChange, idKey []byte) {
	idKey = append([]byte(nil), idKey...) // kept as the entries' value
	for _, ch := range changes {
		for _, k := range ch.del {
			c.setIndexEdit(ch.ix, &edit{key: k})
		}
		value := ch.value
		if value == nil {
			value = idKey
		}
		for _, k := range ch.add {
			c.setIndexEdit(ch.ix, &edit{key: k, value: value})
		}
		if ch.multikey {
			c.setIndexEdit(ch.ix, &edit{key: index.MultikeyMarker, value: []byte{}})
			ch.ix.multikey = true
		}
	}
}

func (c *collection) setIndexEdit(ix *indexState, e *edit) {
	if old, ok := ix.edits.ReplaceOrInsert(e); ok {
		c.dropEdit(old, e)
	}
	c.editBytes += editSize(e)
}

// writeIndexes keeps every index of c right when the document with idKey
// changes from oldDoc to newDoc (nil: absent).
func (c *collection) writeIndexes(ctx context.Context, ns tree.NodeStore, idKey, oldDoc, newDoc []byte) error {
	if len(c.indexes) == 0 {
		return nil
	}
	changes, err := c.planIndexWrite(ctx, ns, idKey, oldDoc, newDoc)
	if err != nil {
		return err
	}
	c.applyIndexWrite(changes, idKey)
	return nil
}

// IndexIterator walks index entries in key order within an interval: the
// checkpointed map merged with the edits since.
type IndexIterator struct {
	ns   tree.NodeStore
	base prolly.MapIter // nil when exhausted
	bk   []byte
	bv   []byte
	eds  editCursor
	// covered is the last entry's covered values (nil: none).
	covered   []byte
	owner     *Snapshot       // the snapshot scanned, when there is one
	interrupt interrupt.Pacer // per entry, deletions included
}

// Covered returns the document reduced to the index's key fields that the
// entry last returned by Next stores, or nil when it stores none.
func (i *IndexIterator) Covered() []byte { return i.covered }

func newIndexIterator(ctx context.Context, ns tree.NodeStore, base prolly.Map, ed *edits, iv index.Interval) (*IndexIterator, error) {
	it, err := iterInterval(ctx, ns, base, iv)
	if err != nil {
		return nil, err
	}
	return &IndexIterator{ns: ns, base: it, eds: newEditCursor(ed, iv.Start, iv.Stop)}, nil
}

// Next returns the next live entry and its document's _id key.
func (i *IndexIterator) Next(ctx context.Context) (entry, idKey []byte, err error) {
	for {
		if err := i.interrupt.Check(ctx); err != nil {
			return nil, nil, err
		}
		if err := i.peekBase(ctx); err != nil {
			return nil, nil, err
		}
		e := i.eds.peek()
		switch {
		case e == nil && i.bk == nil:
			return nil, nil, io.EOF
		case e == nil || (i.bk != nil && bytes.Compare(i.bk, e.key) < 0):
			k, v := i.bk, i.bv
			i.bk = nil
			id, cov := index.SplitEntryValue(v)
			i.covered = cov
			return k, id, nil
		}
		if i.bk != nil && bytes.Equal(i.bk, e.key) {
			i.bk = nil
		}
		i.eds.pop()
		if e.value != nil {
			id, cov := index.SplitEntryValue(e.value)
			i.covered = cov
			return e.key, id, nil
		}
	}
}

func (i *IndexIterator) peekBase(ctx context.Context) error {
	if i.bk != nil || i.base == nil {
		return nil
	}
	k, v, err := i.base.Next(ctx)
	if errors.Is(err, io.EOF) {
		i.base = nil
		return nil
	}
	if err != nil {
		return err
	}
	b, err := valueBytes(ctx, i.ns, v)
	if err != nil {
		return err
	}
	// One allocation for both: callers may keep what Next returns.
	kb := keyBytes(k)
	buf := make([]byte, len(kb)+len(b))
	copy(buf, kb)
	copy(buf[len(kb):], b)
	i.bk, i.bv = buf[:len(kb):len(kb)], buf[len(kb):]
	return nil
}
