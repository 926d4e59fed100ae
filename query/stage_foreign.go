package query

import (
	"context"
	"errors"
	"io"
	"sort"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/interrupt"
	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/value"
)

// Stages that read other collections through the Catalog: $lookup
// (stage_lookup.go), $graphLookup (stage_graphlookup.go) and $unionWith
// (stage_unionwith.go). Each loads the foreign collection once per run
// and, for equality matches, indexes it by the foreign field so a join
// costs a hash probe per local value rather than a scan. This file holds
// what they share.

// withVars returns an Env that adds variables to e.
func (e *Env) withVars(names []string, vals []bsoncore.Value) *Env {
	n := &Env{Collation: e.coll(), vars: map[string]bsoncore.Value{}}
	if e != nil {
		n.now, n.JS, n.JSScope, n.ctx = e.now, e.JS, e.JSScope, e.ctx
		for k, v := range e.vars {
			n.vars[k] = v
		}
	} else {
		n.now = value.Date(0)
	}
	for i, name := range names {
		n.vars[name] = vals[i]
	}
	return n
}

// scanCollection streams another collection of the database; a pipeline
// without a Catalog, or a stage without a collection ($documents in a
// sub-pipeline), reads none.
func scanCollection(ctx context.Context, pc *pipeCtx, coll string) (Stream, error) {
	if pc.opts.Catalog == nil || coll == "" {
		return &sliceStream{}, nil
	}
	return pc.opts.Catalog.Scan(ctx, coll)
}

// foreignColl is the collection $lookup or $graphLookup joins with. It is
// loaded once, and indexed by the joined field, as long as it fits in the
// memory limit, as mongod builds a hash join's table; past the limit it
// is scanned again for every probe instead, as mongod's nested-loop join
// does, so that memory stays bounded whatever the collection's size.
type foreignColl struct {
	pc     *pipeCtx
	name   string
	path   string // the field joined by equality ("" for none)
	loaded bool
	held   bool // docs hold the whole collection
	docs   []bsoncore.Document
	fi     *foreignIndex // on path, when held
}

func (f *foreignColl) load(ctx context.Context) error {
	if f.loaded {
		return nil
	}
	f.loaded = true
	s, err := scanCollection(ctx, f.pc, f.name)
	if err != nil {
		return err
	}
	var size int64
	for {
		d, err := s.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		if size += int64(len(d)); size > f.pc.opts.MemoryLimit {
			f.docs = nil // scanned from now on
			return nil
		}
		f.docs = append(f.docs, d)
	}
	f.held = true
	if f.path != "" {
		f.fi, err = newForeignIndex(ctx, f.docs, f.path, f.pc.env.coll())
	}
	return err
}

// all streams the whole collection.
func (f *foreignColl) all(ctx context.Context) (Stream, error) {
	if err := f.load(ctx); err != nil {
		return nil, err
	}
	if f.held {
		return &sliceStream{docs: f.docs}, nil
	}
	return scanCollection(ctx, f.pc, f.name)
}

// candidates streams, in collection order, documents among which are all
// those whose path may equal one of vals; callers confirm with a filter.
func (f *foreignColl) candidates(ctx context.Context, vals []bsoncore.Value) (Stream, error) {
	if err := f.load(ctx); err != nil {
		return nil, err
	}
	if f.held {
		return &sliceStream{docs: f.fi.candidates(vals)}, nil
	}
	return scanCollection(ctx, f.pc, f.name)
}

// foreignIndex maps the values at one path of a document set to the
// positions of the documents holding them (missing and null key as null).
type foreignIndex struct {
	docs []bsoncore.Document
	coll *value.Collation
	idx  map[string][]int
}

func newForeignIndex(ctx context.Context, docs []bsoncore.Document, path string, coll *value.Collation) (*foreignIndex, error) {
	fi := &foreignIndex{docs: docs, coll: coll, idx: map[string][]int{}}
	parts := value.SplitPath(path)
	var interrupt interrupt.Pacer
	for i, d := range docs {
		if err := interrupt.Check(ctx); err != nil {
			return nil, err
		}
		vals := pathValues(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: d}, parts)
		if len(vals) == 0 {
			vals = []bsoncore.Value{value.Null}
		}
		keys := map[string]bool{}
		for _, v := range vals {
			keys[fi.key(v)] = true
			if v.Type == bsoncore.TypeArray {
				if value.ArrayLen(v.Data) == 0 {
					keys[fi.key(bsoncore.Value{Type: bsoncore.TypeUndefined})] = true
				}
				for _, e := range value.ArrayValues(v.Data) {
					keys[fi.key(e)] = true
				}
			}
		}
		for k := range keys {
			fi.idx[k] = append(fi.idx[k], i)
		}
	}
	return fi, nil
}

// key is a coarse key: equal values always share it. Under a collation,
// strings that differ in bytes may be equal, so they all share one key.
func (fi *foreignIndex) key(v bsoncore.Value) string {
	if nullish(v) {
		return "null"
	}
	if fi.coll != nil && v.Type == bsoncore.TypeString {
		return "s"
	}
	return bucketKey(v)
}

// candidates returns, in collection order, the documents that may hold
// one of vals; callers confirm with a filter.
func (fi *foreignIndex) candidates(vals []bsoncore.Value) []bsoncore.Document {
	seen := map[int]bool{}
	var pos []int
	for _, v := range vals {
		for _, i := range fi.idx[fi.key(v)] {
			if !seen[i] {
				seen[i] = true
				pos = append(pos, i)
			}
		}
	}
	sort.Ints(pos)
	out := make([]bsoncore.Document, len(pos))
	for j, i := range pos {
		out[j] = fi.docs[i]
	}
	return out
}

// inFilters caches the compiled {path: {$in: vals}} filters of one
// $lookup run by their values, so that input documents joining on the
// same values do not compile the filter again. A nil cache compiles
// every time.
type inFilters struct{ m map[string]*Filter }

const maxCachedInFilters = 4096

// in is the filter keeping the documents whose path equals one of vals,
// with the query language's equality ({path: {$in: vals}}).
func (c *inFilters) in(path string, vals []bsoncore.Value, env *Env) (*Filter, error) {
	in := bsoncore.NewArrayBuilder()
	for _, v := range vals {
		in.AppendValue(v)
	}
	arr := in.Build()
	if c != nil && c.m[string(arr)] != nil {
		return c.m[string(arr)], nil
	}
	f, err := CompileFilterEnv(bsoncore.NewDocumentBuilder().
		AppendDocument(path, bsoncore.NewDocumentBuilder().AppendArray("$in", arr).Build()).Build(), env)
	if err != nil {
		return nil, err
	}
	if c != nil {
		if c.m == nil || len(c.m) >= maxCachedInFilters {
			c.m = map[string]*Filter{}
		}
		c.m[string(arr)] = f
	}
	return f, nil
}

// EqualityCatalog is a Catalog that can find a collection's documents by
// equality on one field through an index, so that $lookup probes the
// foreign collection per input document instead of loading it whole.
type EqualityCatalog interface {
	Catalog
	// LookupEqual returns, in the collection's (_id) order, documents of
	// coll among which are all those whose path equals one of vals by the
	// query language's binary equality ({path: {$in: vals}}, no
	// collation); the caller filters them. ok is false when no index
	// serves path and these values; the caller then scans.
	LookupEqual(ctx context.Context, coll, path string, vals []bsoncore.Value) (docs []bsoncore.Document, ok bool, err error)
}

// localValues are the values a local field joins on: the elements of an
// array, null for missing.
func localValues(v bsoncore.Value) []bsoncore.Value {
	switch {
	case v.Type == 0:
		return []bsoncore.Value{value.Null}
	case v.Type == bsoncore.TypeArray:
		return value.ArrayValues(v.Data)
	}
	return []bsoncore.Value{v}
}

// lookupFrom reads a from/coll argument: a name, or {db, coll} naming the
// pipeline's own database.
func lookupFrom(v bsoncore.Value, pc *pipeCtx) (string, error) {
	switch v.Type {
	case bsoncore.TypeString:
		if v.StringValue() == "" {
			return "", mongoerr.New(mongoerr.InvalidNamespace, "invalid $lookup namespace")
		}
		return v.StringValue(), nil
	case bsoncore.TypeEmbeddedDocument:
		db, _ := value.LookupField(v.Data, "db")
		coll, _ := value.LookupField(v.Data, "coll")
		if coll.Type != bsoncore.TypeString || (db.Type != 0 && db.Type != bsoncore.TypeString) {
			return "", mongoerr.New(mongoerr.FailedToParse, "the 'from' namespace must be a collection name or {db, coll}")
		}
		if db.Type == bsoncore.TypeString && db.StringValue() != pc.opts.DB {
			return "", mongoerr.New(mongoerr.NotImplemented, "a foreign collection in another database is not supported by DumboDB")
		}
		return coll.StringValue(), nil
	}
	return "", mongoerr.New(mongoerr.FailedToParse, "$lookup 'from' field must be a string or an object, but found %s", value.TypeName(v.Type))
}
