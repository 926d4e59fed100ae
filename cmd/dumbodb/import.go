package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/schollz/progressbar/v3"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"golang.org/x/term"
)

// importFlags are `dumbodb import`'s, spelled as mongoimport spells them.
type importFlags struct {
	uri, db, coll, file, kind, mode string
	fields, upsertFields, commit    string
	dataDir                         string
	headerLine, columnsHaveTypes    bool
	drop, stopOnError, bulk         bool
	batchSize                       int
}

func parseImportFlags(args []string, stderr io.Writer) (*importFlags, error) {
	o := &importFlags{}
	fs := flag.NewFlagSet("dumbodb import", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.uri, "uri", "mongodb://127.0.0.1:27017/", "the server to import into")
	fs.StringVar(&o.db, "db", "", "the database, or db@branch (required)")
	fs.StringVar(&o.coll, "collection", "", "the collection (required)")
	fs.StringVar(&o.file, "file", "", "the input file (default: standard input)")
	fs.StringVar(&o.kind, "type", "json", "json (an array or one document per line, Extended JSON v2), csv or tsv")
	fs.StringVar(&o.mode, "mode", "insert", "insert, upsert (replace the document with the same key) or merge (set its fields)")
	fs.StringVar(&o.fields, "fields", "", "csv and tsv: the field names, comma-separated")
	fs.StringVar(&o.upsertFields, "upsertFields", "", "upsert and merge: the fields that find the document (default _id)")
	fs.StringVar(&o.commit, "commit", "", "commit the import with this message (dumboCommit)")
	fs.BoolVar(&o.headerLine, "headerline", false, "csv and tsv: the first line names the fields")
	fs.BoolVar(&o.columnsHaveTypes, "columnsHaveTypes", false, "csv and tsv: fields are named field.type() (string, int32, int64, double, decimal, boolean, binary(enc), date(layout), date_go, date_ms, date_oracle, auto)")
	fs.BoolVar(&o.drop, "drop", false, "drop the collection first")
	fs.BoolVar(&o.stopOnError, "stopOnError", false, "stop at the first bad record or failed write")
	fs.IntVar(&o.batchSize, "batchSize", 1000, "documents per write")
	fs.BoolVar(&o.bulk, "bulk", false, "load through the server's bulk path (dumboBulkLoad), insert mode only")
	fs.StringVar(&o.dataDir, "data-dir", "", "load into this stopped server's data directory in this process, insert mode only")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	switch {
	case (o.bulk || o.dataDir != "") && o.mode != "insert":
		return nil, fmt.Errorf("--bulk and --data-dir load in insert mode only, not %q", o.mode)
	case o.bulk && o.dataDir != "":
		return nil, errors.New("--bulk goes through a server and --data-dir around one: choose one")
	case o.db == "" || o.coll == "":
		return nil, errors.New("--db and --collection are required")
	case o.mode != "insert" && o.mode != "upsert" && o.mode != "merge":
		return nil, fmt.Errorf("--mode must be insert, upsert or merge, not %q", o.mode)
	case o.batchSize < 1:
		return nil, errors.New("--batchSize must be at least 1")
	}
	return o, nil
}

// runImport is `dumbodb import`: it reads documents from a file or
// standard input and writes them to a collection through the wire
// protocol, reporting each bad record by its line; it exits 1 when any
// record or write failed.
func runImport(args []string, stdout, stderr io.Writer) int {
	o, err := parseImportFlags(args, stderr)
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(stderr, "dumbodb import: %v\n", err)
			return 2
		}
		return 0
	}
	in, size, err := openInput(o.file)
	if err != nil {
		fmt.Fprintf(stderr, "dumbodb import: %v\n", err)
		return 1
	}
	defer in.Close()
	rd, err := newReader(withProgress(in, size, stderr), o.kind, o)
	if err != nil {
		fmt.Fprintf(stderr, "dumbodb import: %v\n", err)
		return 1
	}
	var done, failed int64
	if o.dataDir != "" {
		done, failed, err = importIntoDir(o, rd, stderr)
	} else {
		done, failed, err = importThroughServer(o, rd, stderr)
	}
	fmt.Fprintf(stdout, "%d document(s) imported, %d failed\n", done, failed)
	if err != nil {
		fmt.Fprintf(stderr, "dumbodb import: %v\n", err)
		return 1
	}
	if failed > 0 {
		return 1
	}
	return 0
}

// importThroughServer imports through the wire protocol, in batches of
// writes or (--bulk) through dumboBulkLoad, then commits when asked.
func importThroughServer(o *importFlags, rd reader, stderr io.Writer) (done, failed int64, err error) {
	imp, err := newImporter(o, stderr)
	if err != nil {
		return 0, 0, err
	}
	defer imp.client.Disconnect(context.Background())
	if o.bulk {
		err = importBulk(imp, rd)
	} else {
		err = imp.run(rd)
	}
	if err == nil && o.commit != "" {
		err = imp.client.Database(o.db).RunCommand(context.Background(),
			bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: o.commit}}).Err()
	}
	return imp.done, imp.failed, err
}

func openInput(file string) (io.ReadCloser, int64, error) {
	if file == "" {
		return io.NopCloser(os.Stdin), -1, nil
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, 0, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, st.Size(), nil
}

// withProgress shows a progress bar of the input read, with its rate and
// time left, when standard error is a terminal.
func withProgress(in io.Reader, size int64, stderr io.Writer) io.Reader {
	f, ok := stderr.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return in
	}
	bar := progressbar.DefaultBytes(size, "importing")
	r := progressbar.NewReader(in, bar)
	return &r
}

// importer writes records in batches.
type importer struct {
	o            *importFlags
	client       *mongo.Client
	coll         *mongo.Collection
	stderr       io.Writer
	done, failed int64
	keys         []string // upsert and merge: the fields that find a document
}

func newImporter(o *importFlags, stderr io.Writer) (*importer, error) {
	client, err := mongo.Connect(options.Client().ApplyURI(o.uri))
	if err != nil {
		return nil, err
	}
	imp := &importer{o: o, client: client, coll: client.Database(o.db).Collection(o.coll), stderr: stderr,
		keys: splitFields(o.upsertFields)}
	if len(imp.keys) == 0 {
		imp.keys = []string{"_id"}
	}
	if o.drop {
		if err := imp.coll.Drop(context.Background()); err != nil {
			client.Disconnect(context.Background())
			return nil, err
		}
	}
	return imp, nil
}

// run imports every record in batches of writes.
func (imp *importer) run(rd reader) error {
	var batch []record
	for {
		rec, ok := rd.next()
		if !ok {
			break
		}
		if rec.err != nil {
			imp.bad(rec.line, rec.err)
			if imp.o.stopOnError { // what came before the bad record is written
				return errors.Join(imp.write(batch), fmt.Errorf("stopped at line %d", rec.line))
			}
			continue
		}
		if batch = append(batch, rec); len(batch) == imp.o.batchSize {
			if err := imp.write(batch); err != nil {
				return err
			}
			batch = batch[:0]
		}
	}
	return imp.write(batch)
}

func (imp *importer) bad(line int, err error) {
	imp.failed++
	fmt.Fprintf(imp.stderr, "line %d: %v\n", line, err)
}

// write sends one batch; a failed write is reported by its record's line.
func (imp *importer) write(batch []record) error {
	if len(batch) == 0 {
		return nil
	}
	models := make([]mongo.WriteModel, len(batch))
	for i, rec := range batch {
		models[i] = imp.model(rec.doc)
	}
	res, err := imp.coll.BulkWrite(context.Background(), models, options.BulkWrite().SetOrdered(imp.o.stopOnError))
	if res != nil {
		imp.done += res.InsertedCount + res.UpsertedCount + res.MatchedCount
	}
	var bwe mongo.BulkWriteException
	if !errors.As(err, &bwe) {
		return err
	}
	for _, we := range bwe.WriteErrors {
		imp.bad(batch[we.Index].line, errors.New(we.Message))
	}
	if imp.o.stopOnError && len(bwe.WriteErrors) > 0 {
		return fmt.Errorf("stopped at line %d", batch[bwe.WriteErrors[0].Index].line)
	}
	return nil
}

// model is the write of one document in the import's mode.
func (imp *importer) model(doc bson.Raw) mongo.WriteModel {
	if imp.o.mode == "insert" {
		return mongo.NewInsertOneModel().SetDocument(doc)
	}
	filter := bson.D{}
	for _, k := range imp.keys {
		if v, err := doc.LookupErr(strings.Split(k, ".")...); err == nil {
			filter = append(filter, bson.E{Key: k, Value: v})
		}
	}
	if imp.o.mode == "upsert" {
		return mongo.NewReplaceOneModel().SetFilter(filter).SetReplacement(doc).SetUpsert(true)
	}
	return mongo.NewUpdateOneModel().SetFilter(filter).SetUpdate(bson.D{{Key: "$set", Value: doc}}).SetUpsert(true)
}
