package storage

import (
	"context"
	"fmt"
	"strconv"

	"github.com/dolthub/dolt/go/store/datas"
	"github.com/dolthub/dolt/go/store/hash"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// BlameLine is one field path of a document and the commit that last set
// it.
type BlameLine struct {
	Path   string
	Commit CommitInfo
}

// Blame answers, for each field path of a document at a revision's commit
// (a branch: its head commit), the commit that last set the field's value.
// Each path is traced down the history: from a commit to the parent whose
// version of the document has the same value there (the first such
// parent), until a commit whose parents all differ, which set it. A
// document deleted and created again is set anew by the commit that
// re-created it. Only commits whose version of the document is looked up
// cost anything beyond their parents' addresses; versions are read once.
func (d *Database) Blame(ctx context.Context, rev Revision, coll string, id bsoncore.Value) (bsoncore.Document, []BlameLine, error) {
	if err := d.hold(ctx); err != nil {
		return nil, nil, err
	}
	defer d.release()
	start, err := d.revisionCommit(ctx, rev)
	if err != nil {
		return nil, nil, err
	}
	key, err := encodeID(id)
	if err != nil {
		return nil, nil, err
	}
	b := &blamer{d: d, coll: coll, key: key, versions: map[hash.Hash]map[string]string{}}
	doc, err := b.version(ctx, start)
	if err != nil || doc == nil {
		return nil, nil, cmpErr(err, fmt.Errorf("%w: no document with that _id in %s at that revision", ErrDocumentNotFound, coll))
	}
	refs, err := d.refsByCommit(ctx)
	if err != nil {
		return nil, nil, err
	}
	var out []BlameLine
	for _, path := range b.order[start.Addr()] {
		c, err := b.setter(ctx, start, path)
		if err != nil {
			return nil, nil, err
		}
		info, err := d.describe(ctx, c, refs)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, BlameLine{Path: path, Commit: info})
	}
	return b.raw[start.Addr()], out, nil
}

func cmpErr(err, otherwise error) error {
	if err != nil {
		return err
	}
	return otherwise
}

// blamer reads and remembers the document's versions, flattened to leaf
// paths.
type blamer struct {
	d        *Database
	coll     string
	key      []byte
	versions map[hash.Hash]map[string]string // nil map: no document
	order    map[hash.Hash][]string
	raw      map[hash.Hash]bsoncore.Document
}

// version is the document at commit c flattened (nil: none there).
func (b *blamer) version(ctx context.Context, c *datas.Commit) (map[string]string, error) {
	if v, ok := b.versions[c.Addr()]; ok {
		return v, nil
	}
	st, err := b.d.commitState(ctx, c)
	if err != nil {
		return nil, err
	}
	var flat map[string]string
	if cs, ok := st.colls.lookup(b.coll); ok {
		doc, found, err := lookup(ctx, b.d.ns, cs.base, nil, b.key)
		if err != nil {
			return nil, err
		}
		if found {
			flat = map[string]string{}
			if b.order == nil {
				b.order, b.raw = map[hash.Hash][]string{}, map[hash.Hash]bsoncore.Document{}
			}
			b.order[c.Addr()] = flattenDoc(doc, "", flat)
			b.raw[c.Addr()] = doc
		}
	}
	b.versions[c.Addr()] = flat
	return flat, nil
}

// setter traces path from c to the commit that set its value.
func (b *blamer) setter(ctx context.Context, c *datas.Commit, path string) (*datas.Commit, error) {
	for {
		if err := ctx.Err(); err != nil { // the trace may go down every commit
			return nil, err
		}
		cur, err := b.version(ctx, c)
		if err != nil {
			return nil, err
		}
		parents, err := datas.GetCommitParents(ctx, b.d.vs, c.NomsValue())
		if err != nil {
			return nil, err
		}
		next, err := b.sameIn(ctx, parents, path, cur[path])
		if err != nil || next == nil {
			return c, err
		}
		c = next
	}
}

// sameIn is the first parent whose document has value v at path.
func (b *blamer) sameIn(ctx context.Context, parents []*datas.Commit, path, v string) (*datas.Commit, error) {
	for _, p := range parents {
		pv, err := b.version(ctx, p)
		if err != nil {
			return nil, err
		}
		if got, ok := pv[path]; ok && got == v {
			return p, nil
		}
	}
	return nil, nil
}

// flattenDoc records each leaf of doc under its dotted path (array
// elements by index; an empty document or array is a leaf) and returns
// the paths in the document's order.
func flattenDoc(doc bsoncore.Document, prefix string, out map[string]string) []string {
	var order []string
	els, _ := doc.Elements()
	for _, el := range els {
		path := el.Key()
		if prefix != "" {
			path = prefix + "." + path
		}
		order = append(order, flattenValue(el.Value(), path, out)...)
	}
	return order
}

func flattenValue(v bsoncore.Value, path string, out map[string]string) []string {
	switch v.Type {
	case bsoncore.TypeEmbeddedDocument, bsoncore.TypeArray:
		if len(v.Data) > 5 {
			if v.Type == bsoncore.TypeEmbeddedDocument {
				return flattenDoc(v.Data, path, out)
			}
			var order []string
			vals, _ := bsoncore.Array(v.Data).Values()
			for i, e := range vals {
				order = append(order, flattenValue(e, path+"."+strconv.Itoa(i), out)...)
			}
			return order
		}
	}
	out[path] = string(append([]byte{byte(v.Type)}, v.Data...))
	return []string{path}
}
