package storage

import (
	"errors"
	"github.com/dumbodb/dumbodb/internal/formatversion"
	"testing"

	"github.com/dolthub/dolt/go/store/hash"
)

// withRootVersionWritten makes buildRoot write roots of version v, as
// another build would, for the rest of the test.
func withRootVersionWritten(t *testing.T, v uint32) {
	old := rootVersionWritten
	rootVersionWritten = v
	t.Cleanup(func() { rootVersionWritten = old })
}

func workingRootVersion(t *testing.T, d *Database) uint32 {
	t.Helper()
	b, err := d.branch(ctx, DefaultBranch)
	if err != nil {
		t.Fatal(err)
	}
	v, err := rootVersion(ctx, d.ns, b.state.Load().root)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func insertOne(t *testing.T, d *Database, id int32) {
	t.Helper()
	mustWrite(t, d, func(tx *Tx) error {
		if _, err := tx.EnsureCollection(ctx, "c"); err != nil {
			return err
		}
		return tx.Insert(ctx, "c", doc(id, "v"))
	})
}

func commitAs(t *testing.T, d *Database, msg string) CommitInfo {
	t.Helper()
	c, err := d.Commit(ctx, DefaultBranch, CommitOptions{Message: msg})
	if err != nil {
		t.Fatalf("commit %q: %v", msg, err)
	}
	return c
}

func wantClean(t *testing.T, d *Database, clean bool) {
	t.Helper()
	st, err := d.Status(ctx, DefaultBranch)
	if err != nil {
		t.Fatal(err)
	}
	if st.Dirty == clean {
		t.Errorf("status dirty = %v, want %v", st.Dirty, !clean)
	}
}

func TestRootsRecordTheirFormatVersion(t *testing.T) {
	d := openDatabase(t, Options{})
	insertOne(t, d, 1)
	if err := d.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	if v := workingRootVersion(t, d); v != formatversion.Root.Current {
		t.Errorf("working root is version %d, want %d", v, formatversion.Root.Current)
	}
	wantClean(t, d, false)
	commitAs(t, d, "one")
	wantClean(t, d, true)
}

// TestVersion1DatabaseOpensAndUpgrades: a database whose roots have no
// format entry, as builds before format versions wrote them, opens; its
// branch is clean; a write and its undoing leave it clean though the new
// root records version 2; later commits record version 2 and the old
// commit stays readable.
func TestVersion1DatabaseOpensAndUpgrades(t *testing.T) {
	dir := t.TempDir()
	withRootVersionWritten(t, 1)
	e := openEngine(t, dir, Options{})
	d, err := e.Database(ctx, "db", true)
	if err != nil {
		t.Fatal(err)
	}
	insertOne(t, d, 1)
	old := commitAs(t, d, "written by version 1")
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}

	rootVersionWritten = formatversion.Root.Current
	e = openEngine(t, dir, Options{})
	defer e.Close()
	if d, err = e.Database(ctx, "db", false); err != nil {
		t.Fatal(err)
	}
	if v := workingRootVersion(t, d); v != 1 {
		t.Fatalf("working root read as version %d before any write, want 1", v)
	}
	wantClean(t, d, true)
	insertOne(t, d, 2)
	mustWrite(t, d, func(tx *Tx) error { return tx.Delete(ctx, "c", idValue(2)) })
	if err := d.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	if v := workingRootVersion(t, d); v != formatversion.Root.Current {
		t.Fatalf("working root after a write is version %d, want %d", v, formatversion.Root.Current)
	}
	wantClean(t, d, true)
	if _, err := d.Commit(ctx, DefaultBranch, CommitOptions{Message: "nothing"}); !errors.Is(err, ErrNothingToCommit) {
		t.Errorf("commit of a root that differs only in its format entry: %v, want ErrNothingToCommit", err)
	}
	insertOne(t, d, 3)
	commitAs(t, d, "written by version 2")
	if got := contents(t, d, "c"); len(got) != 2 {
		t.Errorf("main holds %v, want documents 1 and 3", got)
	}
	oldHash, ok := hash.MaybeParse(old.ID)
	if !ok {
		t.Fatalf("commit id %q", old.ID)
	}
	snap, err := d.SnapshotAt(ctx, Revision{Commit: oldHash})
	if err != nil {
		t.Fatalf("the version 1 commit: %v", err)
	}
	if got := scanDocs(t, snap, "c"); len(got) != 1 {
		t.Errorf("the version 1 commit holds %d documents, want 1", len(got))
	}
}

func TestNewerRootIsRefused(t *testing.T) {
	dir := t.TempDir()
	e := openEngine(t, dir, Options{})
	d, err := e.Database(ctx, "db", true)
	if err != nil {
		t.Fatal(err)
	}
	withRootVersionWritten(t, formatversion.Root.Current+1)
	insertOne(t, d, 1)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	rootVersionWritten = formatversion.Root.Current
	e, err = Open(dir, Options{}, discardLog())
	if err == nil {
		defer e.Close()
		_, err = e.Database(ctx, "db", false)
	}
	if !errors.Is(err, formatversion.ErrNewer) {
		t.Errorf("opening a database with a newer root: %v, want ErrNewer", err)
	}
}
