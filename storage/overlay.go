package storage

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"iter"

	"github.com/dolthub/dolt/go/store/prolly"
	"github.com/dolthub/dolt/go/store/prolly/tree"
	"github.com/dolthub/dolt/go/store/val"
	"github.com/google/btree"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/index"
	"github.com/dumbodb/dumbodb/interrupt"
	"github.com/dumbodb/dumbodb/storage/doctree"
)

// edit is one acknowledged change to a collection since its last
// checkpoint: the new value of a key, or its deletion (value and rope
// nil). A large document an update changed by field is held as a rope
// (docrope.go) rather than as bytes.
type edit struct {
	key   []byte
	value []byte
	rope  *docRope
}

// live reports whether the edit holds a document, not a deletion.
func (e *edit) live() bool { return e.value != nil || e.rope != nil }

// doc is the edit's document (nil: a deletion); a rope is assembled into
// new bytes.
func (e *edit) doc() []byte {
	if e.rope != nil {
		return e.rope.bytes()
	}
	return e.value
}

// docLen is the length of the edit's document.
func (e *edit) docLen() int {
	if e.rope != nil {
		return e.rope.size
	}
	return len(e.value)
}

// edits is an ordered set of edits keyed by encoded _id. Published edit
// sets are never modified: a writer clones (copy-on-write, O(1)) and edits
// the clone, so readers of the old set need no lock.
//
// A set is two trees: recent, the last recentMax edits, over settled,
// the rest; an edit in recent overrides one of its key in settled. A
// write transaction clones a published set and changes it, and a
// copy-on-write tree copies every node on the path of a change: in one
// tree of 100,000 edits that was 4.4-6.9 µs for each single-document write
// (a collection's tree, and each index's). Writes now copy only recent's
// short paths, and settled takes recent's edits in one clone every
// recentMax of them, when neighbouring edits share the nodes copied (all
// of them, for ascending _ids).
//
// The trees hold editItems, not edits: each carries the first 16 bytes
// of its key inline, so a search compares within the tree's node arrays
// and dereferences an edit only when two keys share those bytes. Looking
// up one of 100,000 edits through pointers alone cost about 1.6 µs, two
// cache misses per comparison; indexed reads of recently written data pay
// it once per document.
//
// A checkpoint folding beside the writers (checkpoint.go) freezes a set:
// the set it folds becomes frozen, a read-only layer below fresh recent
// and settled trees, so that writers go on without changing what the
// fold reads. Lookups and iterations see the layers merged, the newer
// winning a tie; the swap that publishes the fold drops the layer.
//
// top is the greatest key any layer of the set ever held (no edit: none):
// a key above it is in no layer, so inserts of ascending _ids (ObjectIds,
// counters), the common case, skip the searches of the deep settled trees
// that looking them up and replacing them would take. Edits are never
// removed from a set (a deletion is an edit), so top only grows; a set
// that drops its frozen layer keeps it, still an upper bound.
type edits struct {
	recent, settled *btree.BTreeG[editItem]
	frozen          *edits // nil: none; never changed
	top             editItem
}

// recentMax is how many edits recent holds before settled takes them.
// Iterations copy recent's edits from their start on (at most this many).
const recentMax = 128

// editsDegree is the trees' B-tree degree: nodes of at most 31 items,
// half those of degree 32, so a path's copy costs less; degree 8 was
// cheaper still but took 60 more bytes an edit in half-full nodes
// (TestEditSizeMatchesTheHeap).
const editsDegree = 16

// editItem is an edit with its key's first 16 bytes (zero-padded) as two
// big-endian words, which order as the bytes do.
type editItem struct {
	hi, lo uint64
	e      *edit
}

func itemOf(e *edit) editItem {
	var b [16]byte
	copy(b[:], e.key)
	return editItem{hi: binary.BigEndian.Uint64(b[:8]), lo: binary.BigEndian.Uint64(b[8:]), e: e}
}

func itemLess(a, b editItem) bool {
	switch {
	case a.hi != b.hi:
		return a.hi < b.hi
	case a.lo != b.lo:
		return a.lo < b.lo
	}
	return bytes.Compare(a.e.key, b.e.key) < 0
}

func newEditTree() *btree.BTreeG[editItem] { return btree.NewG(editsDegree, itemLess) }

func newEdits() *edits { return &edits{recent: newEditTree(), settled: newEditTree()} }

// frozenOver returns a set with ed as its frozen layer (nil: none).
func frozenOver(ed *edits) *edits {
	if ed == nil {
		return nil
	}
	return &edits{recent: newEditTree(), settled: newEditTree(), frozen: ed, top: ed.top}
}

// frozenOf is ed's frozen layer (nil: none, or no set).
func frozenOf(ed *edits) *edits {
	if ed == nil {
		return nil
	}
	return ed.frozen
}

// withoutFrozen is ed without its frozen layer, sharing its trees (both
// sets are published, so neither changes them).
func withoutFrozen(ed *edits) *edits {
	if ed == nil {
		return nil
	}
	return &edits{recent: ed.recent, settled: ed.settled, top: ed.top}
}

// Get returns the edit of e's key.
func (ed *edits) Get(e *edit) (*edit, bool) {
	it := itemOf(e)
	if ed.above(it) {
		return nil, false
	}
	for ; ed != nil; ed = ed.frozen {
		if got, ok := ed.recent.Get(it); ok {
			return got.e, true
		}
		if got, ok := ed.settled.Get(it); ok {
			return got.e, true
		}
	}
	return nil, false
}

// ReplaceOrInsert sets e, returning the edit it replaced in the upper
// trees: one it replaces in the frozen layer is still held (by the state
// the checkpoint folds) and must still be counted.
func (ed *edits) ReplaceOrInsert(e *edit) (*edit, bool) {
	it := itemOf(e)
	var old editItem
	ok := false
	if ed.above(it) {
		ed.recent.ReplaceOrInsert(it)
		ed.top = it
	} else if old, ok = ed.recent.ReplaceOrInsert(it); !ok {
		old, ok = ed.settled.Get(it)
	}
	if ed.recent.Len() >= recentMax {
		ed.settle()
	}
	return old.e, ok
}

// getKey is Get by key. A key above the set's costs no allocation.
func (ed *edits) getKey(key []byte) (*edit, bool) {
	probe := edit{key: key}
	if ed.above(itemOf(&probe)) {
		return nil, false
	}
	return ed.Get(&edit{key: key})
}

// above reports whether the item's key is greater than every key of the
// set (true for no set).
func (ed *edits) above(it editItem) bool { return ed == nil || ed.top.e == nil || itemLess(ed.top, it) }

// settle moves recent's edits into (a clone of) settled.
func (ed *edits) settle() {
	cloneMu.Lock() // settled may be shared with other sets, which clone it too
	settled := ed.settled.Clone()
	cloneMu.Unlock()
	ed.recent.Ascend(func(it editItem) bool {
		settled.ReplaceOrInsert(it)
		return true
	})
	ed.settled, ed.recent = settled, newEditTree()
}

// Ascend calls fn for each edit in key order until fn returns false.
func (ed *edits) Ascend(fn func(*edit) bool) { ed.ascendFrom(nil, fn) }

// AscendGreaterOrEqual is Ascend from the key of from on.
func (ed *edits) AscendGreaterOrEqual(from *edit, fn func(*edit) bool) { ed.ascendFrom(from, fn) }

// ascendFrom is Ascend from the key of from on (nil: from the first),
// merging the frozen layers below the upper trees.
func (ed *edits) ascendFrom(from *edit, fn func(*edit) bool) { ed.ascendReusing(from, nil, fn) }

// ascendReusing is ascendFrom copying the upper recent tree's edits into
// *scratch (nil: a new slice), for a caller that ascends again and again:
// grown from nil each time, the copy took up to eight allocations.
func (ed *edits) ascendReusing(from *edit, scratch *[]editItem, fn func(*edit) bool) {
	if ed.frozen == nil {
		ed.ascendUpper(from, scratch, fn)
		return
	}
	upper := func(yield func(*edit) bool) { ed.ascendUpper(from, scratch, yield) }
	frozen := func(yield func(*edit) bool) { ed.frozen.ascendFrom(from, yield) }
	ascendOver(upper, frozen, fn)
}

// ascendUpper is ascendReusing over recent and settled only.
func (ed *edits) ascendUpper(from *edit, scratch *[]editItem, fn func(*edit) bool) {
	var recent []editItem
	if scratch != nil {
		recent = (*scratch)[:0]
		defer func() { *scratch = recent[:0] }()
	}
	if from == nil {
		ed.recent.Ascend(func(it editItem) bool { recent = append(recent, it); return true })
		ascendMerged(recent, fn, func(visit func(editItem) bool) { ed.settled.Ascend(visit) })
		return
	}
	start := itemOf(from)
	ed.recent.AscendGreaterOrEqual(start, func(it editItem) bool { recent = append(recent, it); return true })
	ascendMerged(recent, fn, func(visit func(editItem) bool) { ed.settled.AscendGreaterOrEqual(start, visit) })
}

// ascendOver calls fn for the edits of newer and older merged in key
// order, newer's winning a tie, until fn returns false. older is pulled
// one edit at a time (the trees only offer callback iteration); it is
// walked only while a checkpoint folds, so the pull's cost stays off the
// common path.
func ascendOver(newer, older iter.Seq[*edit], fn func(*edit) bool) {
	next, stop := iter.Pull(older)
	defer stop()
	o, ok := next()
	stopped := false
	newer(func(n *edit) bool {
		for ; ok && bytes.Compare(o.key, n.key) < 0; o, ok = next() {
			if !fn(o) {
				stopped = true
				return false
			}
		}
		if ok && bytes.Equal(o.key, n.key) { // same key: newer's
			o, ok = next()
		}
		if !fn(n) {
			stopped = true
			return false
		}
		return true
	})
	for ; !stopped && ok; o, ok = next() {
		if !fn(o) {
			return
		}
	}
}

// eachHeld calls fn for every edit the set holds, in every layer, shadowed
// ones included: what its byte count covers.
func (ed *edits) eachHeld(fn func(*edit)) {
	for ; ed != nil; ed = ed.frozen {
		visit := func(it editItem) bool { fn(it.e); return true }
		ed.recent.Ascend(visit)
		ed.settled.Ascend(visit)
	}
}

// ascendMerged calls fn for the edits of recent (in order) and of the
// settled iteration merged in key order, recent's winning a tie, until
// fn returns false.
func ascendMerged(recent []editItem, fn func(*edit) bool, settled func(func(editItem) bool)) {
	i, stopped := 0, false
	settled(func(s editItem) bool {
		for ; i < len(recent) && itemLess(recent[i], s); i++ {
			if !fn(recent[i].e) {
				stopped = true
				return false
			}
		}
		if i < len(recent) && !itemLess(s, recent[i]) { // same key: recent's
			s = recent[i]
			i++
		}
		if !fn(s.e) {
			stopped = true
			return false
		}
		return true
	})
	for ; !stopped && i < len(recent); i++ {
		if !fn(recent[i].e) {
			return
		}
	}
}

// Clone returns a copy-on-write copy; ed must not change afterwards.
// Callers that clone a published set hold cloneMu.
func (ed *edits) Clone() *edits {
	return &edits{recent: ed.recent.Clone(), settled: ed.settled, frozen: ed.frozen, top: ed.top}
}

// Len is the number of edits, or more (a key in two trees or layers
// counts twice): callers ask only whether there are any.
func (ed *edits) Len() int {
	n := 0
	for ; ed != nil; ed = ed.frozen {
		n += ed.recent.Len() + ed.settled.Len()
	}
	return n
}

// editOverhead is the memory an edit costs beyond its bytes: the edit
// (two slice headers and a pointer, 56 bytes in the allocator's 64-byte
// class) and its item in the tree (24 bytes) in nodes that ascending
// inserts, the common case, leave half full.
const editOverhead = 64 + 2*24

// editSize is the memory an edit holds, which the budget (--cacheSizeMB)
// bounds. It must not undercount: at 64 bytes of overhead and no
// allocator rounding, small documents took 40% more heap than counted,
// and the budget bounded nothing (TestEditSizeMatchesTheHeap).
// A rope counts twice its document: its elements are slices of the
// buffers they came from (the document it was first made from, each
// update's fields), which stay whole while any element of them lives; a
// rope whose fields were all replaced since still holds the first buffer
// through its _id.
func editSize(e *edit) int64 {
	n := allocSize(e.docLen())
	if e.rope != nil {
		n *= 2
	}
	return allocSize(len(e.key)) + n + editOverhead
}

// dropEdit takes old, which next replaced (nil: removed it), out of c's
// edit memory. The states published before still hold old: c counts what
// that keeps alive for the history (history.go).
func (c *collection) dropEdit(old, next *edit) {
	c.editBytes -= editSize(old)
	c.superseded += supersededSize(old, next)
}

// supersededSize is the memory old holds that next, which replaced it,
// does not share: all of it, but for a rope that next was spliced from,
// whose blocks and elements are mostly next's too (docRope.heldApart).
func supersededSize(old, next *edit) int64 {
	if next != nil && old.rope != nil && next.rope != nil {
		return old.rope.heldApart(next.rope) + editOverhead
	}
	return editSize(old)
}

// allocSize approximates what the Go allocator takes for n bytes: size
// classes of at most 12.5% waste up to 32 KiB, whole 8 KiB pages above.
func allocSize(n int) int64 {
	switch {
	case n == 0:
		return 0
	case n <= 16:
		return 16
	case n <= 32<<10:
		return int64(n + n/16 + 8)
	}
	return int64(n+8191) &^ 8191
}

// lookup finds key in the edits, then in the base map. found reports
// whether a live document exists.
func lookup(ctx context.Context, ns tree.NodeStore, base prolly.Map, ed *edits, key []byte) ([]byte, bool, error) {
	if e, ok := ed.getKey(key); ok {
		return e.doc(), e.live(), nil
	}
	// A key past the map's last one is not in it: inserts of ascending
	// _ids (ObjectIds, counters) skip the tree's search and the key tuple.
	// The last key is the root node's, already in memory.
	if last := base.LastKey(ctx); last == nil || bytes.Compare(key, keyBytes(last)) > 0 {
		return nil, false, nil
	}
	k, err := doctree.KeyTuple(ns, key)
	if err != nil {
		return nil, false, err
	}
	return getValue(ctx, ns, base, k)
}

// editBatch is how many edits an iterator takes from the tree at a time.
const editBatch = 64

// editCursor walks the edits of a key interval in order, copying them from
// the tree editBatch at a time (the tree only offers callback iteration),
// so that a scan that stops early (a seek, a limit) pays for what it
// reads, not for every edit of the interval.
type editCursor struct {
	ed    *edits // nil or finished: no more edits
	start []byte // first key (inclusive) until the first refill
	stop  []byte // end (exclusive; nil: none)
	buf   []*edit
	last  []byte // last key copied
	// recent is the buffer refills copy the recent tree's edits into.
	recent []editItem
	// dead counts the deletions consumed, for the database's meter.
	dead tombstoneCount
}

func newEditCursor(ed *edits, start, stop []byte) editCursor {
	if ed != nil && ed.Len() == 0 {
		ed = nil
	}
	return editCursor{ed: ed, start: start, stop: stop}
}

// peek returns the next edit without consuming it (nil: none left).
func (c *editCursor) peek() *edit {
	if len(c.buf) == 0 && c.ed != nil {
		c.refill()
	}
	if len(c.buf) == 0 {
		return nil
	}
	return c.buf[0]
}

// pop consumes the edit peek returned.
func (c *editCursor) pop() {
	if !c.buf[0].live() {
		c.dead.step()
	}
	c.buf = c.buf[1:]
}

func (c *editCursor) refill() {
	c.buf = c.buf[:0]
	full := false
	resumed := c.last != nil // the first key may be the last one copied
	collect := func(e *edit) bool {
		if resumed {
			resumed = false
			if bytes.Equal(e.key, c.last) {
				return true
			}
		}
		if c.stop != nil && bytes.Compare(e.key, c.stop) >= 0 {
			return false
		}
		c.buf = append(c.buf, e)
		full = len(c.buf) == editBatch
		return !full
	}
	var from *edit
	switch {
	case c.last != nil:
		from = &edit{key: c.last}
	case c.start != nil:
		from = &edit{key: c.start}
	}
	c.ed.ascendReusing(from, &c.recent, collect)
	if !full {
		c.ed = nil // the interval has no more edits
	}
	if len(c.buf) > 0 {
		c.last = c.buf[len(c.buf)-1].key
	}
}

// Iterator walks a collection in _id order: the base map merged with the
// edits made since the checkpoint. Next returns io.EOF at the end.
type Iterator struct {
	ns    tree.NodeStore
	owner *Snapshot // the snapshot iterated, when there is one

	base  prolly.MapIter // nil when exhausted
	bk    []byte         // peeked base key (nil: none)
	bvTup val.Tuple      // its value

	eds editCursor

	// match and out, when set, are the fields of doctree documents that
	// keep sees and that Next returns (out nil: whole); partial reports
	// whether the last document returned was read in part.
	match, out *doctree.Fields
	curTree    *doctree.Tree // the borrowed document's doctree, when read in part
	partial    bool

	interrupt interrupt.Pacer // per entry, so that skipped entries count

	// nat, when set, makes the iterator yield a capped collection's
	// documents in insertion order instead (capped_scan.go).
	nat *naturalIter

	// slab is where returned documents are copied, many to one
	// allocation (copyOut).
	slab []byte
}

// copySlab is the size of the allocations documents are copied into: a
// scan allocates once per slab, not once per document, and a document
// kept by the caller keeps at most one slab alive.
const copySlab = 8 << 10

// copyOut is a copy of doc the caller owns. Small documents share a slab;
// each is capped at its own length, so that appending to one cannot
// overwrite the next.
func (i *Iterator) copyOut(doc []byte) bsoncore.Document {
	if len(doc) > copySlab/8 {
		return append(bsoncore.Document(nil), doc...)
	}
	if cap(i.slab)-len(i.slab) < len(doc) {
		i.slab = make([]byte, 0, copySlab)
	}
	start := len(i.slab)
	i.slab = append(i.slab, doc...)
	return bsoncore.Document(i.slab[start:len(i.slab):len(i.slab)])
}

// SetFields makes the iterator read documents stored as doctrees in part:
// the keep function of NextWhere sees only the fields listed in match, and
// an accepted document has only the fields in out (nil: the whole
// document). Smaller documents are always read whole.
func (i *Iterator) SetFields(match, out []string) {
	i.match = doctree.NewFields(match)
	if out != nil {
		i.out = doctree.NewFields(out)
	}
}

// Partial reports whether the last document returned lacks fields.
func (i *Iterator) Partial() bool { return i.partial }

func newIterator(ctx context.Context, ns tree.NodeStore, base prolly.Map, ed *edits) (*Iterator, error) {
	it, err := base.IterAll(ctx)
	if err != nil {
		return nil, err
	}
	return &Iterator{ns: ns, base: it, eds: newEditCursor(ed, nil, nil)}, nil
}

// newRangeIterator walks the entries with keys in iv only.
func newRangeIterator(ctx context.Context, ns tree.NodeStore, base prolly.Map, ed *edits, iv index.Interval) (*Iterator, error) {
	it, err := iterInterval(ctx, ns, base, iv)
	if err != nil {
		return nil, err
	}
	return &Iterator{ns: ns, base: it, eds: newEditCursor(ed, iv.Start, iv.Stop)}, nil
}

// iterInterval iterates a map's keys in iv (Stop nil: to the end).
func iterInterval(ctx context.Context, ns tree.NodeStore, m prolly.Map, iv index.Interval) (prolly.MapIter, error) {
	start, err := doctree.KeyTuple(ns, iv.Start)
	if err != nil {
		return nil, err
	}
	var stop val.Tuple
	if iv.Stop != nil {
		if stop, err = doctree.KeyTuple(ns, iv.Stop); err != nil {
			return nil, err
		}
	}
	return m.IterKeyRange(ctx, start, stop)
}

// Next returns the next live document; the caller owns the bytes.
func (i *Iterator) Next(ctx context.Context) (bsoncore.Document, error) {
	return i.NextWhere(ctx, nil)
}

// NextWhere returns the next live document that keep accepts (any when
// keep is nil). keep sees the stored bytes in place and must not keep
// them; only accepted documents are copied, so a filtered scan does not
// pay for the documents it rejects.
func (i *Iterator) NextWhere(ctx context.Context, keep func(bsoncore.Document) bool) (bsoncore.Document, error) {
	for {
		if err := i.interrupt.Check(ctx); err != nil {
			return nil, err
		}
		doc, err := i.nextBorrowed(ctx)
		if err != nil {
			return nil, err
		}
		if doc == nil || (keep != nil && !keep(doc)) {
			continue
		}
		i.partial = false
		switch {
		case i.curTree == nil:
			return i.copyOut(doc), nil
		case i.out == nil:
			return i.curTree.Document(ctx)
		}
		i.partial = !i.out.Whole()
		return i.curTree.Project(ctx, i.out)
	}
}

// nextBorrowed returns the next entry's bytes without copying them (nil
// for a deletion); they stay valid until the next call.
func (i *Iterator) nextBorrowed(ctx context.Context) (bsoncore.Document, error) {
	if i.nat != nil {
		return i.nat.next(ctx, i.ns)
	}
	if err := i.peekBase(ctx); err != nil {
		return nil, err
	}
	e := i.eds.peek()
	switch {
	case e == nil && i.bk == nil:
		return nil, io.EOF
	case e == nil || (i.bk != nil && bytes.Compare(i.bk, e.key) < 0):
		i.bk, i.curTree = nil, nil
		if doc, inline := inlineDocument(i.bvTup); inline {
			return doc, nil
		}
		if i.match != nil {
			tr, isTree, err := docTree(ctx, i.ns, i.bvTup)
			if err != nil {
				return nil, err
			}
			if isTree {
				i.curTree = &tr
				return tr.Project(ctx, i.match)
			}
		}
		return valueBytes(ctx, i.ns, i.bvTup)
	}
	i.curTree = nil
	if i.bk != nil && bytes.Equal(i.bk, e.key) {
		i.bk = nil // the edit replaces the base entry
	}
	i.eds.pop()
	return e.doc(), nil
}

func (i *Iterator) peekBase(ctx context.Context) error {
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
	i.bk, i.bvTup = keyBytes(k), v
	return nil
}
