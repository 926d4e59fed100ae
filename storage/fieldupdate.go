package storage

import (
	"bytes"
	"context"
	"github.com/dumbodb/dumbodb/storage/doctree"

	"github.com/dolthub/dolt/go/store/prolly/tree"
	"github.com/dolthub/dolt/go/store/val"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Updates by field (docs/design/large-documents.md, "Updates by field"):
// an update operator that names the top-level fields it touches is
// applied to a document holding only those fields, and the large document
// it belongs to is changed by splicing the new fields into its rope. Its
// cost follows the fields, not the document: nothing reads, copies or
// diffs the other fields.

// fieldUpdateMinBytes is the size from which an update is applied by
// field: below it, the whole document costs less than the rope.
const fieldUpdateMinBytes = patchMinBytes

// FieldUpdate is an update of a few top-level fields of one document.
type FieldUpdate struct {
	// Fields names the top-level fields the update reads or writes.
	Fields []string
	// Apply updates a document holding only the fields named (those that
	// exist), _id and the fields the collection's indexes key on, in the
	// document's order, and reports whether it changed it. New fields go
	// after the fields it kept, as on the whole document.
	Apply func(part bsoncore.Document) (bsoncore.Document, bool, error)
	// MaxSize bounds the new document: past it the update fails with
	// ErrDocumentTooLarge.
	MaxSize int
}

// FieldResult says what UpdateFields did.
type FieldResult struct {
	// Handled is false when the update must be made on the whole document
	// (Get, then Update) instead: nothing was read or written.
	Handled bool
	// Found: a document has that _id; Changed: the update changed it.
	Found, Changed bool
}

// UpdateFields applies u to the document whose _id equals id if that
// document is large, and the collection needs nothing else of it: no
// capped collection, no pre- and post-images for change streams, no index
// whose fields cannot be named, and not within a multi-statement
// transaction. Otherwise it reports Handled false.
func (tx *Tx) UpdateFields(ctx context.Context, coll string, id bsoncore.Value, u FieldUpdate) (FieldResult, error) {
	c := tx.view(coll)
	if c == nil || tx.inTxn || c.capped != nil || keepsImages(c.info) {
		return FieldResult{}, nil
	}
	names, ok := c.fieldUpdateNames(u.Fields)
	if !ok {
		return FieldResult{}, nil
	}
	key := encodeID(id)
	rope, found, err := c.ropeAt(ctx, tx, key)
	switch {
	case err != nil:
		return FieldResult{}, err
	case !found:
		return FieldResult{Handled: true}, nil
	case rope == nil:
		return FieldResult{}, nil // small: the whole document costs less
	}
	before, pos := rope.partial(names)
	after, changed, err := u.Apply(before)
	if err != nil || !changed {
		return FieldResult{Handled: true, Found: true}, err
	}
	splices, ok := fieldSplices(rope, before, after, pos)
	if !ok {
		return FieldResult{}, nil
	}
	next := rope.splice(splices)
	if next.size > u.MaxSize {
		return FieldResult{Handled: true, Found: true}, ErrDocumentTooLarge
	}
	if err := tx.writeFields(ctx, coll, key, rope, next, splices, before, after); err != nil {
		return FieldResult{}, err
	}
	return FieldResult{Handled: true, Found: true, Changed: true}, nil
}

// fieldUpdateNames is the fields an update by field reads: those it
// names, _id and those the indexes key on (false: an index needs the
// whole document).
func (c *collection) fieldUpdateNames(fields []string) ([]string, bool) {
	names := append([]string{"_id"}, fields...)
	for _, ix := range c.indexes {
		top, ok := ix.spec.TopFields()
		if !ok {
			return nil, false
		}
		names = append(names, top...)
	}
	return names, true
}

// ropeAt returns the document under key as a rope, or nil when it is too
// small to be updated by field or repeats a top-level name.
func (c *collection) ropeAt(ctx context.Context, tx *Tx, key []byte) (*docRope, bool, error) {
	if c.edits != nil {
		if e, ok := c.edits.Get(&edit{key: key}); ok {
			switch {
			case e.rope != nil:
				return e.rope, true, nil
			case e.value == nil:
				return nil, false, nil
			case len(e.value) < fieldUpdateMinBytes:
				return nil, true, nil
			}
			rope, err := newRope(e.value) // edits are never modified: no copy
			return rope, true, err
		}
	}
	k, err := doctree.KeyTuple(tx.ns, key)
	if err != nil {
		return nil, false, err
	}
	var rope *docRope
	var found bool
	err = c.base.Get(ctx, k, func(key, v val.Tuple) error {
		if key == nil {
			return nil
		}
		found = true
		rope, err = storedRope(ctx, tx.ns, v)
		return err
	})
	return rope, found, err
}

// storedRope makes the rope of a stored document: a doctree's elements
// stay in its nodes; a smaller value is copied (nil under
// fieldUpdateMinBytes).
func storedRope(ctx context.Context, ns tree.NodeStore, v val.Tuple) (*docRope, error) {
	tr, isTree, err := docTree(ctx, ns, v)
	if err != nil {
		return nil, err
	}
	if isTree {
		elems, size, err := tr.TopElements(ctx)
		if err != nil || size < fieldUpdateMinBytes {
			return nil, err
		}
		return ropeOfElements(elems, size), nil
	}
	b, err := valueBytesPlain(ctx, ns, v)
	if err != nil || len(b) < fieldUpdateMinBytes {
		return nil, err
	}
	return newRope(append([]byte(nil), b...))
}

// fieldSplices turns the change from before to after (both holding the
// rope's elements at pos, in order) into element splices of the rope:
// changed fields replaced in place, removed ones deleted, new ones
// appended. It reports false when after moved a field it kept, which
// the whole-document path must then make.
func fieldSplices(r *docRope, before, after bsoncore.Document, pos []int) ([]elemSplice, bool) {
	olds, err1 := before.Elements()
	news, err2 := after.Elements()
	if err1 != nil || err2 != nil {
		return nil, false
	}
	var splices []elemSplice
	j := 0 // next element of news
	for i, o := range olds {
		k := indexOfKey(news, o.Key())
		switch {
		case k < 0:
			splices = append(splices, elemSplice{at: pos[i], del: 1})
			continue
		case k != j:
			return nil, false // a kept field moved, or a new one came before it
		case !bytes.Equal(o, news[k]):
			splices = append(splices, elemSplice{at: pos[i], del: 1, ins: []bsoncore.Element{news[k]}})
		}
		j++
	}
	if j < len(news) {
		splices = append(splices, elemSplice{at: r.n, ins: news[j:]})
	}
	return splices, true
}

func indexOfKey(els []bsoncore.Element, key string) int {
	for i, e := range els {
		if elementNamed(e, key) {
			return i
		}
	}
	return -1
}

// writeFields records the document's new rope: its indexes, its edit, its
// log record and its change event, each from the fields alone.
func (tx *Tx) writeFields(ctx context.Context, coll string, key []byte, old, next *docRope, splices []elemSplice, before, after bsoncore.Document) error {
	c, err := tx.mutableData(coll)
	if err != nil {
		return err
	}
	if err := tx.checkGuard(ctx, coll, key, before, after); err != nil {
		return err
	}
	if err := c.writeIndexes(ctx, tx.ns, key, before, after); err != nil {
		return err
	}
	c.setEdit(&edit{key: key, rope: next}, true)
	s, sum := encodeFieldSplices(old, splices)
	tx.ops = append(tx.ops, walOp{op: opFields, coll: coll, key: key, update: true, patch: s, baseLen: old.size, sum: sum})
	tx.noteDoc(c, key, before, after, true)
	return nil
}
