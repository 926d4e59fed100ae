package plan

import (
	"bytes"
	"context"
	"errors"
	"io"
	"sort"
	"strings"

	"github.com/dumbodb/dumbodb/index"
	"github.com/dumbodb/dumbodb/interrupt"
	"github.com/dumbodb/dumbodb/query"
	"github.com/dumbodb/dumbodb/storage"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// underKey reports whether path is a key field of spec or lies inside one
// (a key field "c" holds all of "c.d").
func underKey(spec *index.Spec, path string) bool {
	for _, f := range spec.Fields {
		if path == f.Path || strings.HasPrefix(path, f.Path+".") {
			return true
		}
	}
	return false
}

func keyHasID(spec *index.Spec) bool {
	for _, f := range spec.Fields {
		if f.Path == "_id" {
			return true
		}
	}
	return false
}

// coverable reports whether a find on plan p can be answered from the
// index entries' stored key values (index.Spec.Covered) without fetching
// documents: the index is not multikey (its entries then hold each
// document projected onto the key fields), the projection includes only
// key fields and excludes _id unless _id is a key field, and the filter
// and any sort the index does not give read only key fields. Entries that
// lack stored values (written before they existed) are still fetched.
func coverable(p *Plan, f *query.Filter, proj, sortDoc bsoncore.Document) bool {
	if p.ix == nil || p.idHack || p.ix.Multikey || !p.ix.Spec.CanCover() || !nonEmpty(proj) {
		return false
	}
	spec := p.ix.Spec
	idIncluded, included := true, 0
	els, err := proj.Elements()
	if err != nil {
		return false
	}
	for _, el := range els {
		k, v := el.Key(), el.Value()
		if strings.Contains(k, "$") {
			return false
		}
		var on bool
		switch v.Type {
		case bsoncore.TypeBoolean:
			on = v.Boolean()
		case bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDouble:
			n, _ := v.AsFloat64OK()
			on = n != 0
		default:
			return false
		}
		if k == "_id" {
			idIncluded = on
			if on {
				included++
			}
			continue
		}
		if !on || !underKey(spec, k) {
			return false
		}
		included++
	}
	if included == 0 || (idIncluded && !keyHasID(spec)) {
		return false
	}
	paths, ok := f.Paths()
	if !ok {
		return false
	}
	for _, path := range paths {
		if !underKey(spec, path) {
			return false
		}
	}
	if nonEmpty(sortDoc) && !p.sorted {
		keys := plainSortKeys(sortDoc)
		if keys == nil {
			return false
		}
		for _, k := range keys {
			if !underKey(spec, k.path) {
				return false
			}
		}
	}
	return true
}

// cover makes a find answer from the index entries' stored key values
// when it can (coverable), its projection and sort being proj and sortDoc.
func (p *Plan) cover(f *query.Filter, proj, sortDoc bsoncore.Document) {
	p.covered = coverable(p, f, proj, sortDoc)
}

// DistinctValues gives distinct's values of key from the entries of a
// plan made by Distinct (distinctScan).
func (p *Plan) DistinctValues(ctx context.Context, rd storage.Reader, coll, key string) ([]bsoncore.Value, error) {
	return distinctScan(ctx, rd, coll, p, key, &execStats{})
}

// exactBounds reports whether p's index bounds select exactly the
// documents f matches, so that counting or walking entries needs no
// filter: f is a conjunction of indexable predicates, all on key fields
// that the bounds constrain (points on a prefix, then at most one ranged
// field), and the index has one entry per document (not multikey, sparse
// or partial). Under a collation other than the index's, a predicate on
// strings, documents or arrays is not in the bounds (collationPreds).
func exactBounds(p *Plan, f *query.Filter) bool {
	if p.ix == nil || p.idHack || p.ix.Multikey || p.text != nil || p.wildPath != "" || p.ix.Spec.Hashed() {
		return false // a hashed index's bounds hold every value of a hash
	}
	s := p.ix.Spec
	if s.Sparse || s.Partial != nil {
		return false
	}
	preds, ok := f.ExactPredicates()
	if !ok || len(collationPreds(preds, s.Collation(), f.Collation())) != len(preds) {
		return false
	}
	open := true // every field so far is bounded by points
	onKey := 0
	for _, fl := range s.Fields {
		if index.HasNumericComponent(fl.Path) {
			return false
		}
		has, point := false, false
		for _, pr := range preds {
			if pr.Path == fl.Path {
				has = true
				onKey++
				point = point || pr.Op == "$eq" || pr.Op == "$in"
			}
		}
		if has && !open {
			return false
		}
		if !has || !point {
			open = false
		}
	}
	return onKey == len(preds)
}

// countScan counts the entries within p's bounds (exactBounds holds).
func countScan(ctx context.Context, rd storage.Reader, coll string, p *Plan, st *execStats) (int64, error) {
	var n int64
	for _, iv := range p.intervals {
		it, err := rd.IndexScan(ctx, coll, p.ix.Spec.Name, iv)
		if err != nil {
			return 0, err
		}
		for {
			if err := interrupt.Err(ctx); err != nil {
				return 0, err
			}
			if _, _, err := it.Next(ctx); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				return 0, err
			}
			n++
		}
	}
	st.keysExamined += n
	return n, nil
}

// Distinct plans distinct on key for f from an index: one
// with key as a key field whose bounds express f exactly (exactBounds),
// preferring an index on key alone, whose distinct values can be reached
// by skipping from one to the next. nil when none fits.
func Distinct(rd storage.Reader, coll string, f *query.Filter, key string) *Plan {
	preds, ok := f.ExactPredicates()
	if !ok {
		return nil
	}
	var best *Plan
	indexes := rd.Indexes(coll)
	for i := range indexes {
		ix := &indexes[i]
		if !usable(ix) || ix.Multikey || !ix.Spec.CanCover() || fieldPos(ix.Spec, key) < 0 {
			continue
		}
		p, _ := indexPlan(ix, preds, nil, f.Collation())
		if !exactBounds(p, f) {
			continue
		}
		if best == nil || (len(ix.Spec.Fields) == 1 && len(best.ix.Spec.Fields) != 1) {
			best = p
		}
	}
	return best
}

func fieldPos(spec *index.Spec, path string) int {
	for i, f := range spec.Fields {
		if f.Path == path {
			return i
		}
	}
	return -1
}

// distinctScan gives distinct's values from the entries of plan p
// (Distinct), in the order a collection scan gives them: for each
// value, the document with the smallest _id holding it is kept (entries
// of equal keys are in _id order), and the values are listed in the
// order of those _ids. On an index of key alone, the scan skips from each
// value to the next instead of reading every entry.
func distinctScan(ctx context.Context, rd storage.Reader, coll string, p *Plan, key string, st *execStats) ([]bsoncore.Value, error) {
	type rep struct {
		id  []byte
		doc bsoncore.Document
	}
	reps := map[string]rep{}
	pos := fieldPos(p.ix.Spec, key)
	desc := p.ix.Spec.Fields[pos].Desc
	// Equal keys of a single-field index are in _id order, so the first
	// entry of a value holds its smallest _id and the rest can be skipped.
	seekable := len(p.ix.Spec.Fields) == 1
	for _, iv := range p.intervals {
		start := iv.Start
		for {
			it, err := rd.IndexScan(ctx, coll, p.ix.Spec.Name, index.Interval{Start: start, Stop: iv.Stop})
			if err != nil {
				return nil, err
			}
			var seek []byte
			for seek == nil {
				if err := interrupt.Err(ctx); err != nil {
					return nil, err
				}
				_, id, err := it.Next(ctx)
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					return nil, err
				}
				st.keysExamined++
				doc := bsoncore.Document(it.Covered())
				if doc == nil {
					d, found, err := rd.GetKey(ctx, coll, id)
					if err != nil {
						return nil, err
					}
					st.docsExamined++
					if !found {
						continue
					}
					doc = d
				}
				vals := query.DistinctValues([]bsoncore.Document{doc}, key, nil)
				for _, v := range vals {
					enc := string(index.EncodeKey(nil, v))
					if r, ok := reps[enc]; !ok || bytes.Compare(id, r.id) < 0 {
						reps[enc] = rep{id: append([]byte(nil), id...), doc: doc}
					}
				}
				if seekable && len(vals) == 1 {
					k := index.EncodeKey(nil, vals[0])
					if desc {
						k = index.Complement(k)
					}
					if next := append(k, index.AfterPrefix); bytes.Compare(next, start) > 0 {
						seek = next
					}
				}
			}
			if seek == nil || (iv.Stop != nil && bytes.Compare(seek, iv.Stop) >= 0) {
				break
			}
			start = seek
		}
	}
	list := make([]rep, 0, len(reps))
	for _, r := range reps {
		list = append(list, r)
	}
	sort.Slice(list, func(i, j int) bool { return bytes.Compare(list[i].id, list[j].id) < 0 })
	docs := make([]bsoncore.Document, len(list))
	for i, r := range list {
		docs[i] = r.doc
	}
	return query.DistinctValues(docs, key, nil), nil
}
