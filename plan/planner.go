package plan

import (
	"bytes"
	"context"
	"errors"
	"io"
	"sort"

	"dumbodb/index"
	"dumbodb/interrupt"
	"dumbodb/mongoerr"
	"dumbodb/query"
	"dumbodb/storage"
	"dumbodb/value"

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
	if id, ok := in.Filter.IDEquality(); ok && storage.ValidateKey(id) == nil && (qc == nil || !query.CollationSensitive(id)) {
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
		if !usable(ix) {
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
// plan gives an ascending _id sort.
func idRangePlan(preds []query.Predicate, sortKeys []sortKey) *Plan {
	ivs, points := collatedFieldIntervals("_id", preds, false, nil)
	if points || len(ivs) != 1 || (ivs[0].LoText == "MinKey" && ivs[0].HiText == "MaxKey") {
		return nil
	}
	sorted := len(sortKeys) == 1 && sortKeys[0].path == "_id" && !sortKeys[0].desc
	return &Plan{idRange: index.EntryIntervals([][]index.FieldInterval{ivs}), bounds: [][]index.FieldInterval{ivs}, sorted: sorted}
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
			if storage.ValidateKey(v) != nil || (qc != nil && query.CollationSensitive(v)) {
				return nil
			}
			vals = append(vals, keyed{index.EncodeKey(nil, v), v})
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

// usable says whether the planner may pick an index on its own: partial
// and sparse indexes miss documents and hidden ones are off limits.
func usable(ix *storage.IndexInfo) bool {
	s := ix.Spec
	if _, wild := s.Wildcard(); s.Hidden || s.Partial != nil || s.Sparse || s.Text != nil || wild || isGeo(ix) {
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
		case len(ivs) == 1 && ivs[0].LoText == "MinKey" && ivs[0].HiText == "MaxKey":
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

// hashedIntervals bounds a hashed field: an equality ($eq, $in) by the
// hashes of its values, anything else not at all (hashes keep no order).
// The filter still runs on what the scan fetches: hashes collide.
func hashedIntervals(path string, preds []query.Predicate) ([]index.FieldInterval, bool) {
	for _, pr := range preds {
		if pr.Path != path || (pr.Op != "$eq" && pr.Op != "$in") {
			continue
		}
		out := make([]index.FieldInterval, 0, len(pr.Values))
		for _, v := range pr.Values {
			out = append(out, index.PointInterval(index.HashedPoint(v), index.ShellValue(index.HashedPoint(v))))
		}
		return dedupePoints(out), true
	}
	return []index.FieldInterval{index.FullInterval()}, false
}

// dedupePoints sorts point intervals and drops repeats (values that hash
// alike, such as 1 and 1.5).
func dedupePoints(ivs []index.FieldInterval) []index.FieldInterval {
	sort.Slice(ivs, func(i, j int) bool { return bytes.Compare(ivs[i].Lo, ivs[j].Lo) < 0 })
	out := ivs[:0]
	for _, iv := range ivs {
		if len(out) == 0 || !bytes.Equal(out[len(out)-1].Lo, iv.Lo) {
			out = append(out, iv)
		}
	}
	return out
}

func fullFor(f index.Field) index.FieldInterval {
	if f.Desc {
		return index.FullInterval().Descending()
	}
	return index.FullInterval()
}

// fieldIntervals intersects the predicates on one path; points reports
// that the result is a set of single values. On a multikey index only one
// predicate bounds a field: different elements may satisfy different ones.
func fieldIntervals(path string, preds []query.Predicate, multikey bool) ([]index.FieldInterval, bool) {
	return collatedFieldIntervals(path, preds, multikey, nil)
}

// collatedFieldIntervals is fieldIntervals in the key space of an index
// with collation c (nil: simple).
func collatedFieldIntervals(path string, preds []query.Predicate, multikey bool, c *value.Collation) ([]index.FieldInterval, bool) {
	var points []index.FieldInterval
	rng := index.FullInterval()
	ranged := false
	for _, pr := range preds {
		if pr.Path != path {
			continue
		}
		switch pr.Op {
		case "$eq", "$in":
			if points == nil || !multikey {
				points = intersectPoints(points, pr.Values, c)
			}
		default:
			if !ranged || !multikey {
				rng = rng.Intersect(rangeOf(pr, c))
				ranged = true
			}
		}
	}
	if points == nil {
		return []index.FieldInterval{rng}, false
	}
	if !multikey && ranged {
		points = filterPoints(points, rng)
	}
	return points, true
}

func rangeOf(pr query.Predicate, c *value.Collation) index.FieldInterval {
	v := pr.Values[0]
	text := index.ShellValue(v)
	switch pr.Op {
	case "$gt":
		return index.CollatedRangeInterval(v, c, true, false, text)
	case "$gte":
		return index.CollatedRangeInterval(v, c, true, true, text)
	case "$lt":
		return index.CollatedRangeInterval(v, c, false, false, text)
	}
	return index.CollatedRangeInterval(v, c, false, true, text)
}

// intersectPoints is the point intervals of vals, kept to those already in
// cur when cur is set (an empty, non-nil result matches nothing).
func intersectPoints(cur []index.FieldInterval, vals []bsoncore.Value, c *value.Collation) []index.FieldInterval {
	out := []index.FieldInterval{}
	for _, v := range vals {
		iv := index.CollatedPointInterval(v, c, index.ShellValue(v))
		if cur == nil || containsPoint(cur, iv) {
			out = append(out, iv)
		}
	}
	return out
}

func containsPoint(list []index.FieldInterval, iv index.FieldInterval) bool {
	for _, x := range list {
		if bytes.Equal(x.Lo, iv.Lo) {
			return true
		}
	}
	return false
}

func filterPoints(points []index.FieldInterval, rng index.FieldInterval) []index.FieldInterval {
	out := []index.FieldInterval{}
	for _, p := range points {
		if !p.Intersect(rng).Empty() {
			out = append(out, p)
		}
	}
	return out
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

// Sorted reports whether the plan yields documents in the requested sort,
// so that they need no sorting after.
func (p *Plan) Sorted() bool { return p.sorted }

// Open runs the plan over rd, yielding the documents of coll that match f.
func (p *Plan) Open(ctx context.Context, rd storage.Reader, coll string, f *query.Filter) (Source, error) {
	return planSource(ctx, rd, coll, f, p, &execStats{})
}

// execStats counts what a plan's execution examined.
type execStats struct {
	keysExamined, docsExamined, returned int64
}

// planSource runs a plan, yielding the documents that match f.
func planSource(ctx context.Context, rd storage.Reader, coll string, f *query.Filter, p *Plan, st *execStats) (Source, error) {
	switch {
	case p.idHack:
		return idSource(ctx, rd, coll, f, p, st)
	case p.text != nil:
		return textSource(ctx, rd, coll, f, p, st)
	case p.near != nil:
		return newNearSource(rd, coll, f, p, st), nil
	case p.idRange != nil:
		return &idRangeSource{rd: rd, coll: coll, f: f, p: p, st: st}, nil
	case p.ix == nil:
		it, err := rd.Scan(ctx, coll)
		if err != nil {
			return nil, err
		}
		if p.readMatch != nil {
			it.SetFields(p.readMatch, p.readOut)
		}
		return &countingFilterSource{filterSource: filterSource{it: it, f: f}, st: st}, nil
	}
	src := &indexSource{rd: rd, coll: coll, f: f, p: p, st: st, seen: map[string]bool{}}
	if p.reverse {
		return reversedIndexSource(ctx, src)
	}
	return src, nil
}

func idSource(ctx context.Context, rd storage.Reader, coll string, f *query.Filter, p *Plan, st *execStats) (Source, error) {
	ids := p.ids
	if ids == nil {
		id, _ := f.IDEquality()
		ids = []bsoncore.Value{id}
	}
	var out []bsoncore.Document
	for _, id := range ids {
		if err := interrupt.Err(ctx); err != nil {
			return nil, err
		}
		doc, found, err := fetchByID(ctx, rd, coll, p, id)
		if err != nil {
			return nil, err
		}
		if !found {
			continue
		}
		st.keysExamined++
		st.docsExamined++
		if f.MatchContext(ctx, doc) {
			out = append(out, doc)
		} else if err := f.Err(); err != nil {
			return nil, err
		}
	}
	return query.NewSliceStream(out), nil
}

// fetchByID reads one document, only the paths the query returns when
// that is all it needs.
func fetchByID(ctx context.Context, rd storage.Reader, coll string, p *Plan, id bsoncore.Value) (bsoncore.Document, bool, error) {
	if ff, ok := rd.(fieldFetcher); ok && p.fetchOut && p.readOut != nil {
		return ff.GetKeyFields(ctx, coll, index.EncodeKey(nil, id), p.readOut)
	}
	return rd.Get(ctx, coll, id)
}

// idRangeSource scans the collection over the plan's _id intervals.
type idRangeSource struct {
	rd   storage.Reader
	coll string
	f    *query.Filter
	p    *Plan
	st   *execStats
	cur  *countingFilterSource
	next int // the next interval to open
}

func (s *idRangeSource) Next(ctx context.Context) (bsoncore.Document, error) {
	for {
		if s.cur == nil {
			if s.next == len(s.p.idRange) {
				return nil, io.EOF
			}
			it, err := s.rd.ScanRange(ctx, s.coll, s.p.idRange[s.next])
			if err != nil {
				return nil, err
			}
			s.next++
			s.cur = &countingFilterSource{filterSource: filterSource{it: it, f: s.f}, st: s.st}
		}
		d, err := s.cur.Next(ctx)
		if errors.Is(err, io.EOF) {
			s.cur = nil
			continue
		}
		return d, err
	}
}

// countingFilterSource is a collection scan that counts examined documents.
type countingFilterSource struct {
	filterSource
	st *execStats
}

func (s *countingFilterSource) Next(ctx context.Context) (bsoncore.Document, error) {
	var stop error
	keep := func(d bsoncore.Document) bool {
		if stop = interrupt.Err(ctx); stop != nil {
			return true
		}
		s.st.docsExamined++
		if s.f.MatchContext(ctx, d) {
			return true
		}
		stop = s.f.Err()
		return stop != nil
	}
	d, err := s.it.NextWhere(ctx, keep)
	if err != nil {
		return nil, err
	}
	return d, stop
}

// LastPartial reports whether the last document lacks fields the scan did
// not read (see Plan.readOut).
func (s *countingFilterSource) LastPartial() bool { return s.it.Partial() }

// indexSource walks a plan's intervals in order, fetching each document
// once (a multikey document has several entries) and filtering it.
type indexSource struct {
	rd   storage.Reader
	coll string
	f    *query.Filter
	p    *Plan
	st   *execStats
	next int // next interval
	it   *storage.IndexIterator
	seen map[string]bool
	// ids, when set, replaces the scan (a reversed scan, read ahead).
	ids []scanned
}

// scanned is one index entry as a scan yields it: the _id key and, on a
// covered plan, the entry's stored key values (nil when it has none).
type scanned struct {
	id, covered []byte
	inside      bool // the entry's cell lies inside a geo region (Plan.keyFilter)
}

func (s *indexSource) nextID(ctx context.Context) (scanned, error) {
	if s.ids != nil {
		if len(s.ids) == 0 {
			return scanned{}, io.EOF
		}
		e := s.ids[0]
		s.ids = s.ids[1:]
		return e, nil
	}
	for {
		if s.it == nil {
			if s.next == len(s.p.intervals) {
				return scanned{}, io.EOF
			}
			it, err := s.rd.IndexScan(ctx, s.coll, s.p.ix.Spec.Name, s.p.intervals[s.next])
			if err != nil {
				return scanned{}, err
			}
			s.it, s.next = it, s.next+1
		}
		entry, id, err := s.it.Next(ctx)
		if errors.Is(err, io.EOF) {
			s.it = nil
			continue
		}
		if err != nil {
			return scanned{}, err
		}
		s.st.keysExamined++
		e := scanned{id: id}
		if s.p.keyFilter != nil {
			keep, inside := s.p.keyFilter(entry)
			if !keep {
				continue
			}
			e.inside = inside
		}
		if s.p.covered {
			e.covered = s.it.Covered()
		}
		return e, nil
	}
}

func (s *indexSource) Next(ctx context.Context) (bsoncore.Document, error) {
	for {
		if err := interrupt.Err(ctx); err != nil {
			return nil, err
		}
		e, err := s.nextID(ctx)
		if err != nil {
			return nil, err
		}
		id := e.id
		if s.p.ix.Multikey {
			if s.seen[string(id)] {
				continue
			}
			s.seen[string(id)] = true
		}
		if e.covered != nil {
			doc := bsoncore.Document(e.covered)
			if s.f.MatchContext(ctx, doc) {
				return doc, nil
			}
			if err := s.f.Err(); err != nil {
				return nil, err
			}
			continue
		}
		doc, found, err := fetch(ctx, s.rd, s.coll, id, s.p)
		if err != nil {
			return nil, err
		}
		s.st.docsExamined++
		if found && s.match(ctx, doc, e.inside) {
			return doc, nil
		}
		if err := s.f.Err(); err != nil {
			return nil, err
		}
	}
}

// match matches a fetched document; inside says its entry showed it in
// the plan's geo region, which then holds without parsing the geometry.
func (s *indexSource) match(ctx context.Context, doc bsoncore.Document, inside bool) bool {
	if !inside || s.p.geoKnown == nil {
		return s.f.MatchContext(ctx, doc)
	}
	*s.p.geoKnown = true
	defer func() { *s.p.geoKnown = false }()
	return s.f.MatchContext(ctx, doc)
}

// reversedIndexSource reads the _id keys of the scan ahead and yields
// them backwards: index maps iterate forwards only. Keys are small next to
// documents, which are still fetched one at a time.
func reversedIndexSource(ctx context.Context, s *indexSource) (Source, error) {
	var ids []scanned
	for {
		id, err := s.nextID(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	for i, j := 0, len(ids)-1; i < j; i, j = i+1, j-1 {
		ids[i], ids[j] = ids[j], ids[i]
	}
	s.ids = ids
	return s, nil
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
		if !usable(ix) || (winner.ix != nil && winner.ix.Spec.Name == ix.Spec.Name) {
			continue
		}
		if p, score := indexPlan(ix, preds, sortKeys, in.Filter.Collation()); score > 0 || p.sorted {
			out = append(out, p)
		}
	}
	return out
}

// fieldFetcher is a reader that can fetch part of a large document.
type fieldFetcher interface {
	GetKeyFields(ctx context.Context, coll string, idKey []byte, fields []string) (bsoncore.Document, bool, error)
}

// fetch reads the document with _id key idKey, only the paths the plan
// returns when that is all it needs.
func fetch(ctx context.Context, rd storage.Reader, coll string, idKey []byte, p *Plan) (bsoncore.Document, bool, error) {
	if ff, ok := rd.(fieldFetcher); ok && p.fetchOut && p.readOut != nil {
		return ff.GetKeyFields(ctx, coll, idKey, p.readOut)
	}
	return rd.GetKey(ctx, coll, idKey)
}

// LookupID is mongod's IDHACK without the planner: the document whose _id
// is id, for a find whose filter is that equality alone (the server
// decides that, from the command's options). Skipping the filter's
// compilation and the plan is a sixth of a findOne's server time.
func LookupID(ctx context.Context, rd storage.Reader, coll string, id bsoncore.Value) (Source, error) {
	doc, found, err := rd.Get(ctx, coll, id)
	if err != nil || !found {
		return query.NewSliceStream(nil), err
	}
	return query.NewSliceStream([]bsoncore.Document{doc}), nil
}
