package storage

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// tableFiles counts the table files of a database's store.
func tableFiles(t *testing.T, d *Database) int {
	t.Helper()
	ents, err := os.ReadDir(d.dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		if isTableFileName(e.Name()) && e.Name() != doltJournalName {
			n++
		}
	}
	return n
}

// diskBytes is what the files under dir occupy on disk (allocated blocks,
// as du counts them).
func diskBytes(t testing.TB, dir string) int64 {
	t.Helper()
	var n int64
	err := filepath.Walk(dir, func(_ string, info os.FileInfo, err error) error {
		if errors.Is(err, os.ErrNotExist) {
			return nil // a spare database made in the background, renamed meanwhile
		}
		if err != nil {
			return err
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok && !info.IsDir() {
			n += st.Blocks * 512
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestNewDatabasesKeepTableFiles: a new database's store has no chunk
// journal, and checkpoints past maxTableFiles compact its table files, with
// every document kept through compactions, a GC and a reopen.
func TestNewDatabasesKeepTableFiles(t *testing.T) {
	dir := t.TempDir()
	e := openClosing(t, dir, idleOpts)
	d := fillDatabase(t, e, "db", 1)
	if !d.tables || hasChunkJournal(d.dir) {
		t.Fatalf("a new database has a chunk journal (tables %v)", d.tables)
	}
	for i := int32(1); i < 40; i++ {
		if err := d.Write(ctx, func(tx *Tx) error { return tx.Insert(ctx, "c", doc(i, fmt.Sprint("v", i))) }); err != nil {
			t.Fatal(err)
		}
		if err := d.Checkpoint(ctx); err != nil {
			t.Fatal(err)
		}
		if n := tableFiles(t, d); n > maxTableFiles {
			t.Fatalf("after checkpoint %d: %d table files, want at most %d", i, n, maxTableFiles)
		}
	}
	if e.DatabaseStats().TableCompactions == 0 {
		t.Fatal("40 checkpoints and no compaction")
	}
	wantContents(t, d, 40)
	if _, _, err := d.GC(ctx); err != nil {
		t.Fatal(err)
	}
	wantContents(t, d, 40)
	e.closeIdleAll(later())
	wantContents(t, d, 40)
}

// TestJournalDatabasesStillOpen: a database made with Dolt's chunk
// journal, as before table-file stores, opens with it again after a clean
// close and after a crash, keeps its data and takes new writes.
func TestJournalDatabasesStillOpen(t *testing.T) {
	dir := t.TempDir()
	opts := idleOpts
	opts.journalStores = true
	e := openEngine(t, dir, opts)
	fillDatabase(t, e, "db", 5)
	crashed := crashCopy(t, dir)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	for _, from := range []string{dir, crashed} {
		e := openClosing(t, from, idleOpts)
		d, err := e.Database(ctx, "db", false)
		if err != nil {
			t.Fatal(err)
		}
		wantContents(t, d, 5)
		if d.tables {
			t.Fatalf("%s: a journaled database opened as one of table files", from)
		}
		if err := d.Write(ctx, func(tx *Tx) error { return tx.Insert(ctx, "c", doc(5, "v5")) }); err != nil {
			t.Fatal(err)
		}
		if err := d.Checkpoint(ctx); err != nil {
			t.Fatal(err)
		}
		wantContents(t, d, 6)
	}
}
