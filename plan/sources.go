package plan

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"

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

// sortAll materialises src and sorts it (stable, as mongod's sort is
// for equal keys in _id order).
func sortAll(ctx context.Context, src Source, s *query.Sort) (Source, error) {
	docs, err := query.Drain(ctx, src)
	if err != nil {
		return nil, err
	}
	sort.SliceStable(docs, func(i, j int) bool { return s.Compare(docs[i], docs[j]) < 0 })
	return query.NewSliceStream(docs), nil
}

// partialReporter is a source whose documents may lack fields.
type partialReporter interface{ LastPartial() bool }

// sortScan is Sort for a scan that may return large documents
// in part (only what the sort and filter read): it sorts those and reads
// each whole again by _id when the sorted stream reaches it, so a sort of
// large documents never holds them all.
func sortScan(ctx context.Context, src Source, s *query.Sort, rd storage.Reader, coll string) (Source, error) {
	pr, ok := src.(partialReporter)
	if !ok {
		return sortAll(ctx, src, s)
	}
	var docs []bsoncore.Document
	var partial []bool
	for {
		d, err := src.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		docs, partial = append(docs, d), append(partial, pr.LastPartial())
	}
	order := make([]int, len(docs))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(i, j int) bool { return s.Compare(docs[order[i]], docs[order[j]]) < 0 })
	return &refetchSource{rd: rd, coll: coll, docs: docs, partial: partial, order: order}, nil
}

// refetchSource yields documents in a given order, reading again those
// that were read in part.
type refetchSource struct {
	rd      storage.Reader
	coll    string
	docs    []bsoncore.Document
	partial []bool
	order   []int
}

func (s *refetchSource) Next(ctx context.Context) (bsoncore.Document, error) {
	if len(s.order) == 0 {
		return nil, io.EOF
	}
	i := s.order[0]
	s.order = s.order[1:]
	d := s.docs[i]
	s.docs[i] = nil
	if !s.partial[i] {
		return d, nil
	}
	full, found, err := s.rd.Get(ctx, s.coll, d.Lookup("_id"))
	if err == nil && !found {
		err = fmt.Errorf("document %s vanished from its snapshot", d.Lookup("_id"))
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
