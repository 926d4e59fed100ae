package server

import (
	"context"
	"errors"
	"io"
	"sort"

	"dumbodb/query"
	"dumbodb/query/mongoerr"
	"dumbodb/storage"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// matchingSource yields the documents of coll that match f: a point look-up
// when f pins _id, a scan in _id order otherwise.
func matchingSource(ctx context.Context, rd storage.Reader, coll string, f *query.Filter) (docSource, error) {
	if id, ok := f.IDEquality(); ok && storage.ValidateKey(id) == nil {
		doc, found, err := rd.Get(ctx, coll, id)
		if err != nil {
			return nil, err
		}
		if found && f.Match(doc) {
			return &sliceSource{docs: []bsoncore.Document{doc}}, nil
		}
		return &sliceSource{}, f.Err()
	}
	it, err := rd.Scan(ctx, coll)
	if err != nil {
		return nil, err
	}
	return &filterSource{it: it, f: f}, nil
}

// filterSource yields the documents of a scan that match a filter.
type filterSource struct {
	it *storage.Iterator
	f  *query.Filter
}

func (s *filterSource) Next(ctx context.Context) (bsoncore.Document, error) {
	for {
		if err := ctx.Err(); err != nil {
			return nil, contextError(err)
		}
		d, err := s.it.Next(ctx)
		if err != nil {
			return nil, err
		}
		if s.f.Match(d) {
			return d, nil
		}
		if err := s.f.Err(); err != nil {
			return nil, err
		}
	}
}

// contextError turns a cancelled or expired context into MongoDB's errors.
func contextError(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return mongoerr.New(mongoerr.MaxTimeMSExpired, "operation exceeded time limit")
	}
	return mongoerr.New(mongoerr.Interrupted, "operation was interrupted")
}

// sortedSource materialises src and sorts it (stable, as mongod's sort is
// for equal keys in _id order).
func sortedSource(ctx context.Context, src docSource, s *query.Sort) (docSource, error) {
	docs, err := query.Drain(ctx, src)
	if err != nil {
		return nil, err
	}
	sort.SliceStable(docs, func(i, j int) bool { return s.Compare(docs[i], docs[j]) < 0 })
	return &sliceSource{docs: docs}, nil
}

// skipLimitSource skips the first skip documents and stops after limit
// (limit 0: no limit).
type skipLimitSource struct {
	src         docSource
	skip, limit int64
	returned    int64
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

// projectSource applies a projection to each document.
type projectSource struct {
	src docSource
	p   *query.Projection
}

func (s *projectSource) Next(ctx context.Context) (bsoncore.Document, error) {
	d, err := s.src.Next(ctx)
	if err != nil {
		return nil, err
	}
	return s.p.Apply(d)
}

// queryEnv builds the query environment of a command from its collation
// and let documents (either may be nil).
func queryEnv(collation, let bsoncore.Document) (*query.Env, error) {
	var coll *query.Collation
	if collation != nil {
		var err error
		if coll, err = query.ParseCollation(collation); err != nil {
			return nil, err
		}
	}
	return query.NewEnv(coll, let)
}

// checkHint accepts the hints that name an existing index: the _id index
// (by key pattern or name) and $natural. Secondary indexes do not exist
// yet, so any other hint fails as on mongod.
func checkHint(hint bsoncore.Value) error {
	switch hint.Type {
	case 0:
		return nil
	case bsoncore.TypeString:
		if hint.StringValue() == "_id_" {
			return nil
		}
	case bsoncore.TypeEmbeddedDocument:
		d := bsoncore.Document(hint.Data)
		els, _ := d.Elements()
		if len(els) == 0 {
			return nil
		}
		if len(els) == 1 && (els[0].Key() == "_id" || els[0].Key() == "$natural") {
			return nil
		}
	default:
		return mongoerr.New(mongoerr.FailedToParse, "hint must be a string or an object")
	}
	return mongoerr.New(mongoerr.BadValue, "hint provided does not correspond to an existing index")
}

// reverseSource yields src's documents in reverse order ({$natural: -1}).
func reverseSource(ctx context.Context, src docSource) (docSource, error) {
	docs, err := query.Drain(ctx, src)
	if err != nil {
		return nil, err
	}
	for i, j := 0, len(docs)-1; i < j; i, j = i+1, j-1 {
		docs[i], docs[j] = docs[j], docs[i]
	}
	return &sliceSource{docs: docs}, nil
}
