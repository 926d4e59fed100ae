package storage

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dumbodb/dumbodb/storage/wal"
)

// BenchmarkCreateDatabase is the first durable insert into a new database
// through the engine: Engine.Database creating it, then one Write that
// creates its collection and inserts a document (what the insert command
// does). BackToBack creates one database after the other; Paced pauses
// (outside the timer) between creations, as a client that does not only
// create databases, so that what is made in the background between them
// is ready. docs/design/resources.md, "Creating a database", has the
// figures.
func BenchmarkCreateDatabase(b *testing.B) {
	b.Run("BackToBack", func(b *testing.B) { benchCreateDatabase(b, 0) })
	b.Run("Paced", func(b *testing.B) { benchCreateDatabase(b, createPause) })
}

// createPause is the pause between creations of the paced benchmarks.
const createPause = 20 * time.Millisecond

func benchCreateDatabase(b *testing.B, pause time.Duration) {
	e, err := Open(b.TempDir(), Options{}, discardLog())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { e.Close() })
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if pause > 0 {
			b.StopTimer()
			time.Sleep(pause)
			b.StartTimer()
		}
		d, err := e.Database(ctx, fmt.Sprint("db", i), true)
		if err != nil {
			b.Fatal(err)
		}
		err = d.Write(ctx, func(tx *Tx) error {
			if _, err := tx.EnsureCollection(ctx, "c"); err != nil {
				return err
			}
			return tx.Insert(ctx, "c", doc(int32(i), "v"))
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// wantStore fails the test unless d's Dolt store is written (or not).
func wantStore(t *testing.T, d *Database, written bool) {
	t.Helper()
	if hasStore(d.dir) != written {
		t.Fatalf("%s: store written on disk %v, want %v", d.name, hasStore(d.dir), written)
	}
}

// TestNewDatabaseStoreIsWrittenByItsFirstCheckpoint: a new database's
// writes are in its log alone, its catalog and branches answer without a
// store, a pass over the databases does not close it, and its first
// checkpoint writes the initial commit and the working set as one table
// file.
func TestNewDatabaseStoreIsWrittenByItsFirstCheckpoint(t *testing.T) {
	e := openClosing(t, t.TempDir(), idleOpts)
	d := fillDatabase(t, e, "db", 3)
	wantStore(t, d, false)
	if n := tableFiles(t, d); n != 0 {
		t.Fatalf("%d table files before the first checkpoint", n)
	}
	if names, err := e.DatabaseNames(); err != nil || !slices.Equal(names, []string{"db"}) {
		t.Fatalf("DatabaseNames: %v, %v", names, err)
	}
	cat, err := d.Catalog(ctx)
	if err != nil || len(cat) != 1 || cat[0].Branch != DefaultBranch || len(cat[0].Collections) != 1 {
		t.Fatalf("catalog of a new database: %+v, %v", cat, err)
	}
	wantStore(t, d, false)
	wantContents(t, d, 3)
	// A pass over the databases leaves it open: closing it would write
	// its store.
	if err := e.Visit(ctx, "db", func(*Database) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if !d.isOpen() {
		t.Fatal("Visit closed a database whose store is not written")
	}
	wantStore(t, d, false)
	if err := d.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	wantStore(t, d, true)
	if n := tableFiles(t, d); n != 1 {
		t.Fatalf("%d table files after the first checkpoint, want 1", n)
	}
	log, err := d.Log(ctx, LogOptions{From: Revision{Branch: DefaultBranch}})
	if err != nil || len(log) != 1 || log[0].Message != "Initialize database" {
		t.Fatalf("main's log: %+v, %v", log, err)
	}
	e.closeIdleAll(later())
	wantContents(t, d, 3)
}

// TestUnwrittenDatabaseIsWrittenWhenItCloses: a database created and
// never written has no store until it closes, which writes it, so that
// it is still there after a restart; GC on it writes nothing.
func TestUnwrittenDatabaseIsWrittenWhenItCloses(t *testing.T) {
	dir := t.TempDir()
	e := openEngine(t, dir, idleOpts)
	d, err := e.Database(ctx, "empty", true)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := d.GC(ctx); err != nil {
		t.Fatal(err)
	}
	wantStore(t, d, false)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	wantStore(t, d, true)
	e = openClosing(t, dir, idleOpts)
	if names, err := e.DatabaseNames(); err != nil || !slices.Equal(names, []string{"empty"}) {
		t.Fatalf("DatabaseNames after a restart: %v, %v", names, err)
	}
}

// TestVersionControlWritesANewDatabasesStore: a version-control operation
// on a database whose store is not written writes the initial commit
// first, and commits on top of it.
func TestVersionControlWritesANewDatabasesStore(t *testing.T) {
	dir := t.TempDir()
	e := openEngine(t, dir, idleOpts)
	d := fillDatabase(t, e, "db", 2)
	branches, err := d.Branches(ctx)
	if err != nil || len(branches) != 1 || branches[0].Name != DefaultBranch || branches[0].Head.Message != "Initialize database" {
		t.Fatalf("branches of a new database: %+v, %v", branches, err)
	}
	wantStore(t, d, true)
	c, err := d.Commit(ctx, DefaultBranch, CommitOptions{Message: "two"})
	if err != nil || len(c.Parents) != 1 || c.Parents[0] != branches[0].Head.ID {
		t.Fatalf("commit on the initial one: %+v, %v", c, err)
	}
	crashed := crashCopy(t, dir)
	e.Close()
	e = openClosing(t, crashed, idleOpts)
	d, err = e.Database(ctx, "db", false)
	if err != nil {
		t.Fatal(err)
	}
	wantContents(t, d, 2)
}

// TestNewDatabaseRecoversWithoutItsStore: after a crash before its first
// checkpoint, a new database replays its whole log onto the empty initial
// state, also when the crash interrupted the store's first write (a table
// file, no manifest); recovery leaves it open, and its first checkpoint
// writes its store.
func TestNewDatabaseRecoversWithoutItsStore(t *testing.T) {
	dir := t.TempDir()
	e := openEngine(t, dir, idleOpts)
	fillDatabase(t, e, "db", 5)
	fillDatabase(t, e, "half", 4)
	crashed := crashCopy(t, dir)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	// What writing half's store left before its manifest: a table file
	// (a copy of a real one) and Dolt's temporary file.
	for _, name := range []string{tableFileOf(t, filepath.Join(dir, "db")), "nbs_table_42"} {
		if err := os.WriteFile(filepath.Join(crashed, "half", name), []byte("partial"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	e = openClosing(t, crashed, idleOpts)
	want := map[string]int32{"db": 5, "half": 4}
	dbs := map[string]*Database{}
	for name, n := range want {
		d, err := e.Database(ctx, name, false)
		if err != nil || d == nil {
			t.Fatalf("%s after the crash: %v", name, err)
		}
		wantStore(t, d, false)
		wantContents(t, d, n)
		dbs[name] = d
	}
	for name, d := range dbs {
		if err := d.Checkpoint(ctx); err != nil {
			t.Fatal(err)
		}
		wantStore(t, d, true)
		e.closeIdleAll(later())
		wantContents(t, d, want[name])
	}
}

// tableFileOf is the name of one table file of the store in dir.
func tableFileOf(t *testing.T, dir string) string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, ent := range ents {
		if isTableFileName(ent.Name()) && ent.Name() != doltJournalName {
			return ent.Name()
		}
	}
	t.Fatalf("no table file in %s", dir)
	return ""
}

// TestUnacknowledgedCreationLeavesNoDatabase: what a crash during a
// creation can leave is no database after a restart, and the name can be
// created again: a prepared log with no record (created, never written),
// a torn log, an empty directory. A dropped database's leftover goes too.
func TestUnacknowledgedCreationLeavesNoDatabase(t *testing.T) {
	dir := t.TempDir()
	e := openEngine(t, dir, idleOpts)
	fillDatabase(t, e, "kept", 1)
	if _, err := e.Database(ctx, "unwritten", true); err != nil {
		t.Fatal(err)
	}
	crashed := crashCopy(t, dir)
	e.Close()
	torn := filepath.Join(crashed, "torn", walDirName)
	if err := os.Mkdir(filepath.Dir(torn), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := wal.Prepare(torn, wal.Options{}); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(filepath.Join(torn, "00000000000000000001.seg"), 20); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"bare", droppedPrefix + "7/wal"} {
		if err := os.MkdirAll(filepath.Join(crashed, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	e = openClosing(t, crashed, idleOpts)
	if names, err := e.DatabaseNames(); err != nil || !slices.Equal(names, []string{"kept"}) {
		t.Fatalf("DatabaseNames: %v, %v", names, err)
	}
	for _, name := range []string{"unwritten", "torn", droppedPrefix + "7"} {
		if exists(filepath.Join(crashed, name)) {
			t.Errorf("%s is still on disk", name)
		}
	}
	for _, name := range []string{"unwritten", "torn", "bare"} {
		fillDatabase(t, e, name, 2)
		d, _ := e.Database(ctx, name, false)
		wantContents(t, d, 2)
	}
}

// TestDroppedDatabaseLeavesNothing: a drop removes the database's
// directory through a name of the engine's, which goes too, and the name
// can be created again.
func TestDroppedDatabaseLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	e := openClosing(t, dir, idleOpts)
	fillDatabase(t, e, "db", 3)
	if err := e.DropDatabase("db"); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, ent := range ents {
		if ent.Name() == "db" || strings.HasPrefix(ent.Name(), droppedPrefix) {
			t.Fatalf("%s left after the drop", ent.Name())
		}
	}
	d := fillDatabase(t, e, "db", 1)
	wantContents(t, d, 1)
}

// spareNames lists the spare databases in dir, ready ones and ones being
// made.
func spareNames(t *testing.T, dir string) (ready, making []string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, ent := range ents {
		switch {
		case strings.HasPrefix(ent.Name(), spareTmpPrefix):
			making = append(making, ent.Name())
		case strings.HasPrefix(ent.Name(), sparePrefix):
			ready = append(ready, ent.Name())
		}
	}
	return ready, making
}

// dirTree lists the paths under dir, relative to it.
func dirTree(t *testing.T, dir string) []string {
	t.Helper()
	var paths []string
	err := filepath.WalkDir(dir, func(path string, _ os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if rel, _ := filepath.Rel(dir, path); rel != "." {
			paths = append(paths, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return paths
}

// TestCreationTakesASpare: an engine makes spare databases once it has
// created one; a creation takes a spare, whose prepared log takes the first
// write without a file more, and the spares are made again.
func TestCreationTakesASpare(t *testing.T) {
	dir := t.TempDir()
	e := openClosing(t, dir, idleOpts)
	if ready, _ := spareNames(t, dir); len(ready) != 0 {
		t.Fatalf("spares before any creation: %v", ready)
	}
	fillDatabase(t, e, "first", 1)
	e.spares.wait()
	before, making := spareNames(t, dir)
	if len(before) != spareDatabases || len(making) != 0 {
		t.Fatalf("after the first creation: spares %v, being made %v; want %d", before, making, spareDatabases)
	}
	d := fillDatabase(t, e, "second", 3)
	want := []string{walDirName, filepath.Join(walDirName, "00000000000000000001.seg")}
	if got := dirTree(t, d.dir); !slices.Equal(got, want) {
		t.Fatalf("a new database after its first write holds %v, want %v", got, want)
	}
	e.spares.wait()
	after, _ := spareNames(t, dir)
	if len(after) != spareDatabases {
		t.Fatalf("%d spares after refilling, want %d", len(after), spareDatabases)
	}
	if taken := len(slices.DeleteFunc(before, func(n string) bool { return slices.Contains(after, n) })); taken != 1 {
		t.Fatalf("%d of the spares were taken by one creation", taken)
	}
	wantContents(t, d, 3)
}

// TestSparesDoNotOutliveTheEngine: a clean close removes the spares, and
// a start removes any a previous run left (ready or half made, after a
// crash); creations then make their own again.
func TestSparesDoNotOutliveTheEngine(t *testing.T) {
	dir := t.TempDir()
	e := openEngine(t, dir, idleOpts)
	fillDatabase(t, e, "first", 1)
	e.spares.wait()
	if ready, _ := spareNames(t, dir); len(ready) != spareDatabases {
		t.Fatalf("%d spares while running, want %d", len(ready), spareDatabases)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if ready, making := spareNames(t, dir); len(ready)+len(making) != 0 {
		t.Fatalf("spares after a clean close: %v %v", ready, making)
	}
	for _, name := range []string{sparePrefix + "1-1", spareTmpPrefix + "2-2"} {
		if err := os.Mkdir(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := wal.Prepare(filepath.Join(dir, name, walDirName), wal.Options{}); err != nil {
			t.Fatal(err)
		}
	}
	e = openClosing(t, dir, idleOpts)
	if ready, making := spareNames(t, dir); len(ready)+len(making) != 0 {
		t.Fatalf("spares a previous run left, after a start: %v %v", ready, making)
	}
	if names, err := e.DatabaseNames(); err != nil || !slices.Equal(names, []string{"first"}) {
		t.Fatalf("DatabaseNames: %v, %v", names, err)
	}
	d := fillDatabase(t, e, "second", 2)
	wantContents(t, d, 2)
}

// TestRefusedNameLeavesNoSpare: a creation whose name the file system
// refuses removes the spare it took.
func TestRefusedNameLeavesNoSpare(t *testing.T) {
	dir := t.TempDir()
	e := openClosing(t, dir, idleOpts)
	if _, err := e.Database(ctx, strings.Repeat("x", 300), true); err == nil {
		t.Fatal("a 300-byte database name was taken")
	}
	e.spares.wait()
	if ready, making := spareNames(t, dir); len(ready)+len(making) != 0 {
		t.Fatalf("spares after a refused creation: %v %v", ready, making)
	}
	wantContents(t, fillDatabase(t, e, "db", 1), 1)
}
