package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/dumbodb/dumbodb/storage"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// `dumbodb bundle create|restore`: a thin client of the server's
// dumboBundleCreate and dumboBundleRestore (docs/format/bundle.md).

const bundleUsage = `usage:
  dumbodb bundle create  --uri URL --db NAME [--since EARLIER] FILE
  dumbodb bundle restore --uri URL [--db NAME] FILE
`

// uploadPiece is how much of a bundle one dumboBundleRestore carries.
const uploadPiece = 8 << 20

type bundleFlags struct {
	uri, db, since, file string
}

func parseBundleFlags(verb string, args []string, stderr io.Writer) (*bundleFlags, error) {
	o := &bundleFlags{}
	fs := flag.NewFlagSet("dumbodb bundle "+verb, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.uri, "uri", "mongodb://127.0.0.1:27017/", "the server")
	if verb == "create" {
		fs.StringVar(&o.db, "db", "", "the database to bundle (required)")
		fs.StringVar(&o.since, "since", "", "an earlier bundle: write only what it lacks")
	} else {
		fs.StringVar(&o.db, "db", "", "the database to restore into (default: the one the bundle was made from)")
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() != 1 {
		return nil, fmt.Errorf("name one bundle file\n%s", bundleUsage)
	}
	o.file = fs.Arg(0)
	if verb == "create" && o.db == "" {
		return nil, errors.New("--db is required")
	}
	return o, nil
}

// runBundle is `dumbodb bundle`: it exits 2 on bad usage, 1 when the
// server or the file refused.
func runBundle(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || (args[0] != "create" && args[0] != "restore") {
		fmt.Fprint(stderr, bundleUsage)
		return 2
	}
	o, err := parseBundleFlags(args[0], args[1:], stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "dumbodb bundle %s: %v\n", args[0], err)
		return 2
	}
	client, err := mongo.Connect(options.Client().ApplyURI(o.uri))
	if err == nil {
		defer client.Disconnect(context.Background())
		if args[0] == "create" {
			err = createBundle(context.Background(), client, o, stdout)
		} else {
			err = restoreBundle(context.Background(), client, o, stdout)
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "dumbodb bundle %s: %v\n", args[0], err)
		return 1
	}
	return 0
}

// createBundle writes the database's bundle to o.file, through a
// temporary file renamed into place once complete.
func createBundle(ctx context.Context, client *mongo.Client, o *bundleFlags, stdout io.Writer) error {
	cmd := bson.D{{Key: "dumboBundleCreate", Value: 1}}
	if o.since != "" {
		hdr, err := readBundleFileHeader(o.since)
		if err != nil {
			return err
		}
		cmd = append(cmd, bson.E{Key: "since", Value: hdr.RefAddrs()})
	}
	cur, err := client.Database(o.db).RunCommandCursor(ctx, cmd)
	if err != nil {
		return err
	}
	defer cur.Close(ctx)
	tmp, err := os.CreateTemp(filepath.Dir(o.file), ".bundle-")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	var piece struct {
		Data []byte `bson:"data"`
	}
	for cur.Next(ctx) {
		if err := cur.Decode(&piece); err != nil {
			return err
		}
		if _, err := tmp.Write(piece.Data); err != nil {
			return err
		}
	}
	if err := cur.Err(); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), o.file); err != nil {
		return err
	}
	hdr, err := readBundleFileHeader(o.file)
	if err != nil {
		return err
	}
	kind := "full"
	if len(hdr.Base) > 0 {
		kind = "incremental"
	}
	fmt.Fprintf(stdout, "%s: %s bundle of %s, %d refs, %d chunks, %d bytes\n", o.file, kind, hdr.DB, len(hdr.Refs), hdr.Chunks, hdr.Bytes)
	return nil
}

func readBundleFileHeader(path string) (storage.BundleHeader, error) {
	f, err := os.Open(path)
	if err != nil {
		return storage.BundleHeader{}, err
	}
	defer f.Close()
	hdr, err := storage.ReadBundleHeader(f)
	if err != nil {
		return hdr, fmt.Errorf("%s: %w", path, err)
	}
	return hdr, nil
}

// restoreBundle sends o.file in pieces and has the server restore it.
func restoreBundle(ctx context.Context, client *mongo.Client, o *bundleFlags, stdout io.Writer) error {
	hdr, err := readBundleFileHeader(o.file)
	if err != nil {
		return err
	}
	if o.db == "" {
		o.db = hdr.DB
	}
	f, err := os.Open(o.file)
	if err != nil {
		return err
	}
	defer f.Close()
	var idBytes [16]byte
	rand.Read(idBytes[:])
	id := hex.EncodeToString(idBytes[:])
	db := client.Database(o.db)
	buf := make([]byte, uploadPiece)
	for offset := int64(0); ; {
		n, err := io.ReadFull(f, buf)
		if n > 0 {
			cmd := bson.D{{Key: "dumboBundleRestore", Value: 1}, {Key: "upload", Value: id},
				{Key: "offset", Value: offset}, {Key: "data", Value: bson.Binary{Data: buf[:n]}}}
			if err := db.RunCommand(ctx, cmd).Err(); err != nil {
				return err
			}
			offset += int64(n)
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			return err
		}
	}
	var res struct {
		Updated []struct {
			Ref string `bson:"ref"`
		} `bson:"updated"`
	}
	cmd := bson.D{{Key: "dumboBundleRestore", Value: 1}, {Key: "upload", Value: id}, {Key: "finish", Value: true}}
	if err := db.RunCommand(ctx, cmd).Decode(&res); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "restored %s into %s: %d refs moved\n", o.file, o.db, len(res.Updated))
	return nil
}
