package storage

import (
	"bytes"
	"context"
	"errors"
	"io"
	"sort"
	"strconv"

	"github.com/dolthub/dolt/go/store/prolly"
	"github.com/dolthub/dolt/go/store/prolly/tree"
	"github.com/dolthub/dolt/go/store/val"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/storage/doctree"
)

// DiffSide is one end of a diff: a revision's commit, or (Working) a
// branch's current state with its uncommitted writes.
type DiffSide struct {
	Rev     Revision
	Working bool
}

// FieldChange is one changed field of a modified document. A zero From
// or To (Type 0) means the field is missing on that side.
type FieldChange = doctree.Change

// DocChange is one document that differs.
type DocChange struct {
	ID bsoncore.Value
	// From is the removed document, To the added one; modified documents
	// have neither, only their field changes.
	From, To bsoncore.Document
	Fields   []FieldChange // for modified documents
}

// CollectionDiff is what changed in one collection.
type CollectionDiff struct {
	Name           string
	Status         string // "added", "dropped" or "modified"
	OptionsChanged bool
	IndexesChanged bool
	Added          []DocChange
	Removed        []DocChange
	Modified       []DocChange
}

// stateOf loads the state a diff side stands for.
func (d *Database) stateOf(ctx context.Context, side DiffSide) (*rootState, error) {
	if side.Working && !side.Rev.ReadOnly() {
		var st *rootState
		err := d.lockedBranch(ctx, side.Rev.Branch, func(b *branch) error {
			st = b.state.Load()
			return nil
		})
		return st, err
	}
	c, err := d.revisionCommit(ctx, side.Rev)
	if err != nil {
		return nil, err
	}
	return d.commitState(ctx, c)
}

// Diff compares two sides, per collection (only coll when set). Its cost
// follows the size of the change: unchanged subtrees are skipped by hash.
func (d *Database) Diff(ctx context.Context, from, to DiffSide, coll string) ([]CollectionDiff, error) {
	if err := d.hold(ctx); err != nil {
		return nil, err
	}
	defer d.release()
	a, err := d.stateOf(ctx, from)
	if err != nil {
		return nil, err
	}
	b, err := d.stateOf(ctx, to)
	if err != nil {
		return nil, err
	}
	return d.diffStates(ctx, a, b, coll, true)
}

func (d *Database) diffStates(ctx context.Context, a, b *rootState, only string, withFields bool) ([]CollectionDiff, error) {
	var out []CollectionDiff
	for _, name := range unionNames(a, b) {
		if only != "" && name != only {
			continue
		}
		cd, changed, err := d.diffCollection(ctx, a, b, name, withFields)
		if err != nil {
			return nil, err
		}
		if changed {
			out = append(out, cd)
		}
	}
	return out, nil
}

func unionNames(a, b *rootState) []string {
	seen := map[string]bool{}
	var names []string
	for _, st := range []*rootState{a, b} {
		for _, n := range st.collectionNames() {
			if !seen[n] {
				seen[n] = true
				names = append(names, n)
			}
		}
	}
	sort.Strings(names)
	return names
}

func (d *Database) diffCollection(ctx context.Context, a, b *rootState, name string, withFields bool) (CollectionDiff, bool, error) {
	cd := CollectionDiff{Name: name, Status: "modified"}
	ca, aok := a.colls.lookup(name)
	cb, bok := b.colls.lookup(name)
	switch {
	case !aok:
		cd.Status = "added"
	case !bok:
		cd.Status = "dropped"
	default:
		cd.OptionsChanged = !bytes.Equal(ca.info.Options, cb.info.Options)
		cd.IndexesChanged = !sameSpecs(ca.info.Indexes, cb.info.Indexes)
		if ca.base.HashOf() == cb.base.HashOf() && !cd.OptionsChanged && !cd.IndexesChanged {
			return cd, false, nil
		}
	}
	from, _, err := d.mapOf(ctx, a, name)
	if err != nil {
		return cd, false, err
	}
	to, _, err := d.mapOf(ctx, b, name)
	if err != nil {
		return cd, false, err
	}
	err = prolly.DiffMaps(ctx, from, to, false, func(ctx context.Context, df tree.Diff) error {
		return d.addDocChange(ctx, &cd, df, withFields)
	})
	if !errors.Is(err, io.EOF) { // DiffMaps ends with io.EOF
		return cd, false, err
	}
	return cd, true, nil
}

func (d *Database) addDocChange(ctx context.Context, cd *CollectionDiff, df tree.Diff, withFields bool) error {
	if df.Type == tree.ModifiedDiff {
		ch, err := d.modifiedDoc(ctx, val.Tuple(df.From), val.Tuple(df.To), withFields)
		cd.Modified = append(cd.Modified, ch)
		return err
	}
	var ch DocChange
	var err error
	if df.From != nil {
		if ch.From, err = d.docOf(ctx, df.From); err != nil {
			return err
		}
	}
	if df.To != nil {
		if ch.To, err = d.docOf(ctx, df.To); err != nil {
			return err
		}
	}
	switch df.Type {
	case tree.AddedDiff:
		ch.ID = ch.To.Lookup("_id")
		cd.Added = append(cd.Added, ch)
	default:
		ch.ID = ch.From.Lookup("_id")
		cd.Removed = append(cd.Removed, ch)
	}
	return nil
}

var idOnly = doctree.NewFields([]string{"_id"})

// modifiedDoc describes a modified document by its _id and, withFields,
// its field changes. Of two doctrees it reads only what changed.
func (d *Database) modifiedDoc(ctx context.Context, from, to val.Tuple, withFields bool) (DocChange, error) {
	ta, aTree, err := docTree(ctx, d.ns, from)
	if err != nil {
		return DocChange{}, err
	}
	tb, bTree, err := docTree(ctx, d.ns, to)
	if err != nil {
		return DocChange{}, err
	}
	if aTree && bTree {
		ids, err := tb.Project(ctx, idOnly)
		ch := DocChange{ID: bsoncore.Document(ids).Lookup("_id")}
		if err == nil && withFields {
			ch.Fields, err = doctree.Diff(ctx, ta, tb, false, diffValues)
		}
		return ch, err
	}
	a, err := d.docOf(ctx, tree.Item(from))
	if err != nil {
		return DocChange{}, err
	}
	b, err := d.docOf(ctx, tree.Item(to))
	if err != nil {
		return DocChange{}, err
	}
	ch := DocChange{ID: b.Lookup("_id")}
	if withFields {
		ch.Fields = FieldDiff(a, b)
	}
	return ch, nil
}

func (d *Database) docOf(ctx context.Context, item tree.Item) (bsoncore.Document, error) {
	b, err := valueBytes(ctx, d.ns, val.Tuple(item))
	return append(bsoncore.Document(nil), b...), err
}

// FieldDiff lists the field-level changes from a to b, with dotted paths
// (array elements by index: items.2.qty).
func FieldDiff(a, b bsoncore.Document) []FieldChange {
	var out []FieldChange
	diffDocs("", a, b, &out, false)
	return out
}

var joinPath = doctree.JoinPath

// diffDocs appends the changes from a to b; with atomicArrays a changed
// array is one change.
func diffDocs(prefix string, a, b bsoncore.Document, out *[]FieldChange, atomicArrays bool) {
	aels, _ := a.Elements()
	bels, _ := b.Elements()
	inB := make(map[string]bsoncore.Value, len(bels))
	for _, el := range bels {
		inB[el.Key()] = el.Value()
	}
	inA := make(map[string]bool, len(aels))
	for _, el := range aels {
		inA[el.Key()] = true
		bv, ok := inB[el.Key()]
		if !ok {
			*out = append(*out, FieldChange{Path: joinPath(prefix, el.Key()), From: el.Value()})
			continue
		}
		diffValuesOf(joinPath(prefix, el.Key()), el.Value(), bv, out, atomicArrays)
	}
	for _, el := range bels {
		if !inA[el.Key()] {
			*out = append(*out, FieldChange{Path: joinPath(prefix, el.Key()), To: el.Value()})
		}
	}
}

// diffValues and diffValuesAtomic compare two values at path (a
// doctree.ValueDiff), the second keeping arrays whole.
func diffValues(path string, a, b bsoncore.Value, out *[]FieldChange) {
	diffValuesOf(path, a, b, out, false)
}

func diffValuesAtomic(path string, a, b bsoncore.Value, out *[]FieldChange) {
	diffValuesOf(path, a, b, out, true)
}

func diffValuesOf(path string, a, b bsoncore.Value, out *[]FieldChange, atomicArrays bool) {
	if a.Type == b.Type && bytes.Equal(a.Data, b.Data) {
		return
	}
	switch {
	case a.Type == bsoncore.TypeEmbeddedDocument && b.Type == bsoncore.TypeEmbeddedDocument:
		diffDocs(path, a.Document(), b.Document(), out, atomicArrays)
	case a.Type == bsoncore.TypeArray && b.Type == bsoncore.TypeArray && !atomicArrays:
		diffArrays(path, a.Array(), b.Array(), out)
	default:
		*out = append(*out, FieldChange{Path: path, From: a, To: b})
	}
}

func diffArrays(path string, a, b bsoncore.Array, out *[]FieldChange) {
	av, _ := a.Values()
	bv, _ := b.Values()
	for i := 0; i < max(len(av), len(bv)); i++ {
		p := joinPath(path, strconv.Itoa(i))
		switch {
		case i >= len(av):
			*out = append(*out, FieldChange{Path: p, To: bv[i]})
		case i >= len(bv):
			*out = append(*out, FieldChange{Path: p, From: av[i]})
		default:
			diffValues(p, av[i], bv[i], out)
		}
	}
}

// StatusInfo is a branch's state relative to its head commit.
type StatusInfo struct {
	Branch  string
	Head    string
	Dirty   bool
	Changes []CollectionDiff // documents only counted, no field lists
	Merge   bsoncore.Document
}

// Status compares a branch's working state with its head commit.
func (d *Database) Status(ctx context.Context, branchName string) (StatusInfo, error) {
	if err := d.hold(ctx); err != nil {
		return StatusInfo{}, err
	}
	defer d.release()
	info := StatusInfo{Branch: branchName}
	var work *rootState
	err := d.lockedBranch(ctx, branchName, func(b *branch) error {
		work = b.state.Load()
		same, err := sameData(ctx, d.ns, work.root, b.headRef.TargetHash())
		info.Dirty = !same
		return err
	})
	if err != nil {
		return info, err
	}
	head, err := d.headCommit(ctx, branchName)
	if err != nil {
		return info, err
	}
	info.Head = head.Addr().String()
	headState, err := d.commitState(ctx, head)
	if err != nil {
		return info, err
	}
	info.Merge = work.merge
	info.Changes, err = d.diffStates(ctx, headState, work, "", false)
	return info, err
}

func sameSpecs(a, b []bsoncore.Document) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}
