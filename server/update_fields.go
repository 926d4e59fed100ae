package server

import (
	"context"
	"errors"
	"slices"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/query"
	"github.com/dumbodb/dumbodb/storage"
	"github.com/dumbodb/dumbodb/wire"
)

// updateByFields applies u to the document f selects by _id equality
// through storage.UpdateFields: for a large document, only the top-level
// fields that f and u name (and those indexes key on) are read, matched,
// updated and written (docs/design/large-documents.md, "Updates by
// field"). handled is false when the statement needs the whole document
// (a validator, a filter or update whose fields cannot be named, a small
// document); nothing was then written.
func updateByFields(ctx context.Context, tx *storage.Tx, coll string, f *query.Filter, u *query.Update, dv *docValidator) (handled bool, matched, modified int64, err error) {
	if dv != nil {
		return false, 0, 0, nil
	}
	id, ok := f.IDEquality()
	if !ok {
		return false, 0, 0, nil
	}
	fields, ok := fieldUpdateNames(f, u)
	if !ok {
		return false, 0, 0, nil
	}
	res, err := tx.UpdateFields(ctx, coll, id, storage.FieldUpdate{
		Fields:  fields,
		MaxSize: wire.MaxDocumentSize,
		Apply: func(part bsoncore.Document) (bsoncore.Document, bool, error) {
			if !f.MatchContext(ctx, part) {
				return nil, false, f.Err()
			}
			matched = 1
			after, changed, err := u.Apply(part, false)
			if err != nil || !changed {
				return nil, false, err
			}
			after, err = normalizeDocument(after)
			return after, err == nil, err
		},
	})
	if errors.Is(err, storage.ErrDocumentTooLarge) {
		err = mongoerr.New(mongoerr.Location17419, "Resulting document after update is larger than %d", wire.MaxDocumentSize)
	}
	if !res.Handled {
		return false, 0, 0, err
	}
	if res.Changed {
		modified = 1
	}
	return true, matched, modified, err
}

// fieldUpdateNames is the top-level fields a filter and an update read or
// write (false: one of them reads the document in other ways).
func fieldUpdateNames(f *query.Filter, u *query.Update) ([]string, bool) {
	names, ok := u.TopFields()
	if !ok {
		return nil, false
	}
	paths, ok := f.Paths()
	if !ok {
		return nil, false
	}
	for _, p := range paths {
		top, _, _ := strings.Cut(p, ".")
		if !slices.Contains(names, top) {
			names = append(names, top)
		}
	}
	return names, true
}
