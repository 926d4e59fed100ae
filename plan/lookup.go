package plan

import (
	"bytes"
	"context"
	"errors"
	"io"
	"sort"

	"github.com/dumbodb/dumbodb/index"
	"github.com/dumbodb/dumbodb/storage"
	"github.com/dumbodb/dumbodb/value"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// LookupEqual probes the index on path (or the _id itself) of coll for the
// local values of a $lookup, as query.EqualityCatalog asks. It declines (ok false) when
// no usable index leads with path or a value cannot be probed by point
// (arrays, regexes, MinKey/MaxKey, NaN match other than by equal keys).
func LookupEqual(ctx context.Context, rd storage.Reader, coll, path string, vals []bsoncore.Value) ([]bsoncore.Document, bool, error) {
	for _, v := range vals {
		if !probeable(v) {
			return nil, false, nil
		}
	}
	points := probePoints(vals)
	if path == "_id" {
		return lookupIDs(ctx, rd, coll, points)
	}
	ix := LookupIndex(rd.Indexes(coll), path)
	if ix == nil {
		return nil, false, nil
	}
	docs, err := indexDocs(ctx, rd, coll, ix.Spec.Name, lookupBounds(ix, points))
	return docs, err == nil, err
}

// lookupIDs fetches documents by _id values, in _id order.
func lookupIDs(ctx context.Context, rd storage.Reader, coll string, points []bsoncore.Value) ([]bsoncore.Document, bool, error) {
	seen := map[string]bool{}
	var keys []string
	for _, v := range points {
		k := string(index.EncodeID(nil, v))
		if !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var docs []bsoncore.Document
	for _, k := range keys {
		doc, found, err := rd.GetKey(ctx, coll, []byte(k))
		if err != nil {
			return nil, false, err
		}
		if found {
			docs = append(docs, doc)
		}
	}
	return docs, true, nil
}

// probeable says whether the documents equal to v are exactly those with
// an index key equal to v's (null also: undefined, missing).
func probeable(v bsoncore.Value) bool {
	switch v.Type {
	case bsoncore.TypeArray, bsoncore.TypeRegex, bsoncore.TypeMinKey, bsoncore.TypeMaxKey:
		return false
	case bsoncore.TypeDouble, bsoncore.TypeDecimal128:
		return !value.ExactNumber(v).NaN
	}
	return true
}

// probePoints are the key values to probe for vals: a null (or missing,
// or undefined) local value joins foreign nulls, undefineds and missing
// fields, which indexes key as null, and empty arrays, keyed undefined.
func probePoints(vals []bsoncore.Value) []bsoncore.Value {
	out := make([]bsoncore.Value, 0, len(vals)+1)
	nullish := false
	for _, v := range vals {
		switch v.Type {
		case 0, bsoncore.TypeNull, bsoncore.TypeUndefined:
			nullish = true
		default:
			out = append(out, v)
		}
	}
	if nullish {
		out = append(out, bsoncore.Value{Type: bsoncore.TypeNull}, bsoncore.Value{Type: bsoncore.TypeUndefined})
	}
	return out
}

// LookupIndex picks the usable index whose first key field is path, the
// one with the fewest fields; nil when there is none. Probes are binary
// equality, so an index with a collation does not qualify.
func LookupIndex(indexes []storage.IndexInfo, path string) *storage.IndexInfo {
	var best *storage.IndexInfo
	for i := range indexes {
		ix := &indexes[i]
		if !usable(ix) || ix.Spec.Collation() != nil || ix.Spec.Fields[0].Path != path || ix.Spec.Hashed() {
			continue
		}
		if best == nil || len(ix.Spec.Fields) < len(best.Spec.Fields) {
			best = ix
		}
	}
	return best
}

// lookupBounds are the bounds of ix at the points for its first key
// field, every value of the later ones.
func lookupBounds(ix *storage.IndexInfo, points []bsoncore.Value) [][]index.FieldInterval {
	first := make([]index.FieldInterval, 0, len(points))
	for _, v := range points {
		iv := index.PointInterval(v, "")
		if ix.Spec.Fields[0].Desc {
			iv = iv.Descending()
		}
		first = append(first, iv)
	}
	sort.Slice(first, func(i, j int) bool { return bytes.Compare(first[i].Lo, first[j].Lo) < 0 })
	bounds := [][]index.FieldInterval{first}
	for _, f := range ix.Spec.Fields[1:] {
		bounds = append(bounds, []index.FieldInterval{fullFor(f)})
	}
	return bounds
}

// IndexPoint reads through ix the documents whose key is the one value
// byPath gives each of its fields ($merge's look-up of its target by the
// on fields' unique index).
func IndexPoint(ctx context.Context, rd storage.Reader, coll string, ix *storage.IndexInfo, byPath map[string]bsoncore.Value) ([]bsoncore.Document, error) {
	var bounds [][]index.FieldInterval
	for _, f := range ix.Spec.Fields {
		iv := index.PointInterval(byPath[f.Path], "")
		if f.Desc {
			iv = iv.Descending()
		}
		bounds = append(bounds, []index.FieldInterval{iv})
	}
	return indexDocs(ctx, rd, coll, ix.Spec.Name, bounds)
}

// indexDocs reads the documents of the index entries within bounds, each
// once, in _id order.
func indexDocs(ctx context.Context, rd storage.Reader, coll, ixName string, bounds [][]index.FieldInterval) ([]bsoncore.Document, error) {
	seen := map[string]bool{}
	var ids [][]byte
	for _, iv := range index.EntryIntervals(bounds) {
		err := eachEntryID(ctx, rd, coll, ixName, iv, func(id []byte) {
			if !seen[string(id)] {
				seen[string(id)] = true
				ids = append(ids, id)
			}
		})
		if err != nil {
			return nil, err
		}
	}
	sort.Slice(ids, func(i, j int) bool { return bytes.Compare(ids[i], ids[j]) < 0 })
	docs := make([]bsoncore.Document, 0, len(ids))
	for _, id := range ids {
		doc, found, err := rd.GetKey(ctx, coll, id)
		if err != nil {
			return nil, err
		}
		if found {
			docs = append(docs, doc)
		}
	}
	return docs, nil
}

// eachEntryID calls fn with the _id key of every entry of an index in an
// interval.
func eachEntryID(ctx context.Context, rd storage.Reader, coll, ixName string, iv index.Interval, fn func(id []byte)) error {
	return eachEntry(ctx, rd, coll, ixName, iv, func(_, id []byte) { fn(id) })
}

// eachEntry calls fn with every entry of an index in an interval (its key,
// the _id key included) and its _id key.
func eachEntry(ctx context.Context, rd storage.Reader, coll, ixName string, iv index.Interval, fn func(entry, id []byte)) error {
	it, err := rd.IndexScan(ctx, coll, ixName, iv)
	if err != nil {
		return err
	}
	for {
		entry, id, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		fn(entry, id)
	}
}
