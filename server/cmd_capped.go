package server

import (
	"context"
	"errors"
	"io"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/storage"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// convertToCapped and cloneCollectionAsCapped (docs/design/capped.md):
// both copy a collection's documents, in its natural order, into a new
// capped collection in one write, so a reader sees the collection before
// or after, never half made. Like mongod, the copy has no secondary
// indexes and a new UUID, and the oldest documents go when the new size
// cannot hold them all.

func cmdConvertToCapped(r *request) (bsoncore.Document, error) {
	coll, err := r.collectionArg()
	if err != nil {
		return nil, err
	}
	size, err := r.cappedSizeArg()
	if err != nil {
		return nil, err
	}
	err = r.write(func(tx *storage.Tx) error {
		docs, info, err := r.cappedSource(tx, coll)
		if err != nil {
			return err
		}
		if err := tx.DropCollection(coll); err != nil {
			return err
		}
		return copyIntoCapped(r.ctx, tx, coll, cappedOptions(info.Options, size), docs)
	})
	if err != nil {
		return nil, err
	}
	r.killCursorsOn(coll, "collection converted to capped")
	return okReply(), nil
}

func cmdCloneCollectionAsCapped(r *request) (bsoncore.Document, error) {
	v := r.cmd.Index(0).Value()
	from, err := stringValue(r.name, r.name, v)
	if err != nil {
		return nil, err
	}
	var to string
	var sizeV bsoncore.Value
	err = r.parseArgs(map[string]fieldHandler{
		"toCollection": r.stringArg("toCollection", &to),
		"size":         func(v bsoncore.Value) error { sizeV = v; return nil },
	})
	if err != nil {
		return nil, err
	}
	if to == "" {
		return nil, mongoerr.New(mongoerr.Location40414, "BSON field 'cloneCollectionAsCapped.toCollection' is missing but a required field")
	}
	size, err := checkCappedSize(r.name, sizeV)
	if err != nil {
		return nil, err
	}
	for _, name := range []string{from, to} {
		if err := validateCollectionName(r.db, name); err != nil {
			return nil, err
		}
	}
	err = r.write(func(tx *storage.Tx) error {
		docs, info, err := r.cappedSource(tx, from)
		if err != nil {
			return err
		}
		if _, exists := tx.Collection(to); exists {
			return mongoerr.New(mongoerr.NamespaceExists, "cloneCollectionAsCapped failed - destination collection %s already exists. source collection: %s",
				r.ns(to), r.ns(from))
		}
		return copyIntoCapped(r.ctx, tx, to, cappedOptions(info.Options, size), docs)
	})
	if err != nil {
		return nil, err
	}
	return okReply(), nil
}

// cappedSizeArg reads convertToCapped's size, which it requires.
func (r *request) cappedSizeArg() (int64, error) {
	var sizeV bsoncore.Value
	err := r.parseArgs(map[string]fieldHandler{
		"size": func(v bsoncore.Value) error { sizeV = v; return nil },
	})
	if err != nil {
		return 0, err
	}
	return checkCappedSize(r.name, sizeV)
}

// checkCappedSize checks a required size as create checks its own.
func checkCappedSize(cmd string, v bsoncore.Value) (int64, error) {
	if v.Type == 0 {
		return 0, mongoerr.New(mongoerr.Location40414, "BSON field '%s.size' is missing but a required field", cmd)
	}
	size, err := cappedNumber(cmd, "size", v)
	switch {
	case err != nil:
		return 0, err
	case size < 1:
		return 0, mongoerr.New(mongoerr.Location51024, "BSON field 'size' value must be >= 1, actual value '%d'", size)
	case size > maxCappedSize:
		return 0, mongoerr.New(mongoerr.Location51024, "BSON field 'size' value must be <= %d, actual value '%d'", maxCappedSize, size)
	}
	return size, nil
}

// cappedSource reads the documents of the collection to copy, in its
// natural order.
func (r *request) cappedSource(tx *storage.Tx, coll string) ([]bsoncore.Document, storage.CollectionInfo, error) {
	info, ok := tx.Collection(coll)
	switch {
	case !ok:
		return nil, info, mongoerr.New(mongoerr.NamespaceNotFound, "source collection %s does not exist", r.ns(coll))
	case info.IsView():
		return nil, info, mongoerr.New(mongoerr.CommandNotSupportedOnView, "%s is a view, not a collection", r.ns(coll))
	}
	it, err := tx.Scan(r.ctx, coll)
	if err != nil {
		return nil, info, err
	}
	var docs []bsoncore.Document
	for {
		d, err := it.Next(r.ctx)
		if errors.Is(err, io.EOF) {
			return docs, info, nil
		}
		if err != nil {
			return nil, info, err
		}
		docs = append(docs, d)
	}
}

// cappedOptions are a copy's options: capped, the size rounded as create
// rounds it, then the source's other options (its validator, collation,
// ...), without its own capped, size and max.
func cappedOptions(src bsoncore.Document, size int64) bsoncore.Document {
	b := bsoncore.NewDocumentBuilder().AppendBoolean("capped", true).AppendValue("size", appendNumber(roundCappedSize(size)))
	els, _ := src.Elements()
	for _, el := range els {
		switch el.Key() {
		case "capped", "size", "max":
		default:
			b.AppendValue(el.Key(), el.Value())
		}
	}
	return b.Build()
}

// copyIntoCapped creates the capped collection and inserts docs into it
// oldest first; the collection's limits remove what does not fit.
func copyIntoCapped(ctx context.Context, tx *storage.Tx, name string, opts bsoncore.Document, docs []bsoncore.Document) error {
	if _, err := tx.CreateCollection(ctx, name, opts); err != nil {
		return err
	}
	for _, d := range docs {
		if err := tx.Insert(ctx, name, d); err != nil {
			return err
		}
	}
	return nil
}
