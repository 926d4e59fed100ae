package storage

import (
	"context"
	"crypto/rand"
	"fmt"
	"slices"
	"sync"

	"github.com/dumbodb/dumbodb/index"

	"github.com/dolthub/dolt/go/store/prolly/tree"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Tx is a write transaction on one branch, handed to the function given to
// Database.Write. It reads its own writes. It is not safe for concurrent use.
type Tx struct {
	ns      tree.NodeStore
	base    *rootState
	overlay map[string]*collection // copied on first change; nil value = dropped
	ops     []walOp                // what to log, in order
	// prepared, during SetIndexes, holds indexes built ahead of the lock.
	prepared *PreparedIndexes
	// retries is the database's retry table (nil during recovery), retry
	// the outcomes this transaction logs.
	retries *retryTable
	retry   *retryLog
	// guard, when set, may refuse a change of a document from old to new
	// (nil: absent) before it is made (ErrWriteConflict): a transaction
	// claims the document, a plain write checks that no open transaction
	// holds it.
	guard func(ctx context.Context, coll string, key, old, new []byte) error
	// capture says to note change events (the engine keeps a change log,
	// and during replay the record's events are not in it yet); events
	// are the events noted (changes_capture.go).
	capture bool
	events  []ChangeEvent
	// plain is set on a plain write's Tx, whose slices are reused once
	// it is over (reuse.go); queued once its events are queued for the
	// change log, which then reuses them.
	plain, queued bool
	// unlogged is set on a bulk load's Tx (bulkload.go), whose inserts
	// are folded into the trees without a log record or change events.
	unlogged bool
	// at is the cluster time its record was logged at (0: not logged).
	at uint64
	// note describes the write for its branch's next commit (Note).
	note *WriteNote
	// inTxn is set on a multi-statement transaction's private Tx, which
	// may not write to capped collections (capped.go).
	inTxn bool
	// tombstones is the database's meter of tombstones its scans step
	// over (nil: not metered).
	tombstones *tombstoneMeter
}

var _ Reader = (*Tx)(nil)

func newTx(ns tree.NodeStore, base *rootState) *Tx {
	return &Tx{ns: ns, base: base, overlay: map[string]*collection{}}
}

func (tx *Tx) dirty() bool { return len(tx.ops) > 0 }

// CommitTime is the cluster time (seconds<<32 | increment) the engine's
// clock stamped the write with when it was logged: its change events'
// clusterTime. 0: it wrote nothing.
func (tx *Tx) CommitTime() uint64 { return tx.at }

// Changes counts the changes the transaction will log so far; a write
// command compares it around a statement to see whether the statement
// changed anything.
func (tx *Tx) Changes() int { return len(tx.ops) }

// view returns the collection as this transaction sees it, or nil.
func (tx *Tx) view(name string) *collection {
	if c, ok := tx.overlay[name]; ok {
		return c
	}
	return tx.base.colls.get(name)
}

// mutable returns the transaction's own copy of a collection, whose edits
// it may change without affecting published states.
func (tx *Tx) mutable(name string) (*collection, error) {
	if c, ok := tx.overlay[name]; ok {
		if c == nil {
			return nil, ErrNamespaceNotFound
		}
		return c, nil
	}
	base, ok := tx.base.colls.lookup(name)
	if !ok {
		return nil, ErrNamespaceNotFound
	}
	c := *base
	c.superseded = 0
	cloneMu.Lock()
	if c.edits == nil {
		c.edits = newEdits()
	} else {
		c.edits = c.edits.Clone()
	}
	c.indexes = cloneIndexes(base.indexes)
	c.capped = base.capped.clone()
	cloneMu.Unlock()
	tx.overlay[name] = &c
	return &c, nil
}

// mutableData is mutable for a change of documents or indexes, which a
// view has none of.
func (tx *Tx) mutableData(name string) (*collection, error) {
	c, err := tx.mutable(name)
	if err == nil && c.info.IsView() {
		return nil, fmt.Errorf("%s %w", name, ErrIsView)
	}
	return c, err
}

// cloneMu serialises cloning a published state's edit trees: a clone
// writes to the tree it copies (its copy-on-write mark), and transactions
// clone the same published trees outside the branch's writer lock.
var cloneMu sync.Mutex

// Collections lists the collections as this transaction sees them.
func (tx *Tx) Collections() []CollectionInfo {
	var out []CollectionInfo
	for n, c := range tx.base.colls.all() {
		if _, changed := tx.overlay[n]; !changed {
			out = append(out, c.info)
		}
	}
	for _, c := range tx.overlay {
		if c != nil {
			out = append(out, c.info)
		}
	}
	sortInfos(out)
	return out
}

// Collection returns one collection's catalog entry.
func (tx *Tx) Collection(name string) (CollectionInfo, bool) {
	c := tx.view(name)
	if c == nil {
		return CollectionInfo{}, false
	}
	return c.info, true
}

// CreateCollection adds an empty collection.
func (tx *Tx) CreateCollection(ctx context.Context, name string, options bsoncore.Document) (CollectionInfo, error) {
	if tx.view(name) != nil {
		return CollectionInfo{}, ErrNamespaceExists
	}
	if options == nil {
		options = bsoncore.NewDocumentBuilder().Build()
	}
	info := CollectionInfo{Name: name, Options: options}
	if _, err := rand.Read(info.UUID[:]); err != nil {
		return CollectionInfo{}, err
	}
	info.UUID[6] = info.UUID[6]&0x0f | 0x40 // RFC 4122 version 4
	info.UUID[8] = info.UUID[8]&0x3f | 0x80
	if err := tx.createCollection(ctx, info); err != nil {
		return CollectionInfo{}, err
	}
	return info, nil
}

// CreateCollectionWithUUID is CreateCollection keeping a given UUID, as
// applyOps' create does for mongorestore --preserveUUID. A collection
// of the branch with that UUID already is refused.
func (tx *Tx) CreateCollectionWithUUID(ctx context.Context, name string, options bsoncore.Document, uuid [16]byte) (CollectionInfo, error) {
	if tx.view(name) != nil {
		return CollectionInfo{}, ErrNamespaceExists
	}
	for _, c := range tx.Collections() {
		if c.UUID == uuid {
			return CollectionInfo{}, fmt.Errorf("%w: collection %s has UUID %x", ErrNamespaceExists, c.Name, uuid)
		}
	}
	if options == nil {
		options = bsoncore.NewDocumentBuilder().Build()
	}
	info := CollectionInfo{Name: name, Options: options, UUID: uuid}
	if err := tx.createCollection(ctx, info); err != nil {
		return CollectionInfo{}, err
	}
	return info, nil
}

func (tx *Tx) createCollection(ctx context.Context, info CollectionInfo) error {
	base, err := emptyMap(ctx, tx.ns)
	if err != nil {
		return err
	}
	c := &collection{info: info, base: base, edits: newEdits()}
	if info.Capped() {
		if c.capped, err = newCappedState(ctx, tx.ns); err != nil {
			return err
		}
	}
	tx.overlay[info.Name] = c
	tx.ops = append(tx.ops, walOp{op: opCreate, coll: info.Name, value: info.encode()})
	tx.noteCatalog("create", info, "", info.Options)
	return nil
}

// EnsureCollection creates the collection if it does not exist (MongoDB's
// implicit creation on first write) and reports whether it did.
func (tx *Tx) EnsureCollection(ctx context.Context, name string) (bool, error) {
	if tx.view(name) != nil {
		return false, nil
	}
	_, err := tx.CreateCollection(ctx, name, nil)
	return err == nil, err
}

// DropCollection removes a collection and its documents. One with
// unresolved merge conflicts is refused (refuseConflicted).
func (tx *Tx) DropCollection(name string) error {
	if err := tx.refuseConflicted(name); err != nil {
		return err
	}
	return tx.dropCollection(name)
}

// refuseConflicted refuses to drop or rename away a collection with
// unresolved merge conflicts: they are stored under its name, and
// resolving one writes the chosen document into it, so without it they
// could be neither resolved nor continued past (docs/version-control.md).
func (tx *Tx) refuseConflicted(name string) error {
	if _, ok := tx.base.conflicts[name]; ok && tx.view(name) != nil {
		return fmt.Errorf("%w: collection %q has unresolved merge conflicts; resolve them or abort the merge first", ErrMergeInProgress, name)
	}
	return nil
}

// dropCollection is DropCollection unchecked, for recovery: a log written
// before the refusal may hold such a drop, and must still replay.
func (tx *Tx) dropCollection(name string) error {
	c := tx.view(name)
	if c == nil {
		return ErrNamespaceNotFound
	}
	tx.noteCatalog("drop", c.info, "", nil)
	tx.overlay[name] = nil
	tx.ops = append(tx.ops, walOp{op: opDrop, coll: name})
	return nil
}

// RenameCollection moves a collection to a new name, keeping its UUID. With
// dropTarget an existing target is dropped first. Neither may have
// unresolved merge conflicts (refuseConflicted).
func (tx *Tx) RenameCollection(from, to string, dropTarget bool) error {
	if err := tx.refuseConflicted(from); err != nil {
		return err
	}
	if dropTarget {
		if err := tx.refuseConflicted(to); err != nil {
			return err
		}
	}
	return tx.renameCollection(from, to, dropTarget)
}

// renameCollection is RenameCollection unchecked, for recovery (as
// dropCollection).
func (tx *Tx) renameCollection(from, to string, dropTarget bool) error {
	src := tx.view(from)
	if src == nil {
		return ErrNamespaceNotFound
	}
	target := tx.view(to)
	if target != nil && !dropTarget {
		return ErrNamespaceExists
	}
	var desc bsoncore.Document
	if target != nil {
		desc = bsoncore.NewDocumentBuilder().AppendBinary("dropTarget", 4, target.info.UUID[:]).Build()
	}
	tx.noteCatalog("rename", src.info, to, desc)
	tx.rename(from, to)
	tx.ops = append(tx.ops, walOp{op: opRename, coll: from, to: to})
	return nil
}

func (tx *Tx) rename(from, to string) {
	src, _ := tx.mutable(from) // own the edits before they move
	moved := *src
	moved.info.Name = to
	tx.overlay[to] = &moved
	tx.overlay[from] = nil
}

// Get returns the document whose _id equals id.
func (tx *Tx) Get(ctx context.Context, coll string, id bsoncore.Value) (bsoncore.Document, bool, error) {
	c := tx.view(coll)
	if c == nil {
		return nil, false, nil
	}
	key := encodeID(id)
	v, found, err := lookup(ctx, tx.ns, c.base, c.edits, key)
	return append(bsoncore.Document(nil), v...), found, err
}

// Scan iterates over a collection as of this call; writes made while
// iterating do not show up in the iteration.
func (tx *Tx) Scan(ctx context.Context, coll string) (*Iterator, error) {
	c := tx.view(coll)
	if c == nil {
		return &Iterator{}, nil
	}
	ed := c.edits
	if _, own := tx.overlay[coll]; own && ed != nil {
		ed = ed.Clone() // freeze: the transaction may go on editing
	}
	if c.capped != nil {
		return newNaturalIterator(ctx, tx.ns, c, ed, false)
	}
	return tx.metered(newIterator(ctx, tx.ns, c.base, ed))
}

// ScanRange is Scan over the documents with _id keys in iv.
func (tx *Tx) ScanRange(ctx context.Context, coll string, iv index.Interval) (*Iterator, error) {
	c := tx.view(coll)
	if c == nil {
		return &Iterator{}, nil
	}
	ed := c.edits
	if _, own := tx.overlay[coll]; own && ed != nil {
		ed = ed.Clone()
	}
	return tx.metered(newRangeIterator(ctx, tx.ns, c.base, ed, iv))
}

// metered has it count the tombstones it steps over on the database's
// meter.
func (tx *Tx) metered(it *Iterator, err error) (*Iterator, error) {
	if it != nil {
		it.eds.dead.meter = tx.tombstones
	}
	return it, err
}

// Grow makes room for n more document writes, so that a batch of them
// grows the transaction's logged operations and change events once
// rather than a document at a time.
func (tx *Tx) Grow(n int) {
	tx.ops = slices.Grow(tx.ops, n)
	if tx.capture {
		tx.events = slices.Grow(tx.events, n)
	}
}

// Insert adds doc, whose first field must be its _id. It fails with
// ErrDuplicateKey when a document with an equal _id exists.
func (tx *Tx) Insert(ctx context.Context, coll string, doc bsoncore.Document) error {
	return tx.put(ctx, coll, doc, true, false)
}

// Replace stores doc in place of the document with the same _id.
func (tx *Tx) Replace(ctx context.Context, coll string, doc bsoncore.Document) error {
	return tx.put(ctx, coll, doc, false, false)
}

// Update is Replace for a document an update operator changed: its change
// event is an update (with the fields that changed), not a replace.
func (tx *Tx) Update(ctx context.Context, coll string, doc bsoncore.Document) error {
	return tx.put(ctx, coll, doc, false, true)
}

func (tx *Tx) put(ctx context.Context, coll string, doc bsoncore.Document, mustBeNew, update bool) error {
	id, err := doc.LookupErr("_id")
	if err != nil {
		return fmt.Errorf("document without _id: %w", err)
	}
	key := encodeID(id)
	c, err := tx.mutableData(coll)
	if err != nil {
		return err
	}
	old, exists, err := lookup(ctx, tx.ns, c.base, c.edits, key)
	if err != nil {
		return err
	}
	if exists && mustBeNew {
		return ErrDuplicateKey
	}
	if err := tx.checkCappedWrite(c, doc, !exists); err != nil {
		return err
	}
	if err := tx.checkGuard(ctx, coll, key, old, doc); err != nil {
		return err
	}
	key, value := keyAndValue(key, doc)
	if err := c.writeIndexes(ctx, tx.ns, key, old, value); err != nil {
		return err
	}
	if err := c.noteCapped(ctx, tx.ns, key, oldIf(old, exists), value); err != nil {
		return err
	}
	c.setEdit(&edit{key: key, value: value}, exists)
	if tx.unlogged {
		return nil // a bulk load: no log record, no change event, never capped
	}
	tx.ops = append(tx.ops, walOp{op: opPut, coll: coll, key: key, value: value, update: update && exists,
		base: oldIf(old, exists)})
	tx.noteDoc(c, key, oldIf(old, exists), value, update)
	if !exists && c.capped != nil {
		return tx.trimCapped(ctx, coll)
	}
	return nil
}

// Delete removes the document whose _id equals id, if there is one.
func (tx *Tx) Delete(ctx context.Context, coll string, id bsoncore.Value) error {
	key := encodeID(id)
	return tx.deleteKey(ctx, coll, key)
}

func (tx *Tx) deleteKey(ctx context.Context, coll string, key []byte) error {
	c, err := tx.mutableData(coll)
	if err != nil {
		return err
	}
	old, exists, err := lookup(ctx, tx.ns, c.base, c.edits, key)
	if err != nil || !exists {
		return err
	}
	if err := tx.checkCappedWrite(c, nil, false); err != nil {
		return err
	}
	if err := tx.checkGuard(ctx, coll, key, old, nil); err != nil {
		return err
	}
	if err := c.writeIndexes(ctx, tx.ns, key, old, nil); err != nil {
		return err
	}
	if err := c.noteCapped(ctx, tx.ns, key, old, nil); err != nil {
		return err
	}
	c.setEdit(&edit{key: key}, exists)
	tx.ops = append(tx.ops, walOp{op: opDelete, coll: coll, key: key})
	tx.noteDoc(c, key, old, nil, false)
	return nil
}

// oldIf is the document a change replaced: nil when there was none.
func oldIf(old []byte, exists bool) []byte {
	if !exists {
		return nil
	}
	return old
}

func (tx *Tx) checkGuard(ctx context.Context, coll string, key, old, new []byte) error {
	if tx.guard == nil {
		return nil
	}
	return tx.guard(ctx, coll, key, old, new)
}

// keyAndValue copies an edit's key and document into one allocation: a
// small document's edit then costs one allocator rounding, not two.
func keyAndValue(key []byte, doc bsoncore.Document) (k, v []byte) {
	buf := make([]byte, len(key)+len(doc))
	copy(buf, key)
	copy(buf[len(key):], doc)
	return buf[:len(key):len(key)], buf[len(key):]
}

// setEdit records e, keeping the live count and edit memory right.
func (c *collection) setEdit(e *edit, existed bool) {
	if old, ok := c.edits.ReplaceOrInsert(e); ok {
		c.dropEdit(old, e)
	}
	c.editBytes += editSize(e)
	switch {
	case e.live() && !existed:
		c.count++
	case !e.live() && existed:
		c.count--
	}
}

// publish makes the state this transaction leads to. The transaction must
// not be used afterwards: its edit sets now belong to the published state.
func (tx *Tx) publish(lsn uint64) *rootState {
	st := &rootState{colls: tx.base.colls.with(tx.overlay), lsn: lsn, ckptLSN: tx.base.ckptLSN,
		merge: tx.base.merge, conflicts: tx.base.conflicts}
	for n, c := range tx.overlay {
		if c != nil {
			st.superseded += c.superseded
		} else if was, ok := tx.base.colls.lookup(n); ok {
			st.superseded += was.editBytes // dropped
		}
	}
	return st
}

// editBytes is the memory the state's edits take.
func (st *rootState) editBytes() int64 { return st.colls.editBytes }

// encodeID is id's key in the collection's map (index.EncodeID).
func encodeID(id bsoncore.Value) []byte {
	// Sized for a number's or an ObjectId's key: one allocation, where
	// growing from nil took two or three.
	return index.EncodeID(make([]byte, 0, 16+len(id.Data)), id)
}
