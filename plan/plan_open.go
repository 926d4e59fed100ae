package plan

import (
	"context"
	"errors"
	"io"

	"github.com/dumbodb/dumbodb/index"
	"github.com/dumbodb/dumbodb/interrupt"
	"github.com/dumbodb/dumbodb/query"
	"github.com/dumbodb/dumbodb/storage"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Running a plan: the sources that read what the planner chose (an _id
// look-up or range, an index scan forwards or backwards, a collection
// scan), fetching only the paths a find returns where that is all it needs.

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
		return ff.GetKeyFields(ctx, coll, index.EncodeID(nil, id), p.readOut)
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
	// ahead are entries read from the scan with their documents, fetched
	// together (fetchAhead); batch is how many the next read takes.
	ahead []fetched
	batch int
}

// fetched is an index entry and its document (found false: none). keys
// is the index keys the scan examined to reach it, which count as
// examined when the entry is taken, not when it is read ahead: a query
// that stops early examined what it took, as on mongod.
type fetched struct {
	scanned
	doc   bsoncore.Document
	found bool
	keys  int64
}

// batchFetcher is a reader that fetches many documents by _id key at once.
type batchFetcher interface {
	GetKeys(ctx context.Context, coll string, keys [][]byte) ([]bsoncore.Document, error)
}

// Batches of entries an index source fetches at once: small at first, so
// that a query wanting one document fetches few it will not return, then
// doubling.
const (
	firstFetchBatch = 4
	maxFetchBatch   = 128
)

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
		e, err := s.nextFetched(ctx)
		if err != nil {
			return nil, err
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
		s.st.docsExamined++
		if e.found && s.match(ctx, e.doc, e.inside) {
			return e.doc, nil
		}
		if err := s.f.Err(); err != nil {
			return nil, err
		}
	}
}

// nextFetched is the next entry of a distinct document with that
// document, unless the entry is covered. Documents are fetched a batch at
// a time where the reader can (fetchAhead), else one by one.
func (s *indexSource) nextFetched(ctx context.Context) (fetched, error) {
	if len(s.ahead) > 0 {
		e := s.ahead[0]
		s.ahead[0] = fetched{}
		s.ahead = s.ahead[1:]
		s.st.keysExamined += e.keys
		return e, nil
	}
	bf, batching := s.rd.(batchFetcher)
	if !batching || (s.p.fetchOut && s.p.readOut != nil) {
		e, err := s.nextDistinct(ctx)
		if err != nil || e.covered != nil {
			return fetched{scanned: e}, err
		}
		doc, found, err := fetch(ctx, s.rd, s.coll, e.id, s.p)
		return fetched{scanned: e, doc: doc, found: found}, err
	}
	if err := s.fetchAhead(ctx, bf); err != nil {
		return fetched{}, err
	}
	return s.nextFetched(ctx)
}

// fetchAhead reads the next batch of entries and fetches their documents
// together; at the scan's end it returns io.EOF.
func (s *indexSource) fetchAhead(ctx context.Context, bf batchFetcher) error {
	s.batch = min(max(2*s.batch, firstFetchBatch), maxFetchBatch)
	var keys [][]byte
	var slots []int
	for len(s.ahead) < s.batch {
		examined := s.st.keysExamined
		e, err := s.nextDistinct(ctx)
		if errors.Is(err, io.EOF) && len(s.ahead) > 0 {
			break // the keys read to the end count now: the next call ends
		}
		if err != nil {
			return err
		}
		if e.covered == nil {
			keys, slots = append(keys, e.id), append(slots, len(s.ahead))
		}
		s.ahead = append(s.ahead, fetched{scanned: e, keys: s.st.keysExamined - examined})
		s.st.keysExamined = examined
	}
	docs, err := bf.GetKeys(ctx, s.coll, keys)
	if err != nil {
		return err
	}
	for i, at := range slots {
		s.ahead[at].doc, s.ahead[at].found = docs[i], docs[i] != nil
	}
	return nil
}

// nextDistinct is the next entry whose document the scan has not given
// yet (a multikey document has several entries).
func (s *indexSource) nextDistinct(ctx context.Context) (scanned, error) {
	for {
		e, err := s.nextID(ctx)
		if err != nil {
			return scanned{}, err
		}
		if !s.p.ix.Multikey {
			return e, nil
		}
		if !s.seen[string(e.id)] {
			s.seen[string(e.id)] = true
			return e, nil
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

// lookupID is mongod's IDHACK without the planner: the document whose _id
// is id, for a find whose filter is that equality alone (the server
// decides that, from the command's options). Skipping the filter's
// compilation and the plan is a sixth of a findOne's server time.
func lookupID(ctx context.Context, rd storage.Reader, coll string, id bsoncore.Value) (Source, error) {
	doc, found, err := rd.Get(ctx, coll, id)
	if err != nil || !found {
		return &pointLookup{src: query.NewSliceStream(nil)}, err
	}
	return &pointLookup{src: query.NewSliceStream([]bsoncore.Document{doc})}, nil
}
