package server

import (
	"bytes"
	"context"
	"io"
	"os"

	"github.com/dumbodb/dumbodb/auth"
	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/storage"
	"github.com/dumbodb/dumbodb/value"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// History bundles (docs/format/bundle.md): dumboBundleCreate streams a
// database's bundle as a cursor of pieces; dumboBundleRestore takes one
// in pieces and restores it. The dumbodb bundle subcommand is a client
// of both.

// bundlePiece is the size of one piece of a bundle in a cursor's batch:
// three fit in a batch's 16 MiB.
const bundlePiece = 4 << 20

// cmdDumboBundleCreate is {dumboBundleCreate: 1, since?: [<commit id>]}:
// a cursor of {data: BinData} pieces that, put together, are the
// database's bundle; since (an earlier bundle's refs) makes it
// incremental.
func cmdDumboBundleCreate(r *request) (bsoncore.Document, error) {
	var since bsoncore.Array
	var batchSize int64 = batchSizeAbsent
	err := r.parseArgs(map[string]fieldHandler{
		"since":     r.arrayArg("since", &since),
		"batchSize": r.nonNegativeArg("batchSize", &batchSize),
	})
	if err != nil {
		return nil, err
	}
	addrs, err := stringElements("dumboBundleCreate.since", since)
	if err != nil {
		return nil, err
	}
	d, err := r.vcDatabase()
	if err != nil {
		return nil, err
	}
	f, hdr, err := d.BundleFile(r.ctx, addrs)
	if err != nil {
		return nil, err
	}
	r.c.s.log.Info().Str("c", "STORAGE").Str("db", r.db).Int64("chunks", hdr.Chunks).Int64("bytes", hdr.Bytes).
		Bool("incremental", len(addrs) > 0).Msg("bundle made")
	return r.startCursor(r.db+".$cmd.dumboBundleCreate", &bundleSource{f: f}, int(batchSize), false, false)
}

// stringElements reads an array of strings (nil: none).
func stringElements(field string, arr bsoncore.Array) ([]string, error) {
	if arr == nil {
		return nil, nil
	}
	vals, err := arr.Values()
	if err != nil {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field '%s' must be an array of strings", field)
	}
	out := make([]string, 0, len(vals))
	for _, v := range vals {
		s, ok := v.StringValueOK()
		if !ok {
			return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field '%s' must be an array of strings, not one holding %s", field, value.TypeName(v.Type))
		}
		out = append(out, s)
	}
	return out, nil
}

// bundleSource serves a bundle file as pieces; closing it frees the file.
type bundleSource struct {
	f   *os.File
	buf []byte
}

func (b *bundleSource) Next(context.Context) (bsoncore.Document, error) {
	if b.buf == nil {
		b.buf = make([]byte, bundlePiece)
	}
	n, err := io.ReadFull(b.f, b.buf)
	if n == 0 {
		if err == io.ErrUnexpectedEOF {
			err = io.EOF
		}
		return nil, err
	}
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return nil, err
	}
	return bsoncore.NewDocumentBuilder().AppendBinary("data", 0, b.buf[:n]).Build(), nil
}

func (b *bundleSource) Close() error { return b.f.Close() }

// cmdDumboBundleRestore restores a bundle into this database, made from
// it if it does not exist (docs/version-control.md, "Bundles"):
//
//	{dumboBundleRestore: 1, data: BinData}                  one piece, restored at once
//	{dumboBundleRestore: 1, upload: <id>, offset, data}     a piece of an upload
//	{dumboBundleRestore: 1, upload: <id>, finish: true}     restores the upload
//
// A piece's offset must be what the upload holds, and the answer says
// how much that is (size), so that a client cut off goes on from there.
func cmdDumboBundleRestore(r *request) (bsoncore.Document, error) {
	var upload string
	var offset int64
	var data []byte
	var hasData, finish bool
	err := r.parseArgs(map[string]fieldHandler{
		"upload": r.stringArg("upload", &upload),
		"offset": r.nonNegativeArg("offset", &offset),
		"finish": r.boolArg("finish", &finish),
		"data": func(v bsoncore.Value) error {
			_, b, ok := v.BinaryOK()
			if !ok {
				return mongoerr.New(mongoerr.TypeMismatch, "BSON field 'dumboBundleRestore.data' is the wrong type '%s', expected type 'binData'", value.TypeName(v.Type))
			}
			data, hasData = b, true
			return nil
		},
	})
	switch {
	case err != nil:
		return nil, err
	case upload != "" && !storage.ValidPushID(upload):
		return nil, mongoerr.New(mongoerr.BadValue, "dumboBundleRestore.upload must be 16 to 64 hexadecimal digits")
	case upload == "" && (finish || !hasData):
		return nil, mongoerr.New(mongoerr.BadValue, "dumboBundleRestore takes data (a whole bundle), or upload with data or finish")
	case finish && hasData:
		return nil, mongoerr.New(mongoerr.BadValue, "dumboBundleRestore: finish takes no data; send the last piece first")
	}
	if err := r.refuseOnReplica(auth.VCAdmin); err != nil {
		return nil, err
	}
	e := r.c.s.engine
	if upload != "" && !finish {
		size, err := e.AppendUpload(storage.UploadBundle, r.db, upload, offset, data)
		if err != nil {
			return nil, err
		}
		return bsoncore.NewDocumentBuilder().AppendInt64("size", size).AppendDouble("ok", 1).Build(), nil
	}
	allow := func(u storage.PushUpdate) error {
		if u.Branch != "" {
			return r.checkBranchWrite(r.c.currentAuth(), r.db, u.Branch)
		}
		return nil
	}
	var hdr storage.BundleHeader
	var moved []storage.RefUpdate
	if upload != "" {
		hdr, moved, err = e.RestoreBundleUpload(r.ctx, r.db, upload, allow)
	} else {
		hdr, moved, err = e.RestoreBundle(r.ctx, r.db, bytes.NewReader(data), allow)
	}
	if err != nil {
		return nil, err
	}
	r.c.s.log.Info().Str("c", "STORAGE").Str("db", r.db).Str("from", hdr.DB).Int64("chunks", hdr.Chunks).
		Int("refs", len(moved)).Msg("bundle restored")
	b := bsoncore.NewDocumentBuilder().AppendString("database", r.db).AppendString("bundleOf", hdr.DB).
		AppendBoolean("incremental", len(hdr.Base) > 0)
	return transferReply(b, moved, storage.TransferStats{Chunks: uint64(hdr.Chunks), Bytes: uint64(hdr.Bytes)}), nil
}
