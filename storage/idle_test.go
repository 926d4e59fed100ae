package storage

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dumbodb/dumbodb/index"

	"github.com/dolthub/dolt/go/store/nbs"
	"github.com/rs/zerolog"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// idleOpts never close a database by themselves within a test: tests close
// idle databases with closeIdleAll(later()), as if the timeout had passed.
var idleOpts = Options{IdleDatabaseTimeout: time.Hour}

func later() time.Time { return time.Now().Add(2 * time.Hour) }

// openClosing is openEngine closed at the end of the test, even a failed
// one, so that no test's open databases count in another's descriptors.
func openClosing(t *testing.T, dir string, opts Options) *Engine {
	t.Helper()
	e := openEngine(t, dir, opts)
	t.Cleanup(func() { e.Close() })
	return e
}

// openFDs counts the process's open file descriptors, and those of files
// under dir (other tests' engines may open and close files meanwhile).
// engineFDs is what an engine keeps open with no database open:
// mongod.lock and the change log's active segment. Spare databases being
// made in the background hold files open for a moment (spares.go): none
// of those counts, in either figure.
const engineFDs = 2

func openFDs(t testing.TB, dir string) (all, under int) {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	for _, ent := range ents {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", ent.Name()))
		switch {
		case err != nil:
		case strings.Contains(target, string(filepath.Separator)+sparePrefix):
			continue
		case strings.HasPrefix(target, dir+string(filepath.Separator)):
			under++
		}
		all++
	}
	return all, under
}

// residentBytes is the process's VmRSS, after returning freed memory to
// the system.
func residentBytes(t testing.TB) int64 {
	t.Helper()
	runtime.GC()
	debug.FreeOSMemory()
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc/self/status: %v", err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "VmRSS:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmRSS in /proc/self/status")
	return 0
}

// fillDatabase creates a database whose collection c holds docs documents.
func fillDatabase(t testing.TB, e *Engine, name string, docs int32) *Database {
	t.Helper()
	d, err := e.Database(ctx, name, true)
	if err != nil {
		t.Fatal(err)
	}
	err = d.Write(ctx, func(tx *Tx) error {
		if _, err := tx.EnsureCollection(ctx, "c"); err != nil {
			return err
		}
		for i := range docs {
			if err := tx.Insert(ctx, "c", doc(i, fmt.Sprint("v", i))); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// closeWhenReleased waits for d's last snapshot to be collected (pins are
// dropped by cleanups after a GC), closing idle databases meanwhile.
func closeWhenReleased(t testing.TB, e *Engine, d *Database) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); d.isOpen(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s still open once unused", d.name)
		}
		runtime.GC()
		e.closeIdleAll(later())
	}
}

func wantContents(t *testing.T, d *Database, n int32) {
	t.Helper()
	got := contents(t, d, "c")
	if len(got) != int(n) {
		t.Fatalf("%s: %d documents, want %d", d.name, len(got), n)
	}
	for i := range n {
		if got[i] != fmt.Sprint("v", i) {
			t.Fatalf("%s: document %d is %q", d.name, i, got[i])
		}
	}
}

// TestIdleDatabasesCloseAndReopen: idle databases are checkpointed and
// closed (their descriptors released, their log removed as by a clean
// shutdown), and both a handle kept from before and Engine.Database reopen
// them with all their data; writes through a kept handle last.
func TestIdleDatabasesCloseAndReopen(t *testing.T) {
	dir := t.TempDir()
	e := openClosing(t, dir, idleOpts)
	var dbs []*Database
	for i := range 5 {
		dbs = append(dbs, fillDatabase(t, e, fmt.Sprint("db", i), 20))
	}
	// Each holds its log open at least (its store has no table file
	// before its first checkpoint).
	if _, open := openFDs(t, dir); open < engineFDs+5 {
		t.Fatalf("%d descriptors on files of 5 open databases", open)
	}
	e.closeIdleAll(time.Now())
	if st := e.DatabaseStats(); st.Open != 5 || st.IdleCloses != 0 {
		t.Fatalf("databases used just now were closed: %+v", st)
	}
	e.closeIdleAll(later())
	if st := e.DatabaseStats(); st.Open != 0 || st.IdleCloses != 5 {
		t.Fatalf("after the idle pass: %+v", st)
	}
	if _, open := openFDs(t, dir); open != engineFDs {
		t.Fatalf("%d descriptors on the engine's files once all databases are closed, want %d", open, engineFDs)
	}
	for _, d := range dbs {
		if _, err := os.Stat(filepath.Join(d.dir, "wal")); !os.IsNotExist(err) {
			t.Fatalf("%s kept its log after an idle close: %v", d.name, err)
		}
	}
	wantContents(t, dbs[0], 20) // the kept handle reopens
	d1, err := e.Database(ctx, "db1", false)
	if err != nil || d1 != dbs[1] {
		t.Fatalf("Database after an idle close: %p %v, want the same handle %p", d1, err, dbs[1])
	}
	wantContents(t, d1, 20)
	mustWrite(t, dbs[2], func(tx *Tx) error { return tx.Insert(ctx, "c", doc(20, "v20")) })
	if st := e.DatabaseStats(); st.Open != 3 || st.Opens != 5+3 {
		t.Fatalf("after reopening three: %+v", st)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e = openClosing(t, dir, idleOpts)
	d2, _ := e.Database(ctx, "db2", false)
	wantContents(t, d2, 21)
}

// TestDatabaseInUseStaysOpen: nothing closes a database under a snapshot,
// an iterator (whose snapshot is otherwise gone), an index iterator or a
// running write; once they are gone the database closes.
func TestDatabaseInUseStaysOpen(t *testing.T) {
	uses := map[string]func(t *testing.T, d *Database) (check func()){
		"snapshot": func(t *testing.T, d *Database) func() {
			snap := mainSnapshot(t, d)
			return func() {
				if _, found, err := snap.Get(ctx, "c", idValue(7)); !found || err != nil {
					t.Fatalf("read through the snapshot: %v %v", found, err)
				}
			}
		},
		"iterator": func(t *testing.T, d *Database) func() {
			it, err := mainSnapshot(t, d).Scan(ctx, "c")
			if err != nil {
				t.Fatal(err)
			}
			return func() {
				n := 0
				for _, err := it.Next(ctx); !errors.Is(err, io.EOF); _, err = it.Next(ctx) {
					if err != nil {
						t.Fatal(err)
					}
					n++
				}
				if n != 100 {
					t.Fatalf("the iterator read %d documents", n)
				}
			}
		},
		"index iterator": func(t *testing.T, d *Database) func() {
			mustWrite(t, d, func(tx *Tx) error { return tx.SetIndexes(ctx, "c", []bsoncore.Document{indexSpec("v_1", false, "v")}) })
			it, err := mainSnapshot(t, d).IndexScan(ctx, "c", "v_1", index.Interval{Start: []byte{1}, Stop: []byte{0xFF, 0xFF}})
			if err != nil {
				t.Fatal(err)
			}
			return func() {
				n := 0
				for _, _, err := it.Next(ctx); !errors.Is(err, io.EOF); _, _, err = it.Next(ctx) {
					if err != nil {
						t.Fatal(err)
					}
					n++
				}
				if n != 100 {
					t.Fatalf("the index iterator read %d entries", n)
				}
			}
		},
		"write": func(t *testing.T, d *Database) func() {
			inside, finish, done := make(chan struct{}), make(chan struct{}), make(chan error)
			go func() {
				done <- d.Write(ctx, func(tx *Tx) error {
					close(inside)
					<-finish
					return tx.Insert(ctx, "c", doc(1000, "late"))
				})
			}()
			<-inside
			return func() {
				close(finish)
				if err := <-done; err != nil {
					t.Fatal(err)
				}
			}
		},
	}
	for name, use := range uses {
		t.Run(name, func(t *testing.T) {
			e := openClosing(t, t.TempDir(), idleOpts)
			d := fillDatabase(t, e, "db", 100)
			check := use(t, d)
			runtime.GC()
			e.closeIdleAll(later())
			if !d.isOpen() {
				t.Fatalf("closed while in use by a %s", name)
			}
			check()
			check = nil
			closeWhenReleased(t, e, d)
		})
	}
}

// TestVisitIsNotAUse: Visit opens a database it needs and closes it again
// at once, and a database closed for idleness answers Catalog (the same
// catalog) without reopening; Visit never closes a database in use.
func TestVisitIsNotAUse(t *testing.T) {
	dir := t.TempDir()
	e := openClosing(t, dir, idleOpts)
	d := fillDatabase(t, e, "db", 3)
	mustWrite(t, d, func(tx *Tx) error { return tx.SetIndexes(ctx, "c", []bsoncore.Document{indexSpec("v_1", false, "v")}) })
	if _, err := d.CreateBranch(ctx, "side", Revision{Branch: DefaultBranch}); err != nil {
		t.Fatal(err)
	}
	want, err := d.Catalog(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Visit(ctx, "db", func(*Database) error { return nil }); err != nil || !d.isOpen() {
		t.Fatalf("Visit closed a database used just now: open %v, %v", d.isOpen(), err)
	}
	e.Close()

	e = openClosing(t, dir, idleOpts)
	var got []BranchCatalog
	visit := func() {
		t.Helper()
		err := e.Visit(ctx, "db", func(d *Database) error {
			var err error
			got, err = d.Catalog(ctx)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("catalog %+v, want %+v", got, want)
		}
	}
	visit()
	if st := e.DatabaseStats(); st.Open != 0 || st.Opens != 1 {
		t.Fatalf("after visiting an unopened database: %+v", st)
	}
	visit()
	if st := e.DatabaseStats(); st.Opens != 1 {
		t.Fatalf("a closed database reopened for its catalog: %+v", st)
	}
	if err := e.Visit(ctx, "missing", func(*Database) error { t.Fatal("visited a missing database"); return nil }); err != nil {
		t.Fatal(err)
	}
}

// TestDroppedHandleStaysClosed: a handle kept across an idle close and a
// drop answers ErrClosed and does not bring the database back.
func TestDroppedHandleStaysClosed(t *testing.T) {
	e := openClosing(t, t.TempDir(), idleOpts)
	d := fillDatabase(t, e, "db", 3)
	e.closeIdleAll(later())
	if err := e.DropDatabase("db"); err != nil {
		t.Fatal(err)
	}
	if _, err := d.BranchSnapshot(ctx, DefaultBranch); !errors.Is(err, ErrClosed) {
		t.Fatalf("dropped handle: %v", err)
	}
	if names, _ := e.DatabaseNames(); len(names) != 0 {
		t.Fatalf("the dropped database came back: %v", names)
	}
}

// TestIdleCloseUnderConcurrentUse: goroutines write and read random
// databases, through Engine.Database and through handles kept across
// calls, while the idle pass runs every millisecond with a one-millisecond
// timeout. No call fails, the closer does close databases, and every
// acknowledged write is there afterwards, also after a restart.
func TestIdleCloseUnderConcurrentUse(t *testing.T) {
	dir := t.TempDir()
	var closes countingWriter
	log := zerolog.New(&closes).Level(zerolog.DebugLevel)
	e, err := Open(dir, Options{IdleDatabaseTimeout: time.Millisecond}, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	const workers, ops, nDBs, maxRounds = 6, 60, 4, 50
	var mu sync.Mutex
	acked := map[string][]int32{} // database -> acknowledged _ids
	// Snapshots no longer referenced pin their states until a GC runs
	// their cleanups; in a server GC runs all along (at least every two
	// minutes), here it must be made to.
	stopGC := make(chan struct{})
	go func() {
		for {
			select {
			case <-stopGC:
				return
			case <-time.After(5 * time.Millisecond):
				runtime.GC()
			}
		}
	}()
	defer close(stopGC)
	// On a loaded machine a round may end before the idle pass closed
	// anything; rounds repeat, each on new _ids, until one has.
	for round := 0; closes.count("closed an idle database") == 0; round++ {
		if round == maxRounds {
			t.Fatalf("no database was closed for idleness in %d rounds: the test tested nothing", maxRounds)
		}
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() { concurrentWorker(t, e, acked, &mu, (round*workers+w)*ops, ops, nDBs) })
		}
		wg.Wait()
		if t.Failed() {
			break
		}
	}
	check := func(e *Engine) {
		for name, ids := range acked {
			d, err := e.Database(ctx, name, false)
			if err != nil {
				t.Fatal(err)
			}
			got := contents(t, d, "c")
			for _, id := range ids {
				if _, ok := got[id]; !ok {
					t.Fatalf("%s lost acknowledged document %d", name, id)
				}
			}
		}
	}
	check(e)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	check(openClosing(t, dir, Options{}))
}

// concurrentWorker runs ops random operations with _ids from first on,
// on nDBs databases, reached through e.Database or through handles it
// keeps; it records each acknowledged _id in acked.
func concurrentWorker(t *testing.T, e *Engine, acked map[string][]int32, mu *sync.Mutex, first, ops, nDBs int) {
	rng := rand.New(rand.NewPCG(uint64(first), 1))
	kept := map[string]*Database{}
	for i := range ops {
		name := fmt.Sprint("db", rng.IntN(nDBs))
		d := kept[name]
		if d == nil || rng.IntN(2) == 0 {
			var err error
			if d, err = e.Database(ctx, name, true); err != nil {
				t.Error(err)
				return
			}
			kept[name] = d
		}
		id := int32(first + i)
		if err := concurrentOp(d, id, rng.IntN(3)); err != nil {
			t.Errorf("%s: %v", name, err)
			return
		}
		mu.Lock()
		acked[name] = append(acked[name], id)
		mu.Unlock()
		time.Sleep(time.Duration(rng.IntN(3)) * time.Millisecond) // let databases go idle
	}
}

// concurrentOp inserts id into d, then reads it back and scans the
// collection in one of three ways.
func concurrentOp(d *Database, id int32, read int) error {
	err := d.Write(ctx, func(tx *Tx) error {
		if _, err := tx.EnsureCollection(ctx, "c"); err != nil {
			return err
		}
		return tx.Insert(ctx, "c", doc(id, "x"))
	})
	if err != nil {
		return fmt.Errorf("insert %d: %w", id, err)
	}
	switch read {
	case 0:
		snap, err := d.BranchSnapshot(ctx, DefaultBranch)
		if err != nil {
			return err
		}
		if _, found, err := snap.Get(ctx, "c", idValue(id)); !found || err != nil {
			return fmt.Errorf("read %d back: found %v, %w", id, found, err)
		}
	case 1:
		snap, err := d.BranchSnapshot(ctx, DefaultBranch)
		if err != nil {
			return err
		}
		it, err := snap.Scan(ctx, "c")
		if err != nil {
			return err
		}
		snap = nil // the iterator alone keeps the database open
		for _, err = it.Next(ctx); err == nil; _, err = it.Next(ctx) {
		}
		if !errors.Is(err, io.EOF) {
			return fmt.Errorf("scan: %w", err)
		}
	default:
		if _, err := d.Catalog(ctx); err != nil {
			return fmt.Errorf("catalog: %w", err)
		}
	}
	return nil
}

// countingWriter keeps log lines to count messages in.
type countingWriter struct {
	mu    sync.Mutex
	lines []string
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.lines = append(w.lines, string(p))
	return len(p), nil
}

func (w *countingWriter) count(msg string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, l := range w.lines {
		if strings.Contains(l, msg) {
			n++
		}
	}
	return n
}

// Per-database costs documented in docs/design/resources.md.
const (
	fdsPerOpenDatabase  = 2 // the log segment and one table file once checkpointed (more, up to maxTableFiles, once written for long)
	rssPerOpenDatabase  = 256 << 10
	diskPerDatabase     = 256 << 10 // its files, and its share of the change log
	heapPerIdleDatabase = 64 << 10  // a handle, its catalog, nodes left in Dolt's shared cache
	manyDatabases       = 200
)

// TestManyIdleDatabasesReturnToBaseline: 200 open databases cost at most
// the documented descriptors and resident memory each, and once idle
// closes them the process is back to its descriptors from before, and
// almost to its heap.
func TestManyIdleDatabasesReturnToBaseline(t *testing.T) {
	if testing.Short() {
		t.Skip("opens 200 databases")
	}
	dir := t.TempDir()
	e := openClosing(t, dir, idleOpts)
	fds0, _ := openFDs(t, dir)
	rss0, heap0 := residentBytes(t), heapInUse()
	for i := range manyDatabases {
		fillDatabase(t, e, fmt.Sprint("db", i), 5)
	}
	fds1, _ := openFDs(t, dir)
	rss1, heap1 := residentBytes(t), heapInUse()
	disk := diskBytes(t, dir) / manyDatabases
	t.Logf("per database on disk: %d KiB", disk>>10)
	if disk > diskPerDatabase {
		t.Errorf("%d KiB on disk per database, documented at most %d", disk>>10, diskPerDatabase>>10)
	}
	t.Logf("per open database: %.2f descriptors, %d KiB resident, %d KiB heap",
		float64(fds1-fds0)/manyDatabases, (rss1-rss0)/manyDatabases>>10, (heap1-heap0)/manyDatabases>>10)
	// A few descriptors of the runtime's own may come and go meanwhile.
	if fds1-fds0 > fdsPerOpenDatabase*manyDatabases+4 {
		t.Errorf("%d descriptors for %d open databases, documented %d each", fds1-fds0, manyDatabases, fdsPerOpenDatabase)
	}
	if !raceEnabled && rss1-rss0 > rssPerOpenDatabase*manyDatabases { // the race detector multiplies memory
		t.Errorf("%d KiB resident per open database, documented %d", (rss1-rss0)/manyDatabases>>10, rssPerOpenDatabase>>10)
	}

	e.closeIdleAll(later())
	if st := e.DatabaseStats(); st.Open != 0 {
		t.Fatalf("after the idle pass: %+v", st)
	}
	// Closed, each has its store written (its first checkpoint) and no log.
	diskClosed := diskBytes(t, dir) / manyDatabases
	t.Logf("per closed database on disk: %d KiB", diskClosed>>10)
	if diskClosed > diskPerDatabase {
		t.Errorf("%d KiB on disk per closed database, documented at most %d", diskClosed>>10, diskPerDatabase>>10)
	}
	fds2, under := openFDs(t, dir)
	rss2, heap2 := residentBytes(t), heapInUse()
	t.Logf("per closed database: %d KiB heap; resident %d MiB before, %d MiB open, %d MiB closed",
		(heap2-heap0)/manyDatabases>>10, rss0>>20, rss1>>20, rss2>>20)
	if under != engineFDs || fds2 > fds0+4 { // the slack as above
		t.Errorf("%d descriptors after closing (%d on the engine's files), %d before", fds2, under, fds0)
	}
	if heap2-heap0 > heapPerIdleDatabase*manyDatabases {
		t.Errorf("%d KiB heap per closed database, want at most %d", (heap2-heap0)/manyDatabases>>10, heapPerIdleDatabase>>10)
	}
}

func heapInUse() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapInuse)
}

// lockFile takes an exclusive flock on path, as another program would,
// until the returned function (or the test's end) releases it.
func lockFile(t *testing.T, path string) (unlock func()) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	unlock = func() { once.Do(func() { f.Close() }) }
	t.Cleanup(unlock)
	return unlock
}

// TestReopenOutlastsDoltsLockTimeout: Dolt gives up on its store lock
// after 100 ms; a reopen retries, so a lock released a little later does
// not fail the call, while one held for good fails it with Dolt's error.
func TestReopenOutlastsDoltsLockTimeout(t *testing.T) {
	opts := idleOpts
	opts.journalStores = true // a store of table files takes no lock while open
	e := openClosing(t, t.TempDir(), opts)
	d := fillDatabase(t, e, "db", 3)
	e.closeIdleAll(later())
	unlock := lockFile(t, filepath.Join(d.dir, "LOCK"))
	time.AfterFunc(150*time.Millisecond, unlock)
	wantContents(t, d, 3)

	closeWhenReleased(t, e, d)
	lockFile(t, filepath.Join(d.dir, "LOCK"))
	if _, err := d.BranchSnapshot(ctx, DefaultBranch); !errors.Is(err, nbs.ErrDatabaseLocked) {
		t.Fatalf("reopening a store locked for good: %v", err)
	}
}

// droppedDatabasesHeap bounds what 500 databases created and dropped may
// leave on the heap: nodes of theirs in Dolt's shared cache until evicted,
// and the change log's entries of their writes (docs/design/resources.md).
const droppedDatabasesHeap = 16 << 20

// TestCreateAndDropDatabasesReturnsMemory: creating and dropping 500
// databases leaves no descriptors, no files and almost no heap behind.
func TestCreateAndDropDatabasesReturnsMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("creates 500 databases")
	}
	dir := t.TempDir()
	e := openClosing(t, dir, idleOpts)
	fds0, _ := openFDs(t, dir)
	heap0, disk0 := heapInUse(), diskBytes(t, dir)
	for i := range 500 {
		name := fmt.Sprint("db", i)
		fillDatabase(t, e, name, 5)
		if err := e.DropDatabase(name); err != nil {
			t.Fatal(err)
		}
	}
	fds1, under := openFDs(t, dir)
	heap1 := heapInUse()
	t.Logf("after 500 databases created and dropped: heap %+d KiB, disk %+d KiB, descriptors %+d",
		(heap1-heap0)>>10, (diskBytes(t, dir)-disk0)>>10, fds1-fds0)
	if under != engineFDs || fds1 > fds0+4 {
		t.Errorf("%d descriptors left (%d on the engine's files), %d before", fds1, under, fds0)
	}
	if heap1-heap0 > droppedDatabasesHeap {
		t.Errorf("%d KiB of heap left by 500 dropped databases, want at most %d", (heap1-heap0)>>10, droppedDatabasesHeap>>10)
	}
	if names, _ := e.DatabaseNames(); len(names) != 0 {
		t.Errorf("databases left: %v", names)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, ent := range ents {
		if strings.HasPrefix(ent.Name(), "db") || strings.HasPrefix(ent.Name(), droppedPrefix) {
			t.Errorf("%s left in the data directory", ent.Name())
		}
	}
}
