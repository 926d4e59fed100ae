package plan

import (
	"bytes"
	"sort"

	"github.com/dumbodb/dumbodb/index"
	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/query"
	"github.com/dumbodb/dumbodb/storage"
	"github.com/dumbodb/dumbodb/value"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Plan is how a query reads its documents: a point look-up by _id,
// a collection scan, or an index scan over intervals.
type Plan struct {
	idHack bool
	// ids, with idHack, are the _id values of an _id $in to look up, each
	// once, in key order (nil: the filter's _id equality).
	ids []bsoncore.Value
	// idRange, when set, are the _id key intervals a collection scan
	// reads (bounds on _id), in _id order.
	idRange []index.Interval
	ix      *storage.IndexInfo // nil: no secondary index
	// bounds are the per-field intervals in key space, for explain.
	bounds    [][]index.FieldInterval
	intervals []index.Interval
	reverse   bool // scan backwards (the sort wants the index reversed)
	sorted    bool // the scan order is the requested sort
	// covered: the index entries' stored key values answer the query, so
	// documents are not fetched (a find whose filter, projection and
	// sort need only key fields; see coverable).
	covered bool
	// text is set for a $text query: the terms looked up in the text
	// index ix; documents containing any are fetched and matched.
	text []string
	// textPrefix is the encoded equality values of a compound text
	// index's prefix fields, under which every term is looked up.
	textPrefix []byte
	// textSuffix, when set, are the ranges a compound text index's suffix
	// fields must fall in, from the filter's predicates on them: entries
	// outside are skipped before the fetch.
	textSuffix []index.Interval
	// textIndexPrefix and parsedText are explain's view of the text
	// query: the prefix fields' values (indexPrefix) and parsedTextQuery.
	textIndexPrefix, parsedText bsoncore.Document
	// orClauses, for a $text that is a clause of a top-level $or, are the
	// other clauses, each with its own index plan; the documents they
	// select join the text's before the whole filter is matched.
	orClauses []orClause
	// near is set for a $near or $nearSphere: the geo index ix is read
	// outward in rings (near_source.go).
	near *geoNearPlan
	// geoScan: ix is a geo index bounded by the cells of a $geoWithin
	// or $geoIntersects region. keyFilter, when set, drops the entries
	// whose point cannot meet the region before their documents are
	// fetched (an index of points, geo_scans.go).
	geoScan   bool
	keyFilter func(entry []byte) (keep, inside bool)
	// geoKnown is the geo predicate's Known flag, set while a document
	// whose entry keyFilter found inside the region is matched.
	geoKnown *bool
	// wildPath is set for a wildcard index plan: the one path it bounds.
	wildPath string
	// readMatch and readOut, when readMatch is set, are the paths a
	// collection scan reads of large documents to match them and to
	// return them (readOut nil: whole); see readpaths.go. fetchOut is set
	// when readOut is all the query returns, so look-ups by _id (point
	// and index plans) may fetch only those paths too.
	readMatch, readOut []string
	fetchOut           bool
}

// Input is what the planner looks at.
type Input struct {
	Filter *query.Filter
	Sort   bsoncore.Document // nil: no sort
	Hint   bsoncore.Value    // zero: none
	// Want is how many documents the reader takes (a find's skip plus
	// limit; 0: all): a $near sizes its rings to find that many.
	Want int64
}

// sortKey is one {path: ±1} of a sort.
type sortKey struct {
	path string
	desc bool
}

// Query picks a plan: the hinted index, the _id look-up, else the
// index that bounds most key fields by equality (then a range), preferring
// one that also gives the sort; a collection scan when none helps.
//
// Collations: an index serves the predicates on strings (and on documents
// and arrays, which may hold strings) and gives a sort only when its
// collation is the query's (simple for both, or equal); otherwise it
// bounds only the predicates on other values, as mongod's does (see
// indexPlan). The _id look-up and wildcard indexes are simple.
func Query(rd storage.Reader, coll string, in Input) (*Plan, error) {
	indexes := rd.Indexes(coll)
	if in.Filter.HasText() {
		if in.Hint.Type != 0 {
			if err := checkTextHint(indexes, in.Hint); err != nil {
				return nil, err
			}
		}
		if others := in.Filter.TextOrClauses(); len(others) > 0 {
			return textOrPlan(rd, coll, indexes, in.Filter, others)
		}
		return textPlan(indexes, in.Filter)
	}
	if in.Filter.Near() != nil {
		if in.Hint.Type != 0 {
			ix, _, err := resolveHint(indexes, in.Hint)
			if err != nil {
				return nil, err
			}
			if ix == nil { // $natural: no index to read nearest first
				return nil, noGeoIndex()
			}
			indexes = []storage.IndexInfo{*ix} // the hint must be the geo index
		}
		return nearPlan(indexes, in.Filter, !nonEmpty(in.Sort), in.Want)
	}
	preds := in.Filter.IndexablePredicates()
	qc := in.Filter.Collation()
	sortKeys := plainSortKeys(in.Sort)
	if in.Hint.Type != 0 && isIDHint(in.Hint) && isCapped(rd, coll) {
		return idIndexPlan(sortKeys), nil
	}
	if in.Hint.Type != 0 {
		return hintedPlan(indexes, in.Hint, in.Filter, preds, sortKeys, qc)
	}
	if id, ok := in.Filter.IDEquality(); ok && (qc == nil || !query.CollationSensitive(id)) {
		return &Plan{idHack: true}, nil
	}
	if ids := idSet(preds, qc); ids != nil {
		return &Plan{idHack: true, ids: ids}, nil
	}
	if naturalSort(in.Sort) {
		return &Plan{}, nil // {$natural: ±1} is the collection's own order, as on mongod
	}
	var best *Plan
	bestScore := 0
	for i := range indexes {
		ix := &indexes[i]
		if !usableFor(ix, in.Filter) {
			continue
		}
		p, score := indexPlan(ix, preds, sortKeys, qc)
		if score > bestScore || (score == bestScore && best != nil && p.sorted && !best.sorted) {
			best, bestScore = p, score
		}
	}
	if r := idRangePlan(collationPreds(preds, nil, qc), sortKeys); r != nil && (best == nil || bestScore < 2 && !best.sorted) {
		return r, nil // a range of the collection beats an index range and its fetches
	}
	if g := geoPlan(indexes, in.Filter, preds); g != nil && bestScore < 2 {
		return g, nil // cells beat a scan and an index range without equality
	}
	if best == nil || (bestScore == 0 && !best.sorted) {
		if w := bestWildcardPlan(indexes, collationPreds(preds, nil, qc)); w != nil {
			return w, nil
		}
		return &Plan{}, nil
	}
	return best, nil
}

// idRangePlan scans only the part of the collection a range on _id
// selects (nil: no such range). The collection is in _id order, so the
// plan gives an ascending _id sort. A bound longer than any plain _id key
// is left to a collection scan: the keys of _ids that long are cut
// (index.EncodeID) and no longer order by value among themselves.
func idRangePlan(preds []query.Predicate, sortKeys []sortKey) *Plan {
	ivs, points := collatedFieldIntervals("_id", preds, false, nil)
	if points || len(ivs) != 1 || (ivs[0].LoText == "MinKey" && ivs[0].HiText == "MaxKey") {
		return nil
	}
	entries := index.EntryIntervals([][]index.FieldInterval{ivs})
	for _, iv := range entries {
		if len(iv.Start) > index.MaxKeySize || len(iv.Stop) > index.MaxKeySize {
			return nil
		}
	}
	sorted := len(sortKeys) == 1 && sortKeys[0].path == "_id" && !sortKeys[0].desc
	return &Plan{idRange: entries, bounds: [][]index.FieldInterval{ivs}, sorted: sorted}
}

// idIndexPlan reads the whole collection in _id order: a hint of the _id
// index on a capped collection, whose collection scan is in insertion
// order (on others the two are the same scan).
func idIndexPlan(sortKeys []sortKey) *Plan {
	sorted := len(sortKeys) == 1 && sortKeys[0].path == "_id" && !sortKeys[0].desc
	return &Plan{idRange: []index.Interval{{}}, sorted: sorted}
}

// isIDHint reports whether a hint names the _id index ("_id_" or
// {_id: 1}), not $natural.
func isIDHint(hint bsoncore.Value) bool {
	if s, ok := hint.StringValueOK(); ok {
		return s == index.IDIndexName
	}
	d, ok := hint.DocumentOK()
	if !ok {
		return false
	}
	els, _ := d.Elements()
	return len(els) == 1 && els[0].Key() == "_id"
}

func isCapped(rd storage.Reader, coll string) bool {
	info, ok := rd.Collection(coll)
	return ok && info.Capped()
}

// idSet is the _id values of an _id $in among the predicates, in key
// order and without repeats, when each can be looked up (nil: none): a
// point look-up per value beats any scan.
func idSet(preds []query.Predicate, qc *value.Collation) []bsoncore.Value {
	for _, p := range preds {
		if p.Path != "_id" || p.Op != "$in" || len(p.Values) == 0 {
			continue
		}
		type keyed struct {
			key []byte
			v   bsoncore.Value
		}
		vals := make([]keyed, 0, len(p.Values))
		for _, v := range p.Values {
			if qc != nil && query.CollationSensitive(v) {
				return nil
			}
			vals = append(vals, keyed{index.EncodeID(nil, v), v})
		}
		sort.Slice(vals, func(i, j int) bool { return bytes.Compare(vals[i].key, vals[j].key) < 0 })
		out := make([]bsoncore.Value, 0, len(vals))
		for i, k := range vals {
			if i == 0 || !bytes.Equal(k.key, vals[i-1].key) {
				out = append(out, k.v)
			}
		}
		return out
	}
	return nil
}

// collationPreds is the predicates an index with collation ic can bound
// for a query with collation qc: all when they are the same collation,
// else those whose values no collation affects (numbers, dates, ...).
func collationPreds(preds []query.Predicate, ic, qc *value.Collation) []query.Predicate {
	if ic.Equal(qc) {
		return preds
	}
	out := make([]query.Predicate, 0, len(preds))
	for _, p := range preds {
		if !p.Sensitive() {
			out = append(out, p)
		}
	}
	return out
}

// fullInterval reports an interval over every value, in either direction
// (a descending field's runs from MaxKey to MinKey): it bounds nothing.
func fullInterval(iv index.FieldInterval) bool {
	return iv.LoText == "MinKey" && iv.HiText == "MaxKey" || iv.LoText == "MaxKey" && iv.HiText == "MinKey"
}

// usable says whether the planner may pick an index on its own for any
// query: partial and sparse indexes miss documents and hidden ones are off
// limits.
func usable(ix *storage.IndexInfo) bool {
	return ix.Spec.Partial == nil && plannable(ix)
}

// usableFor is usable for the queries of filter f, which may also read a
// partial index when f implies its partialFilterExpression: then no
// document f matches is missing from it.
func usableFor(ix *storage.IndexInfo, f *query.Filter) bool {
	return plannable(ix) && (ix.Spec.Partial == nil || f.Implies(ix.Spec.Partial, ix.Spec.Collation()))
}

func plannable(ix *storage.IndexInfo) bool {
	s := ix.Spec
	if _, wild := s.Wildcard(); s.Hidden || s.Sparse || s.Text != nil || wild || isGeo(ix) {
		return false
	}
	for _, f := range s.Fields {
		if index.HasNumericComponent(f.Path) {
			return false
		}
	}
	return true
}

// hintedPlan honours a hint: $natural and the _id index scan the
// collection; a secondary index must exist and not be hidden.
//
// A hinted index whose collation is not the query's is still used, as on
// mongod: it bounds what it can (collationPreds, else the whole index) and
// the filter decides; the sort is then done in memory.
func hintedPlan(indexes []storage.IndexInfo, hint bsoncore.Value, f *query.Filter, preds []query.Predicate, sortKeys []sortKey, qc *value.Collation) (*Plan, error) {
	ix, natural, err := resolveHint(indexes, hint)
	if err != nil || natural {
		return &Plan{}, err
	}
	if isGeo(ix) {
		if p := geoIndexPlan(ix, f.GeoPredicates(), preds, f); p != nil {
			return p, nil
		}
		return nil, mongoerr.New(mongoerr.BadValue, "hint provided does not correspond to an existing index: a geo index needs a geo predicate on its field")
	}
	if _, wild := ix.Spec.Wildcard(); wild {
		if p, _ := wildcardPlan(ix, collationPreds(preds, nil, qc)); p != nil {
			return p, nil
		}
		return nil, mongoerr.New(mongoerr.BadValue, "hint provided does not correspond to an existing index: a wildcard index needs a predicate on a path it covers")
	}
	p, _ := indexPlan(ix, preds, sortKeys, qc)
	return p, nil
}

// resolveHint finds the index a hint names; natural is true for $natural
// and the _id index, which are the collection itself.
func resolveHint(indexes []storage.IndexInfo, hint bsoncore.Value) (*storage.IndexInfo, bool, error) {
	switch hint.Type {
	case bsoncore.TypeString:
		name := hint.StringValue()
		if name == index.IDIndexName {
			return nil, true, nil
		}
		for i := range indexes {
			if indexes[i].Spec.Name == name && !indexes[i].Spec.Hidden && indexes[i].Spec.Text == nil {
				return &indexes[i], false, nil
			}
		}
	case bsoncore.TypeEmbeddedDocument:
		d := bsoncore.Document(hint.Data)
		els, _ := d.Elements()
		if len(els) == 0 || (len(els) == 1 && (els[0].Key() == "$natural" || els[0].Key() == "_id")) {
			return nil, true, nil
		}
		probe, err := index.ParseSpec(bsoncore.NewDocumentBuilder().AppendDocument("key", d).Build(), nil)
		if err != nil {
			break
		}
		for i := range indexes {
			if indexes[i].Spec.SameKey(probe) && !indexes[i].Spec.Hidden && indexes[i].Spec.Text == nil {
				return &indexes[i], false, nil
			}
		}
	default:
		return nil, false, mongoerr.New(mongoerr.FailedToParse, "hint must be a string or an object")
	}
	return nil, false, mongoerr.New(mongoerr.BadValue, "hint provided does not correspond to an existing index")
}

// CheckHint validates a hint against a collection's indexes.
func CheckHint(rd storage.Reader, coll string, hint bsoncore.Value) error {
	if hint.Type == 0 {
		return nil
	}
	_, _, err := resolveHint(rd.Indexes(coll), hint)
	return err
}

// indexPlan bounds each key field by the predicates on it and scores the
// result: two points per leading equality field, one for a range after.
// Under a collation qc other than the index's, only the predicates no
// collation affects bound it and it gives no sort (collationPreds).
func indexPlan(ix *storage.IndexInfo, preds []query.Predicate, sortKeys []sortKey, qc *value.Collation) (*Plan, int) {
	p := &Plan{ix: ix}
	ic := ix.Spec.Collation()
	if !ic.Equal(qc) {
		preds, sortKeys = collationPreds(preds, ic, qc), nil
	}
	score, singles, bounded := 0, 0, true
	for _, f := range ix.Spec.Fields {
		ivs, points := collatedFieldIntervals(f.Path, preds, ix.Multikey, ic)
		if f.Hashed {
			ivs, points = hashedIntervals(f.Path, preds)
		}
		if f.Desc {
			for i := range ivs {
				ivs[i] = ivs[i].Descending()
			}
		}
		p.bounds = append(p.bounds, ivs)
		switch {
		case !bounded:
			p.bounds[len(p.bounds)-1] = []index.FieldInterval{fullFor(f)}
		case points:
			score += 2
			if len(ivs) == 1 && singles == len(p.bounds)-1 {
				singles++
			}
		case len(ivs) == 1 && fullInterval(ivs[0]):
			bounded = false
		default:
			score++
			bounded = false
		}
	}
	p.intervals = index.EntryIntervals(p.bounds)
	p.sorted, p.reverse = sortFromIndex(ix, singles, sortKeys)
	return p, score
}

// naturalSort reports whether a sort is {$natural: ±1} alone, which
// only a collection scan gives (a capped collection's insertion order).
func naturalSort(sort bsoncore.Document) bool {
	els, _ := sort.Elements()
	return len(els) == 1 && els[0].Key() == "$natural"
}

// plainSortKeys reads a sort of {path: ±1} fields; nil when the sort has
// anything else ($meta) or is empty.
func plainSortKeys(sort bsoncore.Document) []sortKey {
	els, _ := sort.Elements()
	var out []sortKey
	for _, el := range els {
		n, ok := value.AsInt64(el.Value())
		if !ok || (n != 1 && n != -1) || el.Key() == "$natural" {
			return nil
		}
		out = append(out, sortKey{path: el.Key(), desc: n < 0})
	}
	return out
}

// sortFromIndex reports whether scanning ix (forwards or, with reverse,
// backwards) yields the sort: the sort keys follow the key fields right
// after those pinned to one value, in the same or the opposite directions.
// Multikey indexes order documents by one element, not the sort key.
func sortFromIndex(ix *storage.IndexInfo, singles int, keys []sortKey) (sorted, reverse bool) {
	fields := ix.Spec.Fields
	if len(keys) == 0 || ix.Multikey || singles+len(keys) > len(fields) {
		return false, false
	}
	flip := keys[0].desc != fields[singles].Desc
	for i, k := range keys {
		f := fields[singles+i]
		if f.Hashed || f.Path != k.path || (k.desc != f.Desc) != flip {
			return false, false
		}
	}
	return true, flip
}

// rejectedPlans are the other index plans the planner weighed against
// the winner: every usable index that bounds a predicate or gives the
// sort, besides the winner's.
func rejectedPlans(rd storage.Reader, coll string, in Input, winner *Plan) []*Plan {
	if in.Hint.Type != 0 || winner.idHack || winner.text != nil || winner.near != nil {
		return nil
	}
	preds := in.Filter.IndexablePredicates()
	sortKeys := plainSortKeys(in.Sort)
	indexes := rd.Indexes(coll)
	var out []*Plan
	for i := range indexes {
		ix := &indexes[i]
		if !usableFor(ix, in.Filter) || (winner.ix != nil && winner.ix.Spec.Name == ix.Spec.Name) {
			continue
		}
		if p, score := indexPlan(ix, preds, sortKeys, in.Filter.Collation()); score > 0 || p.sorted {
			out = append(out, p)
		}
	}
	return out
}
