package server_test

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dumbodb/dumbodb/query"
	"github.com/dumbodb/dumbodb/server"
	"github.com/dumbodb/dumbodb/storage"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"golang.org/x/sys/unix"
)

// BenchmarkFloorFdatasync256 is the disk floor of a durable write: append
// 256 bytes to a preallocated, zero-filled file and fdatasync.
func BenchmarkFloorFdatasync256(b *testing.B) {
	f, err := os.Create(filepath.Join(b.TempDir(), "floor"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	size := int64(b.N+1) * 256
	zeros := make([]byte, 1<<20)
	for off := int64(0); off < size; off += int64(len(zeros)) {
		f.WriteAt(zeros, off)
	}
	f.Sync()
	rec := make([]byte, 256)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f.WriteAt(rec, int64(i)*256)
		if err := unix.Fdatasync(int(f.Fd())); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFloorPing is the network floor: one round trip through the driver.
func BenchmarkFloorPing(b *testing.B) {
	ts := startServer(b)
	c := ts.client()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := c.Ping(ctx, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkInsertOneDurable100B: one client, sequential, default write
// concern (acknowledged after the log sync).
func BenchmarkInsertOneDurable100B(b *testing.B) {
	ts := startServer(b)
	coll := ts.client().Database("bench").Collection("c")
	pad := string(make([]byte, 70))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := coll.InsertOne(ctx, bson.M{"_id": i, "p": pad}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCreateDatabaseByInsert: one client, one insert into a new
// database per iteration (MongoDB creates a database at its first write):
// what creating a database costs end to end. BackToBack creates one
// database after the other; Paced pauses 20 ms between them (outside the
// timer), as a client that does other work between creations.
// docs/design/resources.md, "Creating a database", has the figures.
func BenchmarkCreateDatabaseByInsert(b *testing.B) {
	b.Run("BackToBack", func(b *testing.B) { benchCreateByInsert(b, 0) })
	b.Run("Paced", func(b *testing.B) { benchCreateByInsert(b, 20*time.Millisecond) })
}

func benchCreateByInsert(b *testing.B, pause time.Duration) {
	ts := startServer(b)
	c := ts.client()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if pause > 0 {
			b.StopTimer()
			time.Sleep(pause)
			b.StartTimer()
		}
		coll := c.Database(fmt.Sprint("db", i)).Collection("c")
		if _, err := coll.InsertOne(ctx, bson.M{"_id": i, "v": "a few bytes"}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkInsertOneDurable64Clients: 64 concurrent clients; compare its
// ops/s (1e9 / ns/op) with the one-client figure.
func BenchmarkInsertOneDurable64Clients(b *testing.B) {
	ts := startServer(b)
	coll := ts.client().Database("bench").Collection("c")
	pad := string(make([]byte, 70))
	var next atomic.Int64
	b.SetParallelism(64 / runtime.GOMAXPROCS(0))
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := coll.InsertOne(ctx, bson.M{"_id": next.Add(1), "p": pad}); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkLoad100k loads 100,000 documents of 100 bytes in insertMany
// batches of 1,000, then reports the data directory size after a clean
// shutdown (which checkpoints) as a multiple of the raw BSON size.
func BenchmarkLoad100k(b *testing.B) {
	for i := 0; i < b.N; i++ {
		ts := startServer(b)
		coll := ts.client().Database("bench").Collection("c")
		pad := string(make([]byte, 70))
		var raw int64
		batch := make([]any, 1000)
		for n := 0; n < 100; n++ {
			for j := range batch {
				d := bson.D{{Key: "_id", Value: n*1000 + j}, {Key: "p", Value: pad}}
				bs, _ := bson.Marshal(d)
				raw += int64(len(bs))
				batch[j] = d
			}
			if _, err := coll.InsertMany(ctx, batch); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		ts.stop()
		b.ReportMetric(float64(dirSize(ts.dir))/float64(raw), "disk/raw")
		b.StartTimer()
	}
}

func dirSize(dir string) int64 {
	var total int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if info, err := d.Info(); err == nil {
				total += info.Size()
			}
		}
		return nil
	})
	return total
}

// scanBench seeds 50,000 documents and times one pass over them, with or
// without a filter: matching must not dominate the cost of a scan.
func scanBench(b *testing.B, filter bson.D) {
	ts := startServer(b)
	coll := ts.client().Database("bench").Collection("scan")
	batch := make([]any, 0, 1000)
	for i := 0; i < 50000; i++ {
		batch = append(batch, bson.D{{Key: "_id", Value: i}, {Key: "n", Value: i % 1000},
			{Key: "s", Value: "some text to make the document about a hundred bytes"}, {Key: "f", Value: float64(i)}})
		if len(batch) == cap(batch) {
			if _, err := coll.InsertMany(ctx, batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	d, err := ts.engine.Database(ctx, "bench", false)
	if err != nil {
		b.Fatal(err)
	}
	// Scan data at rest in the prolly tree, as after any checkpoint.
	if err := d.Checkpoint(ctx); err != nil {
		b.Fatal(err)
	}
	raw, _ := bson.Marshal(append(bson.D{}, filter...))
	f, err := query.CompileFilter(raw)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		snap, err := d.BranchSnapshot(ctx, storage.DefaultBranch)
		if err != nil {
			b.Fatal(err)
		}
		it, err := snap.Scan(ctx, "scan")
		if err != nil {
			b.Fatal(err)
		}
		// As a find does: a plain scan copies every document, a filtered
		// one matches in place and copies the matches.
		var keep func(bsoncore.Document) bool
		if len(filter) > 0 {
			keep = f.Match
		}
		matched := 0
		for {
			if _, err := it.NextWhere(ctx, keep); err != nil {
				break
			}
			matched++
		}
		if matched == 0 {
			b.Fatal("nothing matched")
		}
	}
}

// BenchmarkScan50K is a plain full scan of 50,000 documents.
func BenchmarkScan50K(b *testing.B) { scanBench(b, nil) }

// BenchmarkFilterEq50K is the same scan with an equality filter on a
// non-indexed field.
func BenchmarkFilterEq50K(b *testing.B) { scanBench(b, bson.D{{Key: "n", Value: 7}}) }

// BenchmarkFilterRange50K is the same scan with a range filter.
func BenchmarkFilterRange50K(b *testing.B) {
	scanBench(b, bson.D{{Key: "f", Value: bson.D{{Key: "$gte", Value: 1000.0}, {Key: "$lt", Value: 2000.0}}}})
}

// insertBench inserts 100-byte documents, one per request, into a
// collection with the given secondary indexes.
func insertBench(b *testing.B, indexes ...string) {
	ts := startServer(b)
	coll := ts.client().Database("bench").Collection("c")
	for _, f := range indexes {
		if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: f, Value: 1}}}); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		doc := bson.D{{Key: "_id", Value: i}, {Key: "a", Value: i % 97}, {Key: "b", Value: "name" + string(rune('a'+i%26))},
			{Key: "c", Value: float64(i) / 3}, {Key: "p", Value: "padding to one hundred bytes......."}}
		if _, err := coll.InsertOne(ctx, doc); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkInsertNoIndex and BenchmarkInsert3Indexes compare the cost of
// index upkeep on inserts.
func BenchmarkInsertNoIndex(b *testing.B)  { insertBench(b) }
func BenchmarkInsert3Indexes(b *testing.B) { insertBench(b, "a", "b", "c") }

// BenchmarkDistinct10K: distinct of a key with 100 values over 10,000
// documents, from a collection scan and from an index on the key
// (DISTINCT_SCAN skips from each value to the next).
func BenchmarkDistinct10K(b *testing.B) {
	for _, indexed := range []bool{false, true} {
		b.Run(fmt.Sprintf("indexed=%v", indexed), func(b *testing.B) {
			ts := startServer(b)
			coll := ts.client().Database("bench").Collection("d")
			if indexed {
				if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "k", Value: 1}}}); err != nil {
					b.Fatal(err)
				}
			}
			docs := make([]any, 10000)
			for i := range docs {
				docs[i] = bson.D{{Key: "_id", Value: i}, {Key: "k", Value: i % 100}, {Key: "pad", Value: "0123456789012345678901234567890123456789"}}
			}
			if _, err := coll.InsertMany(ctx, docs); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				var vals []any
				if err := coll.Distinct(ctx, "k", bson.D{}).Decode(&vals); err != nil || len(vals) != 100 {
					b.Fatalf("%d values, %v", len(vals), err)
				}
			}
		})
	}
}

// BenchmarkTxnFindOne: a read-only transaction of one find by _id, what a
// transaction adds to BenchmarkFindOneByID.
func BenchmarkTxnFindOne(b *testing.B) {
	ts := startServer(b)
	coll := ts.client().Database("bench").Collection("c")
	coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "v", Value: "x"}})
	sess, err := coll.Database().Client().StartSession()
	if err != nil {
		b.Fatal(err)
	}
	defer sess.EndSession(ctx)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		sess.StartTransaction()
		sc := mongo.NewSessionContext(ctx, sess)
		if err := coll.FindOne(sc, bson.D{{Key: "_id", Value: 1}}).Err(); err != nil {
			b.Fatal(err)
		}
		if err := sess.CommitTransaction(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFindOneByID is the find without a transaction.
func BenchmarkFindOneByID(b *testing.B) {
	ts := startServer(b)
	coll := ts.client().Database("bench").Collection("c")
	coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "v", Value: "x"}})
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: 1}}).Err(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFindOneByIDAuth is BenchmarkFindOneByID logged in, with --auth:
// what checking each command's privileges costs.
func BenchmarkFindOneByIDAuth(b *testing.B) {
	ts := startServer(b, func(c *server.Config) { c.Auth = true })
	mustRunB(b, ts.client().Database("admin"), bson.D{{Key: "createUser", Value: "u"}, {Key: "pwd", Value: "p"}, {Key: "roles", Value: bson.A{"root"}}})
	coll := ts.authClient("u", "p", "admin", "").Database("bench").Collection("c")
	coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "v", Value: "x"}})
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: 1}}).Err(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSCRAMLogin: a new connection that logs in with SCRAM-SHA-256
// (the driver's key derivation included) and pings.
func BenchmarkSCRAMLogin(b *testing.B) {
	ts := startServer(b, func(c *server.Config) { c.Auth = true })
	mustRunB(b, ts.client().Database("admin"), bson.D{{Key: "createUser", Value: "u"}, {Key: "pwd", Value: "p"}, {Key: "roles", Value: bson.A{"root"}}})
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c, err := mongo.Connect(options.Client().ApplyURI(ts.uri()).
			SetAuth(options.Credential{Username: "u", Password: "p", AuthSource: "admin", AuthMechanism: "SCRAM-SHA-256"}))
		if err != nil {
			b.Fatal(err)
		}
		if err := c.Ping(ctx, nil); err != nil {
			b.Fatal(err)
		}
		c.Disconnect(ctx)
	}
}

func mustRunB(b *testing.B, db *mongo.Database, cmd bson.D) {
	b.Helper()
	if err := db.RunCommand(ctx, cmd).Err(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkUpdateOneField1KB and BenchmarkUpdateOneField8MB: a one-field
// $set on one document, durable, of 1 KB and of 8 MB (a path-indexed
// doctree); the goal is the second within 5 x the first (bench/goals.go). The log bytes
// each update writes are reported as walB/op.
func BenchmarkUpdateOneField1KB(b *testing.B) { updateOneFieldBench(b, 1<<10) }
func BenchmarkUpdateOneField8MB(b *testing.B) { updateOneFieldBench(b, 8<<20) }

func updateOneFieldBench(b *testing.B, size int) {
	ts := startServer(b)
	c := ts.client()
	coll := c.Database("bench").Collection("c")
	var fields bson.D
	for i := 0; i*1024 < size; i++ {
		fields = append(fields, bson.E{Key: fmt.Sprintf("f%05d", i), Value: string(make([]byte, 1000))})
	}
	if _, err := coll.InsertOne(ctx, append(bson.D{{Key: "_id", Value: 1}, {Key: "n", Value: 0}}, fields...)); err != nil {
		b.Fatal(err)
	}
	walBefore := storageEngineStat(b, c, "logBytes")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := coll.UpdateOne(ctx, bson.M{"_id": 1}, bson.M{"$set": bson.M{"n": i}}); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(storageEngineStat(b, c, "logBytes")-walBefore)/float64(b.N), "walB/op")
}
