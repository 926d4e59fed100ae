package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

var ctx = context.Background()

func openEngine(t testing.TB, dir string, opts Options) *Engine {
	t.Helper()
	e, err := Open(dir, opts, zerolog.New(io.Discard))
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// engineDatabase opens an engine on dir and its database "db", made when
// create is set; the caller closes the engine.
func engineDatabase(t testing.TB, dir string, opts Options, create bool) (*Engine, *Database) {
	t.Helper()
	e := openEngine(t, dir, opts)
	d, err := e.Database(ctx, "db", create)
	if err != nil || d == nil {
		t.Fatalf("open database db: %v", err)
	}
	return e, d
}

// openDatabase opens an engine on a fresh temporary directory, closed when
// the test ends, and returns its database "db".
func openDatabase(t testing.TB, opts Options) *Database {
	t.Helper()
	e := openEngine(t, t.TempDir(), opts)
	t.Cleanup(func() { e.Close() })
	d, err := e.Database(ctx, "db", true)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func doc(id int32, v string) bsoncore.Document {
	return bsoncore.NewDocumentBuilder().AppendInt32("_id", id).AppendString("v", v).Build()
}

func idValue(id int32) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, id)}
}

// crashCopy copies a live data directory, as a crash would leave it: the
// log and the Dolt files as they are on disk, with no final checkpoint.
// Files that vanish while copying (a spare log segment being prepared and
// renamed in the background) are skipped, as a crash at that moment would
// leave them half made and unnamed.
func crashCopy(t *testing.T, dir string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "crashed")
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) {
				return nil
			}
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if d.Name() == "mongod.lock" || d.Name() == "LOCK" || strings.HasSuffix(d.Name(), ".tmp") {
			return nil
		}
		data, err := os.ReadFile(path)
		if os.IsNotExist(err) {
			return nil
		}
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
	if err != nil {
		t.Fatalf("copy %s: %v", dir, err)
	}
	return dst
}

// mainSnapshot is a snapshot of d's main branch.
func mainSnapshot(t testing.TB, d *Database) *Snapshot {
	t.Helper()
	snap, err := d.BranchSnapshot(ctx, DefaultBranch)
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

// contents reads a collection of the default branch as id -> value.
func contents(t *testing.T, d *Database, coll string) map[int32]string {
	t.Helper()
	out := map[int32]string{}
	for id, doc := range scanDocs(t, mainSnapshot(t, d), coll) {
		out[id] = doc.Lookup("v").StringValue()
	}
	return out
}

// scanDocs reads a collection whose _ids are int32s as id -> document.
func scanDocs(t testing.TB, snap *Snapshot, coll string) map[int32]bsoncore.Document {
	t.Helper()
	it, err := snap.Scan(ctx, coll)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int32]bsoncore.Document{}
	var last int32 = -1 << 31
	for {
		doc, err := it.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		id := doc.Lookup("_id").Int32()
		if id <= last && len(out) > 0 {
			t.Fatalf("scan out of order: %d after %d", id, last)
		}
		last = id
		out[id] = doc
	}
	return out
}

func TestRecoveryReplaysTheLogAfterACrash(t *testing.T) {
	dir := t.TempDir()
	e := openEngine(t, dir, Options{})
	defer e.Close()
	d, err := e.Database(ctx, "db", true)
	if err != nil {
		t.Fatal(err)
	}
	write := func(fn func(tx *Tx) error) {
		t.Helper()
		if err := d.Write(ctx, fn); err != nil {
			t.Fatal(err)
		}
	}
	write(func(tx *Tx) error {
		if _, err := tx.EnsureCollection(ctx, "c"); err != nil {
			return err
		}
		for i := int32(0); i < 100; i++ {
			if err := tx.Insert(ctx, "c", doc(i, "a")); err != nil {
				return err
			}
		}
		return nil
	})
	if err := d.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	// After the checkpoint: updates, deletes, a new collection, a rename.
	write(func(tx *Tx) error { return tx.Replace(ctx, "c", doc(5, "b")) })
	write(func(tx *Tx) error { return tx.Delete(ctx, "c", idValue(6)) })
	write(func(tx *Tx) error {
		if _, err := tx.CreateCollection(ctx, "tmp", nil); err != nil {
			return err
		}
		if err := tx.Insert(ctx, "tmp", doc(1, "t")); err != nil {
			return err
		}
		return tx.RenameCollection("tmp", "renamed", false)
	})
	want := contents(t, d, "c")
	crashed := crashCopy(t, dir)
	e2 := openEngine(t, crashed, Options{})
	defer e2.Close()
	d2, err := e2.Database(ctx, "db", false)
	if err != nil || d2 == nil {
		t.Fatalf("reopen: %v", err)
	}
	got := contents(t, d2, "c")
	if fmt.Sprint(got) != fmt.Sprint(want) || got[5] != "b" || len(got) != 99 {
		t.Fatalf("recovered %d docs (5=%q)", len(got), got[5])
	}
	if r := contents(t, d2, "renamed"); r[1] != "t" {
		t.Fatalf("renamed collection: %v", r)
	}
	if _, ok := mainSnapshot(t, d2).Collection("tmp"); ok {
		t.Fatal("the rename's source survived")
	}
	n, _ := mainSnapshot(t, d2).Count("c")
	if n != 99 {
		t.Fatalf("count %d", n)
	}
}

// TestRandomOperationsMatchAModel runs random inserts, replaces, deletes,
// checkpoints, clean reopens and crash reopens against a map.
func TestRandomOperationsMatchAModel(t *testing.T) {
	for seed := int64(1); seed <= 3; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runModel(t, seed) })
	}
}

func runModel(t *testing.T, seed int64) {
	rng := rand.New(rand.NewSource(seed))
	dir := t.TempDir()
	opts := Options{CacheBytes: 20 << 10, WALSegmentSize: 16 << 10}
	e := openEngine(t, dir, opts)
	defer func() { e.Close() }()
	d, _ := e.Database(ctx, "db", true)
	model := map[int32]string{}
	d.Write(ctx, func(tx *Tx) error { _, err := tx.EnsureCollection(ctx, "c"); return err })
	for step := 0; step < 400; step++ {
		id := int32(rng.Intn(60))
		v := fmt.Sprintf("v%d-%s", step, string(make([]byte, rng.Intn(200))))
		switch r := rng.Intn(100); {
		case r < 40:
			err := d.Write(ctx, func(tx *Tx) error { return tx.Insert(ctx, "c", doc(id, v)) })
			if _, exists := model[id]; exists != (err == ErrDuplicateKey) {
				t.Fatalf("step %d insert %d: err %v, exists %v", step, id, err, exists)
			}
			if err == nil {
				model[id] = v
			}
		case r < 65:
			if _, exists := model[id]; exists {
				mustWrite(t, d, func(tx *Tx) error { return tx.Replace(ctx, "c", doc(id, v)) })
				model[id] = v
			}
		case r < 85:
			mustWrite(t, d, func(tx *Tx) error { return tx.Delete(ctx, "c", idValue(id)) })
			delete(model, id)
		case r < 90:
			if err := d.Checkpoint(ctx); err != nil {
				t.Fatal(err)
			}
		case r < 95:
			e.Close()
			e = openEngine(t, dir, opts)
			d, _ = e.Database(ctx, "db", false)
		default:
			// The copy is not atomic, as a crash is: the budget's
			// checkpoint, which runs in the background, must not write
			// table files while it is made.
			awaitBudgetCheckpoint(d)
			crashed := crashCopy(t, dir)
			e.Close()
			dir = crashed
			e = openEngine(t, dir, opts)
			d, _ = e.Database(ctx, "db", false)
		}
		if step%25 == 0 || step == 399 {
			checkModel(t, d, model, step)
		}
	}
}

func mustWrite(t testing.TB, d *Database, fn func(tx *Tx) error) {
	t.Helper()
	if err := d.Write(ctx, fn); err != nil {
		t.Fatal(err)
	}
}

func checkModel(t *testing.T, d *Database, model map[int32]string, step int) {
	t.Helper()
	got := contents(t, d, "c")
	if len(got) != len(model) {
		t.Fatalf("step %d: %d docs, model has %d", step, len(got), len(model))
	}
	for id, v := range model {
		if got[id] != v {
			t.Fatalf("step %d: _id %d = %q, want %q", step, id, got[id], v)
		}
		doc, found, err := mainSnapshot(t, d).Get(ctx, "c", idValue(id))
		if err != nil || !found || doc.Lookup("v").StringValue() != v {
			t.Fatalf("step %d: get %d: %v %v", step, id, found, err)
		}
	}
	n, _ := mainSnapshot(t, d).Count("c")
	if n != len(model) {
		t.Fatalf("step %d: count %d, model %d", step, n, len(model))
	}
	ids := make([]int, 0, len(model))
	for id := range model {
		ids = append(ids, int(id))
	}
	sort.Ints(ids)
}

func TestBudgetForcesCheckpointsAndRecyclesTheLog(t *testing.T) {
	dir := t.TempDir()
	e := openEngine(t, dir, Options{CacheBytes: 64 << 10, WALSegmentSize: 32 << 10})
	defer e.Close()
	d, _ := e.Database(ctx, "db", true)
	big := string(make([]byte, 1000))
	for i := int32(0); i < 500; i++ {
		mustWrite(t, d, func(tx *Tx) error {
			if _, err := tx.EnsureCollection(ctx, "c"); err != nil {
				return err
			}
			return tx.Insert(ctx, "c", doc(i, big))
		})
		// The budget's checkpoints fold beside the writers, which wait
		// past it.
		if b := e.editBytes.Load(); b > 64<<10+4096 {
			t.Fatalf("edits hold %d bytes over a 64 KiB budget", b)
		}
	}
	awaitBudgetCheckpoint(d)
	if b := e.editBytes.Load(); b > 64<<10+4096 {
		t.Fatalf("edits hold %d bytes over a 64 KiB budget", b)
	}
	if n := d.wl.SegmentCount(); n > 4 {
		t.Fatalf("%d log segments kept after checkpoints", n)
	}
	if got := contents(t, d, "c"); len(got) != 500 {
		t.Fatalf("%d docs", len(got))
	}
}

// BenchmarkInsertDurable is one writer inserting small documents through
// Database.Write (log append, publish, wait for the sync).
func BenchmarkInsertDurable(b *testing.B) { benchInsert(b, ctx) }

// BenchmarkInsertInMemory is the write path of one insert without its log
// sync: the transaction, the edit tree, the log record and publishing.
func BenchmarkInsertInMemory(b *testing.B) { benchInsert(b, NoSync(ctx)) }

// benchInsert inserts small documents one per transaction, as the insert
// command does (the collection ensured in each).
func benchInsert(b *testing.B, wctx context.Context) {
	e, err := Open(b.TempDir(), Options{}, zerolog.New(io.Discard))
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	d, _ := e.Database(ctx, "db", true)
	d.Write(ctx, func(tx *Tx) error { _, err := tx.EnsureCollection(ctx, "c"); return err })
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		err := d.Write(wctx, func(tx *Tx) error {
			if _, err := tx.EnsureCollection(wctx, "c"); err != nil {
				return err
			}
			return tx.Insert(wctx, "c", doc(int32(i), "0123456789012345678901234567890123456789"))
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

func discardLog() zerolog.Logger { return zerolog.New(io.Discard) }

// TestDatabaseNamesStayInsideTheDataDirectory: whatever a caller passes, a
// database is a direct child of the data directory.
func TestDatabaseNamesStayInsideTheDataDirectory(t *testing.T) {
	root := t.TempDir()
	e := openEngine(t, filepath.Join(root, "data"), Options{})
	// A leading "." names the engine's own entries (dbdirs.go).
	for _, name := range []string{"", ".", "..", "../escaped", "../../x", "a/b", `a\b`, "/abs", "x\x00", ".newdb-1", ".dropped-1"} {
		if _, err := e.Database(context.Background(), name, true); !errors.Is(err, ErrInvalidDatabaseName) {
			t.Errorf("Database(%q): %v, want ErrInvalidDatabaseName", name, err)
		}
		if err := e.DropDatabase(name); !errors.Is(err, ErrInvalidDatabaseName) {
			t.Errorf("DropDatabase(%q): %v, want ErrInvalidDatabaseName", name, err)
		}
	}
	if ents, _ := os.ReadDir(root); len(ents) != 1 {
		t.Fatalf("outside the data directory: %v", ents)
	}
}

// BenchmarkCheckpoint100K folds 100,000 small documents, inserted 1,000 to
// a transaction in ascending _id order, into the prolly maps: what a
// checkpoint costs the writers of an insert-heavy workload (they wait for
// it under the branch's lock when the edit budget forces it).
func BenchmarkCheckpoint100K(b *testing.B) {
	e, err := Open(b.TempDir(), Options{CheckpointInterval: time.Hour}, zerolog.New(io.Discard))
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	d, _ := e.Database(ctx, "db", true)
	pad := string(make([]byte, 60))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		for t := 0; t < 100; t++ {
			err := d.Write(NoSync(ctx), func(tx *Tx) error {
				if _, err := tx.EnsureCollection(ctx, "c"); err != nil {
					return err
				}
				for j := 0; j < 1000; j++ {
					if err := tx.Insert(ctx, "c", doc(int32(i*100_000+t*1000+j), pad)); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		if err := d.Checkpoint(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// TestInsertAfterCheckpointFindsEveryExistingKey: an insert looks a key
// past the checkpointed map's last one up in the edits alone; keys at or
// before it, the last one included, must still be found in the map.
func TestInsertAfterCheckpointFindsEveryExistingKey(t *testing.T) {
	e := openEngine(t, t.TempDir(), Options{CheckpointInterval: time.Hour})
	defer e.Close()
	d, _ := e.Database(ctx, "db", true)
	insert := func(id int32) error {
		return d.Write(ctx, func(tx *Tx) error {
			if _, err := tx.EnsureCollection(ctx, "c"); err != nil {
				return err
			}
			return tx.Insert(ctx, "c", doc(id, "x"))
		})
	}
	for id := int32(0); id < 5000; id += 2 { // a map of several levels
		if err := insert(id); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	for _, id := range []int32{0, 2, 2500, 4996, 4998} {
		if err := insert(id); !errors.Is(err, ErrDuplicateKey) {
			t.Fatalf("insert of existing _id %d: %v, want ErrDuplicateKey", id, err)
		}
	}
	for _, id := range []int32{-1, 1, 4997, 4999, 5000} {
		if err := insert(id); err != nil {
			t.Fatalf("insert of new _id %d: %v", id, err)
		}
	}
	if err := insert(5000); !errors.Is(err, ErrDuplicateKey) {
		t.Fatalf("second insert of _id 5000: %v, want ErrDuplicateKey", err)
	}
}

// TestDropDiscardsEditsWithoutCheckpoint: dropping a database lets its
// edits go (the budget gets them back) without folding them into maps,
// and a database made again under the name starts empty.
func TestDropDiscardsEditsWithoutCheckpoint(t *testing.T) {
	e := openEngine(t, t.TempDir(), Options{CheckpointInterval: time.Hour})
	defer e.Close()
	d, _ := e.Database(ctx, "db", true)
	for i := int32(0); i < 100; i++ {
		mustWrite(t, d, func(tx *Tx) error {
			if _, err := tx.EnsureCollection(ctx, "c"); err != nil {
				return err
			}
			return tx.Insert(ctx, "c", doc(i, "x"))
		})
	}
	if e.editBytes.Load() == 0 {
		t.Fatal("no edit bytes counted before the drop")
	}
	if err := e.DropDatabase("db"); err != nil {
		t.Fatal(err)
	}
	if n := e.editBytes.Load(); n != 0 {
		t.Fatalf("%d edit bytes still counted after the drop", n)
	}
	d, _ = e.Database(ctx, "db", true)
	if got := contents(t, d, "c"); len(got) != 0 {
		t.Fatalf("a database made again after the drop holds %d documents", len(got))
	}
}

// TestFoldAllocationsPerEdit holds a checkpoint's fold near four
// allocations an edit (its key and value tuples and Dolt's nodes; 4.35
// measured): with a MutableMap and a tuple builder per key it took 8.4.
func TestFoldAllocationsPerEdit(t *testing.T) {
	e := openEngine(t, t.TempDir(), Options{CheckpointInterval: time.Hour})
	defer e.Close()
	d, _ := e.Database(ctx, "db", true)
	const n = 10_000
	pad := string(make([]byte, 60))
	mustWrite(t, d, func(tx *Tx) error {
		if _, err := tx.EnsureCollection(ctx, "c"); err != nil {
			return err
		}
		for i := int32(0); i < n; i++ {
			if err := tx.Insert(ctx, "c", doc(i, pad)); err != nil {
				return err
			}
		}
		return nil
	})
	c := d.branchList()[0].state.Load().colls.get("c")
	allocs := testing.AllocsPerRun(2, func() {
		if _, err := foldEdits(ctx, d.ns, c, nil); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("%.2f allocations an edit", allocs/n)
	if perEdit := allocs / n; perEdit > 7 {
		t.Fatalf("a fold took %.1f allocations an edit, want at most 7", perEdit)
	}
}
