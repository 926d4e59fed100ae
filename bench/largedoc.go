package bench

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// The LargeDoc family uses the workload of Dolt's JSON study:
// von Neumann ordinals, doc(0) = {l: 0} and doc(n+1) = doc(n) with field
// k<n> set to doc(n) and l set to n+1, so that
//
//	doc(n) = {l: n, k0: doc(0), k1: doc(1), ..., k<n-1>: doc(n-1)}
//
// and sizes double with n, from 12 bytes to 8 MiB (doc(20) is 1 KB over
// the 16 MiB BSON limit). Each measured size fills a collection of the
// same total size: documents {_id: i, l: i, k0: ..., k<n-1>: ...}, whose
// top-level l numbers them (0..count-1) so that filters select and sorts
// order; everything below it is the ordinal.
//
// DumboDB keeps acknowledged writes in memory over its prolly trees until
// a checkpoint (every 60 s, or before a version-control operation). So
// that reads measure the trees and writes include building them, DumboDB
// targets commit (dumboCommit checkpoints) after seeding, untimed, and at
// the end of each timed Import and Copy. FerretDB writes to SQLite at once.

// maxBSON is MongoDB's document size limit.
const maxBSON = 16 << 20

// largeDocOps are the timed operations, each over the whole collection.
var largeDocOps = []struct {
	name  string
	setup func(c *vnColl) func(context.Context, *Env) (*Workload, error)
}{
	{"Export", vnExport}, {"Import", vnImport}, {"Copy", vnCopy},
	{"Extract", vnExtract}, {"Filter", vnFilter}, {"Sort", vnSort},
}

// largeDocPlan returns the bytes per collection, the ordinals measured
// and the rounds of each benchmark: five sizes from 261 B to 64 KB, then
// every doubling up to 8 MB, in 8 MiB collections, two rounds; --quick
// keeps 4 KB, 64 KB, 256 KB and 1 MB in 1 MiB collections, one round, so
// that the family takes about two minutes with FerretDB, which spends one
// to five seconds per MiB of ordinals on each operation.
func largeDocPlan(quick bool) (total int, orders []int, rounds int) {
	if quick {
		return 1 << 20, []int{8, 12, 14, 16}, 1
	}
	top := maxOrder()
	orders = []int{4, 6, 8, 10, 12}
	for n := 13; n <= top; n++ {
		orders = append(orders, n)
	}
	return vnSize(top), orders, longRounds
}

// growthOrder is the ~1 MB document of LargeDoc/StorageGrowth.
const (
	growthOrder   = 16
	growthCommits = 100
)

func largeDocBenchmarks(cfg *Config) []Benchmark {
	total, orders, rounds := largeDocPlan(cfg.Quick)
	var bs []Benchmark
	for _, op := range largeDocOps {
		for _, n := range orders {
			c := newVNColl(n, total)
			bs = append(bs, Benchmark{Name: fmt.Sprintf("LargeDoc/%s/%s", op.name, sizeLabel(c.size)),
				Group: GroupLargeDoc, Unit: "op", Long: true, Rounds: rounds, Setup: op.setup(c)})
		}
	}
	return append(bs,
		Benchmark{Name: "LargeDoc/StorageGrowth/" + sizeLabel(vnSize(growthOrder)),
			Group: GroupLargeDoc, Unit: "B/commit", DumboOnly: true, Quantity: true, Setup: vnStorageGrowth(growthDoc)},
		Benchmark{Name: "LargeDoc/StorageGrowth/" + sizeLabel(randomOrdinalSize(growthRandomOrder)+9) + "/RandomLeaves",
			Group: GroupLargeDoc, Unit: "B/commit", DumboOnly: true, Quantity: true, Setup: vnStorageGrowth(growthRandomDoc)})
}

// growthDoc is the ~1 MB ordinal of LargeDoc/StorageGrowth, _id 1.
func growthDoc() bson.Raw { return vnDoc(ordinals(growthOrder), 1, growthOrder) }

// growthRandomOrder is the order of the RandomLeaves variant: its
// sub-documents carry 16 random bytes each, which makes it ~1.25 MB.
const growthRandomOrder = 15

// randomOrdinalSize is the size of a RandomLeaves ordinal of order n
// without an _id: each sub-document has r (24 bytes) besides l.
func randomOrdinalSize(n int) int {
	s := 12 + 24
	for i := range n {
		s += 2 + len(fmt.Sprint(i)) + 1 + randomOrdinalSize(i)
	}
	return s
}

// growthRandomDoc is the ordinal of order growthRandomOrder in which every
// sub-document (each copy of each doc(i)) also holds r: 16 random bytes,
// so that storage that compresses (Dolt's journal stores chunks with
// snappy; a plain ordinal shrinks about tenfold) cannot hide a rewrite.
func growthRandomDoc() bson.Raw {
	rng := rand.New(rand.NewPCG(9, 9))
	var build func(n int, id int32) []byte
	build = func(n int, id int32) []byte {
		idx, b := bsoncore.AppendDocumentStart(nil)
		if id >= 0 {
			b = bsoncore.AppendInt32Element(b, "_id", id)
		}
		b = bsoncore.AppendInt32Element(b, "l", int32(n))
		var r [16]byte
		for i := range r {
			r[i] = byte(rng.Uint32())
		}
		b = bsoncore.AppendBinaryElement(b, "r", 0, r[:])
		for i := range n {
			b = bsoncore.AppendDocumentElement(b, fmt.Sprintf("k%d", i), build(i, -1))
		}
		b, _ = bsoncore.AppendDocumentEnd(b, idx)
		return b
	}
	return bson.Raw(build(growthRandomOrder, 1))
}

// ordinalSize is the BSON size of doc(n), without an _id.
func ordinalSize(n int) int {
	s := 12 // {l: int32}
	for i := range n {
		s += 1 + len(fmt.Sprintf("k%d", i)) + 1 + s
	}
	return s
}

// vnSize is the size of a collection's document of order n: doc(n) with
// an int32 _id (9 bytes).
func vnSize(n int) int { return ordinalSize(n) + 9 }

// maxOrder is the largest n whose document fits under the BSON limit.
func maxOrder() int {
	n := 0
	for vnSize(n+1) <= maxBSON {
		n++
	}
	return n
}

// ordinals returns doc(0) .. doc(n-1).
func ordinals(n int) [][]byte {
	docs := make([][]byte, 0, n)
	for range n {
		docs = append(docs, vnDoc(docs, -1, int32(len(docs))))
	}
	return docs
}

// vnDoc returns {_id: id, l: l, k0: subs[0], ...}; a negative id leaves
// _id out, so vnDoc(ordinals(n), -1, n) is doc(n).
func vnDoc(subs [][]byte, id, l int32) bson.Raw {
	size := 12
	if id >= 0 {
		size += 9
	}
	for i, s := range subs {
		size += 2 + len(fmt.Sprint(i)) + 1 + len(s)
	}
	idx, b := bsoncore.AppendDocumentStart(make([]byte, 0, size))
	if id >= 0 {
		b = bsoncore.AppendInt32Element(b, "_id", id)
	}
	b = bsoncore.AppendInt32Element(b, "l", l)
	for i, s := range subs {
		b = bsoncore.AppendDocumentElement(b, fmt.Sprintf("k%d", i), s)
	}
	b, _ = bsoncore.AppendDocumentEnd(b, idx)
	return bson.Raw(b)
}

// sizeLabel names a size by its nearest power-of-1024 unit: 252B, 4KB,
// 256KB, 1MB, 8MB.
func sizeLabel(bytes int) string {
	switch {
	case bytes < 1000:
		return fmt.Sprintf("%dB", bytes)
	case bytes < 1000<<10:
		return fmt.Sprintf("%dKB", int(math.Round(float64(bytes)/(1<<10))))
	default:
		return fmt.Sprintf("%dMB", int(math.Round(float64(bytes)/(1<<20))))
	}
}

// vnColl is one size's collection: count documents of order n.
type vnColl struct {
	n, count, size int
}

func newVNColl(n, total int) *vnColl {
	size := vnSize(n)
	return &vnColl{n: n, count: max(1, total/size), size: size}
}

// docs builds the collection's documents (per Setup, so that no target's
// workload keeps another's memory alive).
func (c *vnColl) docs() []any {
	subs := ordinals(c.n)
	docs := make([]any, c.count)
	for i := range docs {
		docs[i] = vnDoc(subs, int32(i), int32(i))
	}
	return docs
}

// extractPath is the field Extract projects: the l of the last top-level
// ordinal, whose value is n-1 in every document (l itself for n = 0).
func (c *vnColl) extractPath() (string, int32) {
	if c.n == 0 {
		return "l", -1
	}
	return fmt.Sprintf("k%d.l", c.n-1), int32(c.n - 1)
}

// seed inserts the collection's documents untimed, and on DumboDB
// commits them so that reads come from its trees.
func (c *vnColl) seed(ctx context.Context, e *Env) error {
	if err := insertAll(ctx, e.Coll, c.docs()); err != nil {
		return fmt.Errorf("seed %d documents of %d bytes: %w", c.count, c.size, err)
	}
	return settle(ctx, e)
}

// settle commits on DumboDB targets (a no-op elsewhere): the commit
// checkpoints, writing the acknowledged changes into the prolly trees.
// Nothing to commit, or no database yet (before the first Import), is
// nothing to settle.
func settle(ctx context.Context, e *Env) error {
	if !e.Dumbo {
		return nil
	}
	_, err := vcCmd(ctx, e, kvs("dumboCommit", 1, "message", "dumbobench LargeDoc"))
	var se mongo.ServerError
	if err != nil && !(errors.As(err, &se) && (se.HasErrorCode(nothingToCommit) || se.HasErrorCode(namespaceNotFound))) {
		return fmt.Errorf("dumboCommit: %w", err)
	}
	return nil
}

// Error codes settle tolerates.
const (
	namespaceNotFound = 26
	nothingToCommit   = 20003 // DumboDB's NothingToCommit
)

func insertAll(ctx context.Context, coll *mongo.Collection, docs []any) error {
	res, err := coll.InsertMany(ctx, docs)
	if err != nil {
		return err
	}
	return expectCount("insertMany", len(res.InsertedIDs), len(docs))
}

// each runs a find and calls f on every document it returns, then checks
// their number.
func each(ctx context.Context, coll *mongo.Collection, filter any, opts *options.FindOptionsBuilder, want int, f func(bson.Raw) error) error {
	cur, err := coll.Find(ctx, filter, opts.SetBatchSize(1000))
	if err != nil {
		return err
	}
	defer cur.Close(ctx)
	got := 0
	for cur.Next(ctx) {
		got++
		if err := f(cur.Current); err != nil {
			return err
		}
	}
	if err := cur.Err(); err != nil {
		return err
	}
	return expectCount("find", got, want)
}

// topL reads a document's top-level l.
func topL(doc bson.Raw) (int32, error) {
	l, ok := doc.Lookup("l").Int32OK()
	if !ok {
		return 0, fmt.Errorf("document without an int32 l: %.100s", doc)
	}
	return l, nil
}

// vnExport reads every document whole.
func vnExport(c *vnColl) func(context.Context, *Env) (*Workload, error) {
	return func(ctx context.Context, e *Env) (*Workload, error) {
		if err := c.seed(ctx, e); err != nil {
			return nil, err
		}
		return &Workload{Call: func(ctx context.Context, _ int64) error {
			return each(ctx, e.Coll, bson.D{}, options.Find(), c.count, func(doc bson.Raw) error {
				if len(doc) != c.size {
					return fmt.Errorf("export: a document of %d bytes, want %d", len(doc), c.size)
				}
				return nil
			})
		}}, nil
	}
}

// vnImport inserts every document into an empty collection (dropped
// untimed before each call) and settles them.
func vnImport(c *vnColl) func(context.Context, *Env) (*Workload, error) {
	return func(_ context.Context, e *Env) (*Workload, error) {
		docs := c.docs()
		return &Workload{
			Prepare: func(ctx context.Context, _ int64) error {
				if err := e.Coll.Drop(ctx); err != nil {
					return err
				}
				return settle(ctx, e)
			},
			Call: func(ctx context.Context, _ int64) error {
				if err := insertAll(ctx, e.Coll, docs); err != nil {
					return err
				}
				return settle(ctx, e)
			},
		}, nil
	}
}

// vnCopy reads every document and inserts a copy with l changed into a
// second collection (emptied untimed before each call), then settles: a
// client-side copy, since FerretDB v1.24.2 has neither $out nor $merge.
func vnCopy(c *vnColl) func(context.Context, *Env) (*Workload, error) {
	return func(ctx context.Context, e *Env) (*Workload, error) {
		if err := c.seed(ctx, e); err != nil {
			return nil, err
		}
		copies := e.DB.Collection(e.Coll.Name() + "_copy")
		return &Workload{
			Prepare: func(ctx context.Context, _ int64) error {
				if err := copies.Drop(ctx); err != nil {
					return err
				}
				return settle(ctx, e)
			},
			Call: func(ctx context.Context, _ int64) error {
				docs := make([]any, 0, c.count)
				err := each(ctx, e.Coll, bson.D{}, options.Find(), c.count, func(doc bson.Raw) error {
					l, err := topL(doc)
					if err != nil {
						return err
					}
					docs = append(docs, withL(doc, l+int32(c.count)))
					return nil
				})
				if err != nil {
					return err
				}
				if err := insertAll(ctx, copies, docs); err != nil {
					return err
				}
				return settle(ctx, e)
			},
		}, nil
	}
}

// withL returns a copy of doc with its top-level int32 l set to l.
func withL(doc bson.Raw, l int32) bson.Raw {
	idx, b := bsoncore.AppendDocumentStart(make([]byte, 0, len(doc)))
	elems, _ := bsoncore.Document(doc).Elements()
	for _, el := range elems {
		if el.Key() == "l" {
			b = bsoncore.AppendInt32Element(b, "l", l)
		} else {
			b = append(b, el...)
		}
	}
	b, _ = bsoncore.AppendDocumentEnd(b, idx)
	return bson.Raw(b)
}

// vnExtract projects one nested field of every document.
func vnExtract(c *vnColl) func(context.Context, *Env) (*Workload, error) {
	return func(ctx context.Context, e *Env) (*Workload, error) {
		if err := c.seed(ctx, e); err != nil {
			return nil, err
		}
		path, want := c.extractPath()
		proj := bson.D{{Key: "_id", Value: 0}, {Key: path, Value: 1}}
		keys := strings.Split(path, ".")
		return &Workload{Call: func(ctx context.Context, _ int64) error {
			return each(ctx, e.Coll, bson.D{}, options.Find().SetProjection(proj), c.count, func(doc bson.Raw) error {
				v, ok := doc.Lookup(keys...).Int32OK()
				if !ok || (want >= 0 && v != want) || len(doc) > 64 {
					return fmt.Errorf("extract %s: got %s", path, doc)
				}
				return nil
			})
		}}, nil
	}
}

// vnFilter selects the upper half of the documents by l, returning their
// _id and l only (so that it times the filter, not the transfer).
func vnFilter(c *vnColl) func(context.Context, *Env) (*Workload, error) {
	return func(ctx context.Context, e *Env) (*Workload, error) {
		if err := c.seed(ctx, e); err != nil {
			return nil, err
		}
		from := int32(c.count / 2)
		filter := bson.D{{Key: "l", Value: bson.D{{Key: "$gte", Value: from}}}}
		opts := options.Find().SetProjection(bson.D{{Key: "l", Value: 1}})
		return &Workload{Call: func(ctx context.Context, _ int64) error {
			return each(ctx, e.Coll, filter, opts, c.count-int(from), func(doc bson.Raw) error {
				if l, err := topL(doc); err != nil || l < from || len(doc) > 64 {
					return fmt.Errorf("filter l >= %d: got %.100s", from, doc)
				}
				return nil
			})
		}}, nil
	}
}

// vnSort returns every document whole, by l descending.
func vnSort(c *vnColl) func(context.Context, *Env) (*Workload, error) {
	return func(ctx context.Context, e *Env) (*Workload, error) {
		if err := c.seed(ctx, e); err != nil {
			return nil, err
		}
		opts := options.Find().SetSort(bson.D{{Key: "l", Value: -1}})
		return &Workload{Call: func(ctx context.Context, _ int64) error {
			next := int32(c.count - 1)
			return each(ctx, e.Coll, bson.D{}, opts, c.count, func(doc bson.Raw) error {
				l, err := topL(doc)
				if err != nil {
					return err
				}
				if l != next || len(doc) != c.size {
					return fmt.Errorf("sort: l %d of %d bytes, want l %d of %d bytes", l, len(doc), next, c.size)
				}
				next--
				return nil
			})
		}}, nil
	}
}

// vnStorageGrowth measures the bytes each commit adds to the data
// directory when it changes one field of a ~1 MB document made by mk
// (_id 1, an ordinal of order at least 3): 100 edits in turn set the
// top-level l, grow a string near the front (k1.s), append to an array in
// the middle ($push to k<n-1>.k0.a) and $inc the l of ordinals spread
// through the document, each followed by dumboCommit.
func vnStorageGrowth(mk func() bson.Raw) func(context.Context, *Env) (*Workload, error) {
	return func(ctx context.Context, e *Env) (*Workload, error) {
		if e.DataDir == "" {
			return nil, errNotApplicable{"data directory unknown (--start, or --data-dir NAME=DIR)"}
		}
		if _, err := vcCmd(ctx, e, kvs("dumboLog", 1, "limit", 1)); err != nil && !strings.Contains(err.Error(), "does not exist") {
			return nil, unsupported("dumboLog", err)
		}
		return &Workload{Measure: func(ctx context.Context) (float64, error) { return storageGrowth(ctx, e, mk()) }}, nil
	}
}

func storageGrowth(ctx context.Context, e *Env, doc bson.Raw) (float64, error) {
	n, ok := doc.Lookup("l").Int32OK()
	if !ok || n < 3 {
		return 0, fmt.Errorf("storage growth needs an ordinal of order 3 or more, not %.100s", doc)
	}
	id := bson.D{{Key: "_id", Value: int32(1)}}
	if _, err := e.Coll.InsertOne(ctx, doc); err != nil {
		return 0, err
	}
	if _, err := vcCmd(ctx, e, commitCmd(0)); err != nil {
		return 0, err
	}
	before, err := dirBytes(e.DataDir)
	if err != nil {
		return 0, err
	}
	for c := 1; c <= growthCommits; c++ {
		if err := expectMatched(e.Coll.UpdateOne(ctx, id, growthEdit(c, int(n)))); err != nil {
			return 0, fmt.Errorf("edit %d: %w", c, err)
		}
		if _, err := vcCmd(ctx, e, commitCmd(int64(c))); err != nil {
			return 0, fmt.Errorf("commit %d: %w", c, err)
		}
	}
	after, err := dirBytes(e.DataDir)
	if err != nil {
		return 0, err
	}
	return float64(after-before) / growthCommits, nil
}

// growthEdit is the c-th one-field change of LargeDoc/StorageGrowth on a
// document of order n: half of them change a length.
func growthEdit(c, n int) bson.D {
	switch c % 4 {
	case 0:
		return kvs("$set", kvs("l", int32(c)))
	case 1:
		return kvs("$set", kvs("k1.s", strings.Repeat("s", c)))
	case 2:
		return kvs("$push", kvs(fmt.Sprintf("k%d.k0.a", n-1), int32(c)))
	default:
		return kvs("$inc", kvs(fmt.Sprintf("k%d.l", (c/4)%n), int32(1)))
	}
}

// dirBytes sums the sizes of the files under dir, like du --apparent-size,
// leaving out write-ahead logs (directories named wal): their segments are
// preallocated and recycled, so they hold no history.
func dirBytes(dir string) (int64, error) {
	var total int64
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) && path != dir {
			return nil // removed while we walk (a temporary file)
		}
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == "wal" {
				return filepath.SkipDir
			}
			return nil
		}
		info, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if info.Mode().IsRegular() {
			total += info.Size()
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("size of %s: %w", dir, err)
	}
	return total, nil
}
