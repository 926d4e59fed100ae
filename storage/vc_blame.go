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
// re-created it. The walk goes over the history index's summaries
// (vc_history_index.go): only commits that changed the document are read,
// each once.
func (d *Database) Blame(ctx context.Context, rev Revision, coll string, id bsoncore.Value) (bsoncore.Document, []BlameLine, error) {
	if err := d.hold(ctx); err != nil {
		return nil, nil, err
	}
	defer d.release()
	defer d.flushHistoryIndex()
	start, err := d.revisionCommit(ctx, rev)
	if err != nil {
		return nil, nil, err
	}
	key := encodeID(id)
	b := &blamer{d: d, coll: coll, key: key, keyHash: keyHash(key), versions: map[hash.Hash]map[string]string{}, origin: map[hash.Hash]hash.Hash{}}
	doc, order, err := b.read(ctx, start.Addr())
	if err != nil || doc == nil {
		return nil, nil, cmpErr(err, fmt.Errorf("%w: no document with that _id in %s at that revision", ErrDocumentNotFound, coll))
	}
	refs, err := d.refsByCommit(ctx)
	if err != nil {
		return nil, nil, err
	}
	var out []BlameLine
	for _, path := range order {
		addr, err := b.setter(ctx, start.Addr(), path)
		if err != nil {
			return nil, nil, err
		}
		c, err := datas.LoadCommitAddr(ctx, d.vs, addr)
		if err != nil {
			return nil, nil, err
		}
		info, err := d.describe(ctx, c, refs)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, BlameLine{Path: path, Commit: info})
	}
	return doc, out, nil
}

func cmpErr(err, otherwise error) error {
	if err != nil {
		return err
	}
	return otherwise
}

// blamer reads and remembers the document's versions, flattened to leaf
// paths, by commit.
type blamer struct {
	d        *Database
	coll     string
	key      []byte
	keyHash  uint64
	versions map[hash.Hash]map[string]string // nil map: no document
	// origin is, for each commit whose version is known, the commit down
	// its first parents where that version was read: every commit
	// between left the document as it was.
	origin map[hash.Hash]hash.Hash
}

// version is the document at a commit flattened (nil: none there). A
// commit whose summary says it did not change the document has its first
// parent's version, which is found without reading the commits between.
func (b *blamer) version(ctx context.Context, addr hash.Hash) (map[string]string, error) {
	var same []hash.Hash // commits with the version found below
	for {
		if err := ctx.Err(); err != nil { // the chain may be the whole history
			return nil, err
		}
		if v, ok := b.versions[addr]; ok {
			return b.remember(same, v, b.origin[addr]), nil
		}
		s, err := b.d.summary(ctx, addr)
		if err != nil {
			return nil, err
		}
		if touched, _ := s.touches(b.coll, b.keyHash); touched || len(s.parents) == 0 {
			break
		}
		same = append(same, addr)
		addr = s.parents[0]
	}
	if _, _, err := b.read(ctx, addr); err != nil {
		return nil, err
	}
	return b.remember(same, b.versions[addr], addr), nil
}

// remember records that the commits of same have the version v read at
// origin.
func (b *blamer) remember(same []hash.Hash, v map[string]string, origin hash.Hash) map[string]string {
	for _, a := range same {
		b.versions[a], b.origin[a] = v, origin
	}
	return v
}

// read looks the document up at a commit, remembers its flattened
// version and returns it whole with its paths in order.
func (b *blamer) read(ctx context.Context, addr hash.Hash) (bsoncore.Document, []string, error) {
	c, err := datas.LoadCommitAddr(ctx, b.d.vs, addr)
	if err != nil {
		return nil, nil, err
	}
	st, err := b.d.commitState(ctx, c)
	if err != nil {
		return nil, nil, err
	}
	var flat map[string]string
	var doc bsoncore.Document
	var order []string
	if cs, ok := st.colls.lookup(b.coll); ok {
		raw, found, err := lookup(ctx, b.d.ns, cs.base, nil, b.key)
		if err != nil {
			return nil, nil, err
		}
		if found {
			flat, doc = map[string]string{}, raw
			order = flattenDoc(doc, "", flat)
		}
	}
	b.versions[addr], b.origin[addr] = flat, addr
	return doc, order, nil
}

// setter traces path from a commit to the commit that set its value.
func (b *blamer) setter(ctx context.Context, addr hash.Hash, path string) (hash.Hash, error) {
	for {
		if err := ctx.Err(); err != nil { // the trace may go down every commit
			return hash.Hash{}, err
		}
		cur, err := b.version(ctx, addr)
		if err != nil {
			return hash.Hash{}, err
		}
		// Down to where the version was read, each commit's first parent
		// has the same value: the trace goes there at once.
		if o := b.origin[addr]; o != addr {
			addr = o
			continue
		}
		s, err := b.d.summary(ctx, addr)
		if err != nil {
			return hash.Hash{}, err
		}
		next, found, err := b.sameIn(ctx, s.parents, path, cur[path])
		if err != nil || !found {
			return addr, err
		}
		addr = next
	}
}

// sameIn is the first parent whose document has value v at path.
func (b *blamer) sameIn(ctx context.Context, parents []hash.Hash, path, v string) (hash.Hash, bool, error) {
	for _, p := range parents {
		pv, err := b.version(ctx, p)
		if err != nil {
			return hash.Hash{}, false, err
		}
		if got, ok := pv[path]; ok && got == v {
			return p, true, nil
		}
	}
	return hash.Hash{}, false, nil
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
