package storage

import (
	"context"
	"strings"

	"github.com/dolthub/dolt/go/store/prolly/tree"
	"github.com/dolthub/dolt/go/store/val"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/storage/doctree"
	"github.com/dumbodb/dumbodb/value"
)

// mergeTrees merges a document changed on both sides when all three
// versions are doctrees: it diffs each side against the base reading only
// what changed, and when the changes touch disjoint fields writes ours with
// theirs applied. ok is false when the versions are not all doctrees or
// the changes overlap; mergeDocs then decides on the whole documents, so
// the outcome is the same as for small documents.
func (d *Database) mergeTrees(ctx context.Context, base, ours, theirs tree.Item) (val.Tuple, bool, error) {
	var trees [3]doctree.Tree
	for i, item := range []tree.Item{base, ours, theirs} {
		t, isTree, err := docTree(ctx, d.ns, val.Tuple(item))
		if err != nil || !isTree {
			return nil, false, err
		}
		trees[i] = t
	}
	ourChanges, err := doctree.Diff(ctx, trees[0], trees[1], true, diffValuesAtomic)
	if err != nil {
		return nil, false, err
	}
	theirChanges, err := doctree.Diff(ctx, trees[0], trees[2], true, diffValuesAtomic)
	if err != nil {
		return nil, false, err
	}
	apply, ok := disjointChanges(ourChanges, theirChanges)
	if !ok {
		return nil, false, nil
	}
	doc, err := trees[1].Document(ctx)
	if err != nil {
		return nil, false, err
	}
	for _, c := range apply {
		doc = setPath(doc, strings.Split(c.Path, "."), c.To)
	}
	v, err := docValueTuple(ctx, d.ns, doc, d.largeDoc())
	return v, err == nil, err
}

// disjointChanges returns theirs' changes that ours lacks, or false when a
// field changed on both sides in different ways (or one side changed a
// field inside another the other side changed).
func disjointChanges(ours, theirs []FieldChange) ([]FieldChange, bool) {
	var apply []FieldChange
	for _, t := range theirs {
		same := false
		for _, o := range ours {
			switch {
			case o.Path == t.Path && value.Same(o.To, t.To):
				same = true
			case o.Path == t.Path || strings.HasPrefix(o.Path, t.Path+".") || strings.HasPrefix(t.Path, o.Path+"."):
				return nil, false
			}
		}
		if !same {
			apply = append(apply, t)
		}
	}
	return apply, true
}

// setPath sets the field at path to v (removes it when v is missing),
// appending a new field at the end of its document as $set does.
func setPath(doc bsoncore.Document, path []string, v bsoncore.Value) bsoncore.Document {
	b := bsoncore.NewDocumentBuilder()
	els, _ := doc.Elements()
	found := false
	for _, el := range els {
		switch {
		case el.Key() != path[0] || found:
			b.AppendValue(el.Key(), el.Value())
		case len(path) == 1:
			found = true
			if v.Type != 0 {
				b.AppendValue(el.Key(), v)
			}
		default:
			found = true
			sub, ok := el.Value().DocumentOK()
			if !ok {
				sub = bsoncore.NewDocumentBuilder().Build()
			}
			b.AppendDocument(el.Key(), setPath(sub, path[1:], v))
		}
	}
	if !found && v.Type != 0 {
		if len(path) == 1 {
			b.AppendValue(path[0], v)
		} else {
			b.AppendDocument(path[0], setPath(bsoncore.NewDocumentBuilder().Build(), path[1:], v))
		}
	}
	return b.Build()
}
