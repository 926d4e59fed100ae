package plan

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/dumbodb/dumbodb/interrupt"
	"github.com/dumbodb/dumbodb/query"
	"github.com/dumbodb/dumbodb/storage"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Source yields documents one at a time; Next returns io.EOF at the end.
type Source interface {
	Next(ctx context.Context) (bsoncore.Document, error)
}

// Matching yields the documents of coll that match f: a point look-up
// when f pins _id, an index scan when an index bounds f, a scan in _id
// order otherwise.
func Matching(ctx context.Context, rd storage.Reader, coll string, f *query.Filter) (Source, error) {
	p, err := Query(rd, coll, Input{Filter: f})
	if err != nil {
		return nil, err
	}
	return planSource(ctx, rd, coll, f, p, &execStats{})
}

// filterSource yields the documents of a scan that match a filter.
type filterSource struct {
	it *storage.Iterator
	f  *query.Filter
}

func (s *filterSource) Next(ctx context.Context) (bsoncore.Document, error) {
	var stop error // a filter error ends the scan; the iterator checks ctx
	keep := func(doc bsoncore.Document) bool {
		if s.f.MatchContext(ctx, doc) {
			return true
		}
		stop = s.f.Err()
		return stop != nil
	}
	if err := interrupt.Err(ctx); err != nil {
		return nil, err
	}
	d, err := s.it.NextWhere(ctx, keep)
	if err != nil {
		return nil, err
	}
	if stop != nil {
		return nil, stop
	}
	return d, nil
}

// sortScan sorts src's documents by s, stable, as mongod's sort is for
// equal keys in _id order. keep > 0 is a limit (plus skip) over the sort:
// only the first keep documents are held, as mongod's top-k sort holds
// them, so that a sort with a limit over a large collection costs a scan,
// not a sort of it all. A scan that returns large documents in part (only
// what the sort and filter read) has those read whole again by _id when
// the sorted stream reaches them, so a sort of large documents never
// holds them all.
func sortScan(ctx context.Context, src Source, s *query.Sort, rd storage.Reader, coll string, keep int) (Source, error) {
	pr, _ := src.(partialReporter)
	items, err := collectSorted(ctx, src, s, keep, pr)
	if err != nil {
		return nil, err
	}
	return &refetchSource{rd: rd, coll: coll, items: items}, nil
}

// sortItem is one document of a blocking sort: whether it was read in
// part, and its place in the input, which breaks ties.
type sortItem struct {
	doc     bsoncore.Document
	partial bool
	seq     int
}

// collectSorted reads src to its end and returns its documents sorted by
// s, ties in input order; keep > 0 keeps only the first keep, holding no
// more at any time.
func collectSorted(ctx context.Context, src Source, s *query.Sort, keep int, pr partialReporter) ([]sortItem, error) {
	top := query.NewTopK(keep, func(a, b sortItem) bool {
		if c := s.Compare(a.doc, b.doc); c != 0 {
			return c < 0
		}
		return a.seq < b.seq
	})
	for seq := 0; ; seq++ {
		d, err := src.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		top.Add(sortItem{doc: d, seq: seq, partial: pr != nil && pr.LastPartial()})
	}
	return top.Sorted(), nil
}

// partialReporter is a source whose documents may lack fields.
type partialReporter interface{ LastPartial() bool }

// refetchSource yields sorted documents, reading again those that were
// read in part.
type refetchSource struct {
	rd    storage.Reader
	coll  string
	items []sortItem
}

func (s *refetchSource) Next(ctx context.Context) (bsoncore.Document, error) {
	if len(s.items) == 0 {
		return nil, io.EOF
	}
	it := s.items[0]
	s.items[0] = sortItem{}
	s.items = s.items[1:]
	if !it.partial {
		return it.doc, nil
	}
	full, found, err := s.rd.Get(ctx, s.coll, it.doc.Lookup("_id"))
	if err == nil && !found {
		err = fmt.Errorf("document %s vanished from its snapshot", it.doc.Lookup("_id"))
	}
	return full, err
}

// skipLimitSource skips the first skip documents and stops after limit
// (limit 0: no limit). bySort: a blocking sort below enforces the limit
// on mongod, which therefore does not know the end when it is reached
// (known_end.go).
type skipLimitSource struct {
	src         Source
	skip, limit int64
	returned    int64
	bySort      bool
}

func (s *skipLimitSource) Next(ctx context.Context) (bsoncore.Document, error) {
	for s.skip > 0 {
		if _, err := s.src.Next(ctx); err != nil {
			return nil, err
		}
		s.skip--
	}
	if s.limit > 0 && s.returned >= s.limit {
		return nil, io.EOF
	}
	d, err := s.src.Next(ctx)
	if err == nil {
		s.returned++
	}
	return d, err
}

// project applies the projection p to each document of src.
func project(src Source, p *query.Projection) Source { return &projectSource{src: src, p: p} }

// projectSource applies a projection to each document.
type projectSource struct {
	src Source
	p   *query.Projection
}

func (s *projectSource) Next(ctx context.Context) (bsoncore.Document, error) {
	d, err := s.src.Next(ctx)
	if err != nil {
		return nil, err
	}
	return s.p.ApplyContext(ctx, d)
}

// reverse yields src's documents in reverse order ({$natural: -1}).
func reverse(ctx context.Context, src Source) (Source, error) {
	docs, err := query.Drain(ctx, src)
	if err != nil {
		return nil, err
	}
	for i, j := 0, len(docs)-1; i < j; i, j = i+1, j-1 {
		docs[i], docs[j] = docs[j], docs[i]
	}
	return query.NewSliceStream(docs), nil
}
