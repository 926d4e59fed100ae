package server

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/dumbodb/dumbodb/auth"
	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/storage"
	"github.com/dumbodb/dumbodb/value"
	"github.com/dumbodb/dumbodb/wire"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// maxBulkErrors bounds the refusals a bulk load's answer lists.
const maxBulkErrors = 1000

// cmdDumboBulkLoad loads documents into a collection of the request's
// branch through storage's bulk path (docs/design/bulk-load.md): the
// documents, BSON back to back, arrive as pieces of an upload, then
// finish loads them all at once.
//
//	{dumboBulkLoad: <coll>, upload: <id>, offset, data: BinData}   a piece
//	{dumboBulkLoad: <coll>, upload: <id>, finish: true, stopOnError?,
//	 bypassDocumentValidation?, bypassEmptyTsReplacement?}           the load
func cmdDumboBulkLoad(r *request) (bsoncore.Document, error) {
	coll, err := r.collectionArg()
	if err != nil {
		return nil, err
	}
	var a bulkLoadArgs
	if err := r.parseBulkLoad(&a); err != nil {
		return nil, err
	}
	if err := r.requireBypass(a.bypass, r.db); err != nil {
		return nil, err
	}
	if err := validateUserWritable(r.db, coll); err != nil {
		return nil, err
	}
	if err := r.refuseOnReplica(auth.Insert); err != nil {
		return nil, err
	}
	e := r.c.s.engine
	if !a.finish {
		size, err := e.AppendUpload(storage.UploadBulk, r.db, a.upload, a.offset, a.data)
		if err != nil {
			return nil, err
		}
		return bsoncore.NewDocumentBuilder().AppendInt64("size", size).AppendDouble("ok", 1).Build(), nil
	}
	f, err := e.TakeUpload(r.ctx, storage.UploadBulk, r.db, a.upload)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return r.bulkLoad(coll, bufio.NewReaderSize(f, 1<<20), a)
}

type bulkLoadArgs struct {
	upload                       string
	offset                       int64
	data                         []byte
	hasData, finish, stopOnError bool
	bypass, keepEmptyTs          bool
}

func (r *request) parseBulkLoad(a *bulkLoadArgs) error {
	err := r.parseArgs(map[string]fieldHandler{
		"upload":                   r.stringArg("upload", &a.upload),
		"offset":                   r.nonNegativeArg("offset", &a.offset),
		"finish":                   r.boolArg("finish", &a.finish),
		"stopOnError":              r.boolArg("stopOnError", &a.stopOnError),
		"bypassDocumentValidation": r.boolArg("bypassDocumentValidation", &a.bypass),
		"bypassEmptyTsReplacement": r.boolArg("bypassEmptyTsReplacement", &a.keepEmptyTs),
		"data": func(v bsoncore.Value) error {
			_, b, ok := v.BinaryOK()
			if !ok {
				return mongoerr.New(mongoerr.TypeMismatch, "BSON field 'dumboBulkLoad.data' is the wrong type '%s', expected type 'binData'", value.TypeName(v.Type))
			}
			a.data, a.hasData = b, true
			return nil
		},
	})
	switch {
	case err != nil:
		return err
	case !storage.ValidPushID(a.upload):
		return mongoerr.New(mongoerr.BadValue, "dumboBulkLoad.upload must be 16 to 64 hexadecimal digits")
	case a.finish == a.hasData:
		return mongoerr.New(mongoerr.BadValue, "dumboBulkLoad takes either data (a piece of the upload) or finish: true")
	}
	return nil
}

// bulkLoad loads the documents rd holds into coll.
func (r *request) bulkLoad(coll string, rd *bufio.Reader, a bulkLoadArgs) (bsoncore.Document, error) {
	if ts, err := r.writeTarget(coll); err != nil || ts {
		return nil, cmpErr(err, fmt.Errorf("%w: %s is a time-series collection", storage.ErrBulkTarget, coll))
	}
	d, err := r.database(true)
	if err != nil {
		return nil, err
	}
	rev, err := r.revision(d)
	if err != nil {
		return nil, err
	}
	if rev.ReadOnly() {
		return nil, mongoerr.New(mongoerr.ReadOnlyRevision, "cannot write to %s: it is a read-only revision (a tag or a commit); write to a branch", r.db)
	}
	dv, err := r.bulkValidator(coll, a.bypass)
	if err != nil {
		return nil, err
	}
	next := func() (bsoncore.Document, error) {
		raw, err := readBSONDocument(rd)
		if err != nil {
			return nil, err
		}
		doc, err := prepareInsert(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: raw})
		if err == nil && !a.keepEmptyTs {
			doc = r.c.s.fillEmptyTimestamps(doc)
		}
		if err == nil {
			err = dv.checkInsert(doc)
		}
		if err != nil {
			return nil, storage.RefusedDocument{Err: err}
		}
		return doc, nil
	}
	res, err := d.BulkLoad(r.ctx, rev.Branch, coll, nil, next, a.stopOnError)
	if err != nil {
		return nil, err
	}
	r.c.s.stats.opInsert.Add(res.Inserted)
	r.c.s.log.Info().Str("c", "WRITE").Str("ns", r.ns(coll)).Int64("inserted", res.Inserted).
		Int("refused", len(res.Refused)).Msg("bulk load")
	return bulkReply(r.ns(coll), res), nil
}

// bulkValidator is the collection's validator as it stands before the
// load (nil: none, or bypassed).
func (r *request) bulkValidator(coll string, bypass bool) (*docValidator, error) {
	var dv *docValidator
	err := r.writeExisting(func(tx *storage.Tx) error {
		var err error
		dv, err = r.validatorFor(tx, r.db, coll, bypass)
		return err
	})
	return dv, err
}

// readBSONDocument reads one BSON document; io.EOF at a clean end.
func readBSONDocument(rd *bufio.Reader) ([]byte, error) {
	head, err := rd.Peek(4)
	if err == io.EOF && len(head) == 0 {
		return nil, io.EOF
	}
	if err != nil {
		return nil, mongoerr.New(mongoerr.InvalidBSON, "dumboBulkLoad: the upload ends inside a document")
	}
	n := int(binary.LittleEndian.Uint32(head))
	if n < 5 || n > wire.MaxDocumentSize+16*1024 {
		return nil, mongoerr.New(mongoerr.InvalidBSON, "dumboBulkLoad: a document of %d bytes", n)
	}
	doc := make([]byte, n)
	if _, err := io.ReadFull(rd, doc); err != nil {
		return nil, mongoerr.New(mongoerr.InvalidBSON, "dumboBulkLoad: the upload ends inside a document")
	}
	if err := bsoncore.Document(doc).Validate(); err != nil {
		return nil, mongoerr.New(mongoerr.InvalidBSON, "dumboBulkLoad: %v", err)
	}
	return doc, nil
}

// bulkReply is {n, refused?, nRefused?, ok}: refused lists at most
// maxBulkErrors refusals as insert's writeErrors would (not under that
// name, which drivers take for a failed write), nRefused counts them all.
func bulkReply(ns string, res storage.BulkResult) bsoncore.Document {
	b := bsoncore.NewDocumentBuilder().AppendInt64("n", res.Inserted)
	if len(res.Refused) > 0 {
		arr := bsoncore.NewArrayBuilder()
		for _, ref := range res.Refused[:min(len(res.Refused), maxBulkErrors)] {
			me, ok := duplicateKeyError(ns, ref.Err, ref.ID)
			if !ok {
				me = toMongoErr(ref.Err)
			}
			arr.AppendDocument(bsoncore.NewDocumentBuilder().AppendInt64("index", ref.Index).
				AppendInt32("code", int32(me.Code)).AppendString("codeName", me.Code.String()).
				AppendString("errmsg", me.Msg).Build())
		}
		b.AppendArray("refused", arr.Build()).AppendInt64("nRefused", int64(len(res.Refused)))
	}
	return b.AppendDouble("ok", 1).Build()
}
