package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/dumbodb/dumbodb/server"
	"github.com/dumbodb/dumbodb/storage"

	"github.com/rs/zerolog"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// The bulk paths of `dumbodb import` (docs/design/bulk-load.md): --bulk
// sends the documents to a running server's dumboBulkLoad, --data-dir
// loads them into a stopped server's directory in this process. Both
// insert only, without the write-ahead log, and build the collection's
// trees in one ordered pass.

// bulkPiece is how much of the documents one dumboBulkLoad carries.
const bulkPiece = 8 << 20

// marshalRecord is a record's document with its _id first (an ObjectId
// when it has none, as a driver adds one).
func marshalRecord(doc bson.Raw) ([]byte, error) {
	if first, err := doc.IndexErr(0); err == nil && first.Key() == "_id" {
		return doc, nil
	}
	elems, err := doc.Elements()
	if err != nil {
		return nil, err
	}
	b := bsoncore.NewDocumentBuilder()
	if id, err := doc.LookupErr("_id"); err == nil {
		b.AppendValue("_id", bsoncore.Value{Type: bsoncore.Type(id.Type), Data: id.Value})
	} else {
		b.AppendObjectID("_id", bson.NewObjectID())
	}
	for _, e := range elems {
		if e.Key() != "_id" {
			v := e.Value()
			b.AppendValue(e.Key(), bsoncore.Value{Type: bsoncore.Type(v.Type), Data: v.Value})
		}
	}
	return b.Build(), nil
}

// lineOf maps a bulk load's document index to its record's line.
type lineOf []int

// report prints a load's refusals by line and returns how many there
// were.
func (lines lineOf) report(stderr io.Writer, refused []storage.BulkRefusal) int64 {
	for _, ref := range refused {
		fmt.Fprintf(stderr, "line %d: %v\n", lines[ref.Index], ref.Err)
	}
	return int64(len(refused))
}

// importIntoDir is --data-dir: the records go straight into the store.
func importIntoDir(o *importFlags, rd reader, stderr io.Writer) (done, failed int64, err error) {
	ctx := context.Background()
	eng, err := storage.Open(o.dataDir, storage.Options{Language: server.StorageLanguage()}, zerolog.Nop())
	if err != nil {
		return 0, 0, err
	}
	defer eng.Close()
	name, branch, _ := strings.Cut(o.db, "@")
	if branch == "" {
		branch = storage.DefaultBranch
	}
	d, err := eng.Database(ctx, name, true)
	if err != nil {
		return 0, 0, err
	}
	if o.drop {
		err := d.WriteBranch(ctx, branch, func(tx *storage.Tx) error {
			if err := tx.DropCollection(o.coll); !errors.Is(err, storage.ErrNamespaceNotFound) {
				return err
			}
			return nil
		})
		if err != nil {
			return 0, 0, err
		}
	}
	var lines lineOf
	stopped := false
	next := func() (bsoncore.Document, error) {
		for !stopped {
			rec, ok := rd.next()
			if !ok {
				break
			}
			if rec.err == nil {
				var raw []byte
				if raw, rec.err = marshalRecord(rec.doc); rec.err == nil {
					lines = append(lines, rec.line)
					return raw, nil
				}
			}
			fmt.Fprintf(stderr, "line %d: %v\n", rec.line, rec.err)
			failed++
			stopped = o.stopOnError
		}
		return nil, io.EOF
	}
	res, err := d.BulkLoad(ctx, branch, o.coll, nil, next, o.stopOnError)
	if err != nil {
		return 0, failed, err
	}
	failed += lines.report(stderr, res.Refused)
	if o.commit != "" && res.Inserted > 0 {
		if _, err := d.Commit(ctx, branch, storage.CommitOptions{Message: o.commit}); err != nil {
			return res.Inserted, failed, err
		}
	}
	return res.Inserted, failed, nil
}

// importBulk is --bulk: the records go to the server in pieces, then one
// dumboBulkLoad loads them.
func importBulk(imp *importer, rd reader) error {
	ctx := context.Background()
	db := imp.client.Database(imp.o.db)
	var idBytes [16]byte
	rand.Read(idBytes[:])
	id := hex.EncodeToString(idBytes[:])
	var lines lineOf
	var buf []byte
	var offset int64
	send := func() error {
		cmd := bson.D{{Key: "dumboBulkLoad", Value: imp.o.coll}, {Key: "upload", Value: id},
			{Key: "offset", Value: offset}, {Key: "data", Value: bson.Binary{Data: buf}}}
		if err := db.RunCommand(ctx, cmd).Err(); err != nil {
			return err
		}
		offset += int64(len(buf))
		buf = buf[:0]
		return nil
	}
	for {
		rec, ok := rd.next()
		if !ok {
			break
		}
		var raw []byte
		if rec.err == nil {
			raw, rec.err = marshalRecord(rec.doc)
		}
		if rec.err != nil {
			imp.bad(rec.line, rec.err)
			if imp.o.stopOnError {
				break
			}
			continue
		}
		lines = append(lines, rec.line)
		if buf = append(buf, raw...); len(buf) >= bulkPiece {
			if err := send(); err != nil {
				return err
			}
		}
	}
	if len(lines) == 0 {
		return nil
	}
	if err := send(); err != nil {
		return err
	}
	return imp.finishBulk(db, id, lines)
}

// finishBulk loads the upload and reports what the server refused.
func (imp *importer) finishBulk(db *mongo.Database, id string, lines lineOf) error {
	var res struct {
		N           int64 `bson:"n"`
		WriteErrors []struct {
			Index  int64  `bson:"index"`
			ErrMsg string `bson:"errmsg"`
		} `bson:"refused"`
		NRefused int64 `bson:"nRefused"`
	}
	cmd := bson.D{{Key: "dumboBulkLoad", Value: imp.o.coll}, {Key: "upload", Value: id},
		{Key: "finish", Value: true}, {Key: "stopOnError", Value: imp.o.stopOnError}}
	if err := db.RunCommand(context.Background(), cmd).Decode(&res); err != nil {
		return err
	}
	imp.done += res.N
	for _, we := range res.WriteErrors {
		imp.bad(lines[we.Index], errors.New(we.ErrMsg))
	}
	imp.failed += res.NRefused - int64(len(res.WriteErrors)) // beyond those listed
	return nil
}
