package plan

import (
	"context"
	"errors"
	"io"
	"math"
	"sort"

	"github.com/golang/geo/s2"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"dumbodb/index"
	"dumbodb/query"
	"dumbodb/query/geo"
	"dumbodb/storage"
)

// nearSource answers a $near from a geo index in rings: it reads the
// index entries within a radius (the cells covering the cap, or the grid
// cells of the square, less those read before), fetches and filters the
// documents not seen yet, and yields, nearest first, those whose
// distance is within the radius: every document that near has been
// read, since its keys meet the covering. The radius doubles each ring,
// so a $near with a limit reads about as much of the index as the
// answer needs.
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
	pending, ready       []nearDoc
	finished             bool
}

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
	s.limit = n.Radians(n.Max)
	s.whole, s.radius = math.Pi, 0
	if !n.Spherical {
		g := p.ix.Spec.Grid()
		s.whole = (g.Max - g.Min) * math.Sqrt2
	}
	return s
}

func (s *nearSource) Next(ctx context.Context) (bsoncore.Document, error) {
	for {
		if len(s.ready) > 0 {
			d := s.ready[0]
			s.ready = s.ready[1:]
			return d.doc, nil
		}
		if s.finished {
			if len(s.pending) == 0 {
				return nil, io.EOF
			}
			s.release(math.Inf(1))
			continue
		}
		if err := s.ring(ctx); err != nil {
			return nil, err
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
	s.release(r)
	return nil
}

func (s *nearSource) nextRadius() float64 {
	if s.radius > 0 {
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
		ranges, s.done = geo.Annulus(n.Point, r, s.done)
	case n.Spherical: // $nearSphere on a 2d index: the cap's boxes
		for _, b := range capBoxes(capOf(n.Point, r)) {
			ranges = append(ranges, s.p.ix.Spec.Grid().CoverBox(b)...)
		}
	default:
		ranges = s.p.ix.Spec.Grid().CoverBox(geo.Square(n.Center, r))
	}
	cells := make([]index.FieldInterval, 0, len(ranges))
	for _, cr := range ranges {
		cells = append(cells, index.CellInterval(cr))
	}
	return index.EntryIntervals(geoFieldBounds(s.p.ix, cells))
}

// scan reads one range of entries, keeping the documents not seen yet
// that match the filter.
func (s *nearSource) scan(ctx context.Context, iv index.Interval) error {
	it, err := s.rd.IndexScan(ctx, s.coll, s.p.ix.Spec.Name, iv)
	if err != nil {
		return err
	}
	for {
		if err := query.ContextErr(ctx); err != nil {
			return err
		}
		_, id, err := it.Next(ctx)
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
		doc, found, err := fetch(ctx, s.rd, s.coll, id, s.p)
		if err != nil {
			return err
		}
		s.st.docsExamined++
		if !found || !s.f.Match(doc) {
			if err := s.f.Err(); err != nil {
				return err
			}
			continue
		}
		if d, _, ok := s.np.Distance(doc); ok {
			s.pending = append(s.pending, nearDoc{doc: doc, ring: s.np.Near.Radians(d)})
		}
	}
}

// release moves the pending documents within r to ready, nearest first.
func (s *nearSource) release(r float64) {
	var keep []nearDoc
	for _, d := range s.pending {
		if d.ring <= r {
			s.ready = append(s.ready, d)
		} else {
			keep = append(keep, d)
		}
	}
	s.pending = keep
	sort.SliceStable(s.ready, func(i, j int) bool { return s.ready[i].ring < s.ready[j].ring })
}
