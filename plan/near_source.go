package plan

import (
	"context"
	"errors"
	"io"
	"math"

	"github.com/golang/geo/s2"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/geo"
	"github.com/dumbodb/dumbodb/index"
	"github.com/dumbodb/dumbodb/interrupt"
	"github.com/dumbodb/dumbodb/query"
	"github.com/dumbodb/dumbodb/storage"
)

// nearSource answers a $near from a geo index in rings: each ring reads
// the index entries within a radius (the cells covering the cap, or the
// grid cells of the square, less those read before) and keeps the
// documents not seen yet as candidates. It yields, nearest first, a
// fetched and matching document once no candidate and no unread ring
// can be nearer: every document within the radius read has been seen,
// since its keys meet the covering. The radius grows from ring to ring
// (nextRadius), so a $near with a limit reads about as much of the
// index as the answer needs.
type nearSource struct {
	rd   storage.Reader
	coll string
	f    *query.Filter
	p    *Plan
	st   *execStats
	np   *query.NearPredicate
	// radius is the ring read so far, in ring units: radians on the
	// sphere, the plane's units on a 2d grid.
	radius, limit, whole float64
	done                 s2.CellUnion // the cells read so far (2dsphere)
	seen                 map[string]bool
	// cands are entries read but not fetched: on an index of points
	// (pointKeys: one entry per document, the geo field first), an
	// entry's cell tells the point's distance to within a cell, so a
	// document is fetched only once nothing unread can be nearer.
	cands     []nearCand
	pointKeys bool
	pending   []nearDoc
	finished  bool
}

// nearCand is an entry not yet fetched and a lower bound of its
// document's distance in ring units.
type nearCand struct {
	id    []byte
	lower float64
}

// leafSlack bounds how far a point lies from its leaf cell's center, in
// radians (a leaf cell is about 1e-9 wide): the entry's distance less it
// is a lower bound of the document's.
const leafSlack = 1e-8

type nearDoc struct {
	doc  bsoncore.Document
	ring float64 // the distance in ring units
}

// initialRadius is the first ring: about 600 m on the sphere, a few
// grid cells on a 2d index.
const initialRadius = 1e-4

func newNearSource(rd storage.Reader, coll string, f *query.Filter, p *Plan, st *execStats) *nearSource {
	n := p.near.pred.Near
	s := &nearSource{rd: rd, coll: coll, f: f, p: p, st: st, np: p.near.pred, seen: map[string]bool{}}
	s.pointKeys = !p.ix.Multikey && p.ix.Spec.Fields[0].Geo != ""
	s.limit = n.Radians(n.Max)
	s.whole, s.radius = math.Pi, 0
	if !n.Spherical {
		g := p.ix.Spec.Grid()
		s.whole = (g.Max - g.Min) * math.Sqrt2
	}
	return s
}

// Next yields the nearest document not yielded yet: the nearest fetched
// one, once no unfetched candidate and no unread ring can be nearer.
// Candidates are fetched nearest first, so a limit stops the fetching.
func (s *nearSource) Next(ctx context.Context) (bsoncore.Document, error) {
	for {
		read := s.radius
		if s.finished {
			read = math.Inf(1)
		}
		nextCand := math.Inf(1)
		if len(s.cands) > 0 {
			nextCand = s.cands[0].lower
		}
		switch {
		case len(s.pending) > 0 && s.pending[0].ring <= math.Min(read, nextCand):
			d := heapPop(&s.pending, func(a, b nearDoc) bool { return a.ring < b.ring })
			return d.doc, nil
		case len(s.cands) > 0 && nextCand <= read:
			c := heapPop(&s.cands, func(a, b nearCand) bool { return a.lower < b.lower })
			if err := s.fetchCand(ctx, c); err != nil {
				return nil, err
			}
		case !s.finished:
			if err := s.ring(ctx); err != nil {
				return nil, err
			}
		default:
			return nil, io.EOF
		}
	}
}

// ring reads the next ring and releases what it settles.
func (s *nearSource) ring(ctx context.Context) error {
	r := s.nextRadius()
	if r >= s.limit || r >= s.whole {
		r, s.finished = math.Min(s.limit, s.whole), true
	}
	for _, iv := range s.intervals(r) {
		if err := s.scan(ctx, iv); err != nil {
			return err
		}
	}
	s.radius = r
	return nil
}

// nextRadius grows the ring: eightfold while hardly anything is found
// (the center may be far from everything), then, when the reader's
// count is known, to the radius that should hold it at the density seen
// (area grows with the square of the radius), else fourfold while
// little is found and twofold after. Overshooting reads keys, not
// documents: those are fetched nearest first as the reader asks.
func (s *nearSource) nextRadius() float64 {
	n := len(s.seen)
	switch want := float64(s.p.near.want); {
	case s.radius > 0 && n < 8:
		return s.radius * 8
	case s.radius > 0 && want > 0:
		return s.radius * math.Min(4, math.Max(1.25, 1.1*math.Sqrt(want/float64(n))))
	case s.radius > 0 && n < 32:
		return s.radius * 4
	case s.radius > 0:
		return s.radius * 2
	}
	if s.np.Near.Spherical {
		return initialRadius
	}
	g := s.p.ix.Spec.Grid()
	return (g.Max - g.Min) / float64(uint64(1)<<g.Bits) * 16
}

// intervals is the index ranges of the ring of radius r.
func (s *nearSource) intervals(r float64) []index.Interval {
	n := s.np.Near
	var ranges []geo.CellRange
	switch {
	case s.p.near.sphere:
		ranges, s.done = geo.Annulus(n.Point, r, s.done, s.p.ix.Multikey)
		if s.pointKeys {
			// Entries are measured before fetching: reading a gap's
			// keys costs less than a seek past it.
			ranges = geo.Coalesce(ranges)
		}
	case n.Spherical: // $nearSphere on a 2d index: the cap's boxes
		for _, b := range capBoxes(capOf(n.Point, r)) {
			ranges = append(ranges, s.p.ix.Spec.Grid().CoverBox(b)...)
		}
	default:
		ranges = s.p.ix.Spec.Grid().CoverBox(geo.Square(n.Center, r))
	}
	cells := make([]index.FieldInterval, 0, len(ranges))
	for _, cr := range ranges {
		cells = append(cells, index.CellKeyInterval(cr))
	}
	return index.EntryIntervals(geoFieldBounds(s.p.ix, cells))
}

// scan reads one range of entries, keeping each document not seen yet
// as a candidate, unless its entry puts it beyond $maxDistance.
func (s *nearSource) scan(ctx context.Context, iv index.Interval) error {
	it, err := s.rd.IndexScan(ctx, s.coll, s.p.ix.Spec.Name, iv)
	if err != nil {
		return err
	}
	for {
		if err := interrupt.Err(ctx); err != nil {
			return err
		}
		entry, id, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		s.st.keysExamined++
		if s.seen[string(id)] {
			continue
		}
		s.seen[string(id)] = true
		if lower := s.lowerBound(entry); lower <= s.limit {
			heapPush(&s.cands, nearCand{id: append([]byte(nil), id...), lower: lower}, func(a, b nearCand) bool { return a.lower < b.lower })
		}
	}
}

// lowerBound is how near an entry's document can be, on an index of
// points: a 2dsphere leaf cell's distance less leafSlack, or the
// distance to a 2d grid cell's box (in the plane, or on the sphere for
// $nearSphere); else 0 (unknown).
func (s *nearSource) lowerBound(entry []byte) float64 {
	if !s.pointKeys {
		return 0
	}
	id, ok := index.DecodeCell(entry)
	if !ok {
		return 0
	}
	n := s.np.Near
	if s.p.near.sphere {
		return float64(n.Point.Distance(s2.CellID(id).Point())) - leafSlack
	}
	b := s.p.ix.Spec.Grid().CellBox(id)
	if !n.Spherical {
		return geo.DistanceToBox(n.Center, b)
	}
	rect := s2.RectFromLatLng(s2.LatLngFromDegrees(b.Min.Y, b.Min.X)).AddPoint(s2.LatLngFromDegrees(b.Max.Y, b.Max.X))
	return float64(rect.DistanceToLatLng(s2.LatLngFromPoint(n.Point))) - leafSlack
}

// fetchCand reads a candidate's document and, when it matches, keeps it
// with its distance.
func (s *nearSource) fetchCand(ctx context.Context, c nearCand) error {
	doc, found, err := fetch(ctx, s.rd, s.coll, c.id, s.p)
	if err != nil {
		return err
	}
	s.st.docsExamined++
	if !found || !s.matchRest(doc) {
		return s.f.Err()
	}
	if d, _, ok := s.np.Distance(doc); ok && s.np.Near.InRange(d) {
		heapPush(&s.pending, nearDoc{doc: doc, ring: s.np.Near.Radians(d)}, func(a, b nearDoc) bool { return a.ring < b.ring })
	}
	return nil
}

// matchRest matches the filter but for its near bounds, which fetchCand
// checks with the distance it measures: the geometry is parsed once.
func (s *nearSource) matchRest(doc bsoncore.Document) bool {
	s.np.Measured = true
	defer func() { s.np.Measured = false }()
	return s.f.Match(doc)
}

// heapPop removes the least element of a binary heap ordered by less.
func heapPop[T any](h *[]T, less func(a, b T) bool) T {
	old := *h
	top := old[0]
	n := len(old) - 1
	old[0] = old[n]
	*h = old[:n]
	siftDown(*h, 0, less)
	return top
}

// heapPush adds x to a binary heap ordered by less.
func heapPush[T any](h *[]T, x T, less func(a, b T) bool) {
	*h = append(*h, x)
	a := *h
	for i := len(a) - 1; i > 0; {
		p := (i - 1) / 2
		if !less(a[i], a[p]) {
			break
		}
		a[i], a[p] = a[p], a[i]
		i = p
	}
}

func siftDown[T any](a []T, i int, less func(a, b T) bool) {
	for {
		l, m := 2*i+1, i
		if l < len(a) && less(a[l], a[m]) {
			m = l
		}
		if r := l + 1; r < len(a) && less(a[r], a[m]) {
			m = r
		}
		if m == i {
			return
		}
		a[i], a[m] = a[m], a[i]
		i = m
	}
}
