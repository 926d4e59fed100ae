package server

import (
	"dumbodb/index"
	"dumbodb/query/mongoerr"
	"dumbodb/query/value"
	"dumbodb/storage"
	"dumbodb/wire"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// maxKeySize is the longest encoded _id we store.
const maxKeySize = index.MaxKeySize

// writeResult accumulates the reply of a write command.
type writeResult struct {
	n, nModified int64
	upserted     []bsoncore.Document // {index, _id}
	errs         []writeError
}

func (w *writeResult) reply(withModified bool) bsoncore.Document {
	dst := make([]byte, 0, 128)
	idx, dst := bsoncore.AppendDocumentStart(dst)
	dst = bsoncore.AppendInt32Element(dst, "n", int32(w.n))
	if withModified {
		dst = bsoncore.AppendInt32Element(dst, "nModified", int32(w.nModified))
	}
	if len(w.upserted) > 0 {
		dst = appendDocArray(dst, "upserted", w.upserted)
	}
	if len(w.errs) > 0 {
		aidx, d := bsoncore.AppendArrayElementStart(dst, "writeErrors")
		dst = d
		for i, e := range w.errs {
			dst = e.append(dst, itoa(int64(i)))
		}
		dst, _ = bsoncore.AppendArrayEnd(dst, aidx)
	}
	dst = bsoncore.AppendDoubleElement(dst, "ok", 1)
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return dst
}

// add records err for statement i; it reports whether an ordered batch
// must stop.
func (w *writeResult) add(i int, err error, ns string, id bsoncore.Value) {
	if me, ok := duplicateKeyError(ns, err, id); ok {
		w.errs = append(w.errs, writeError{index: i, err: me})
		return
	}
	w.errs = append(w.errs, writeError{index: i, err: toMongoErr(err)})
}

func cmdInsert(r *request) (bsoncore.Document, error) {
	coll, err := r.collectionArg()
	if err != nil {
		return nil, err
	}
	var docs bsoncore.Array
	ordered := true
	err = r.parseArgs(map[string]fieldHandler{
		"documents":                r.arrayArg("documents", &docs),
		"ordered":                  r.boolArg("ordered", &ordered),
		"bypassDocumentValidation": r.ignoreArg(),
	})
	if err != nil {
		return nil, err
	}
	if docs == nil {
		return nil, mongoerr.New(mongoerr.Code(40414), "BSON field 'insert.documents' is missing but a required field")
	}
	if err := validateUserWritable(r.db, coll); err != nil {
		return nil, err
	}
	vals, err := docs.Values()
	if err != nil {
		return nil, mongoerr.New(mongoerr.InvalidBSON, "%s", err.Error())
	}
	if len(vals) > maxWriteBatchSize {
		return nil, mongoerr.New(mongoerr.InvalidLength, "Write batch sizes must be between 1 and %d. Got %d operations.", maxWriteBatchSize, len(vals))
	}
	var res writeResult
	ns := r.ns(coll)
	err = r.write(func(tx *storage.Tx) error {
		if _, err := tx.EnsureCollection(r.ctx, coll); err != nil {
			return err
		}
		for i, v := range vals {
			doc, err := prepareInsert(v)
			if err == nil {
				err = tx.Insert(r.ctx, coll, doc)
			}
			if err != nil {
				res.add(i, err, ns, doc.Lookup("_id"))
				if ordered {
					break
				}
				continue
			}
			res.n++
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	r.c.s.stats.opInsert.Add(res.n)
	return res.reply(false), nil
}

// prepareInsert validates a document for insertion and returns it with its
// _id first, generating an ObjectId when it has none (as drivers and mongod
// do).
func prepareInsert(v bsoncore.Value) (bsoncore.Document, error) {
	doc, ok := v.DocumentOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field 'insert.documents.0' is the wrong type '%s', expected type 'object'", value.TypeName(v.Type))
	}
	if len(doc) > wire.MaxDocumentSize {
		return nil, mongoerr.New(mongoerr.BSONObjectTooLarge, "object to insert too large. size in bytes: %d, max size: %d", len(doc), wire.MaxDocumentSize)
	}
	return normalizeDocument(doc)
}

// normalizeDocument checks the _id and moves it to the front. Other
// field names may start with "$" (allowed since MongoDB 5.0).
func normalizeDocument(doc bsoncore.Document) (bsoncore.Document, error) {
	els, err := doc.Elements()
	if err != nil {
		return nil, mongoerr.New(mongoerr.InvalidBSON, "%s", err.Error())
	}
	idPos := -1
	for i, el := range els {
		if el.Key() != "_id" {
			continue
		}
		if idPos >= 0 {
			return nil, mongoerr.New(mongoerr.BadValue, "can't have multiple _id fields in one document")
		}
		idPos = i
	}
	if idPos >= 0 {
		if err := index.ValidateID(els[idPos].Value()); err != nil {
			return nil, err
		}
	}
	if idPos == 0 {
		return doc, nil
	}
	out := make([]byte, 0, len(doc)+17)
	start, out := bsoncore.AppendDocumentStart(out)
	if idPos > 0 {
		out = append(out, els[idPos]...)
	} else {
		out = bsoncore.AppendObjectIDElement(out, "_id", newObjectID())
	}
	for i, el := range els {
		if i != idPos {
			out = append(out, el...)
		}
	}
	out, _ = bsoncore.AppendDocumentEnd(out, start)
	return out, nil
}
