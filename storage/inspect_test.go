package storage

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// inspectFixture makes a data directory with database db: collection c
// of 10 documents with index v_1 on main, committed and tagged, branch f
// with one more document, and one write on main after the last
// checkpoint. It returns a copy of the directory as a crash would leave
// it (the log holding that write) and the live engine.
func inspectFixture(t *testing.T) (string, *Engine) {
	t.Helper()
	dir := t.TempDir()
	e := openEngine(t, dir, Options{})
	t.Cleanup(func() { e.Close() })
	d, err := e.Database(ctx, "db", true)
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, d, func(tx *Tx) error {
		if _, err := tx.EnsureCollection(ctx, "c"); err != nil {
			return err
		}
		for i := range int32(10) {
			if err := tx.Insert(ctx, "c", doc(i, "x")); err != nil {
				return err
			}
		}
		return tx.SetIndexes(ctx, "c", []bsoncore.Document{indexSpec("v_1", false, "v")})
	})
	commitAs(t, d, "ten")
	if _, err := d.CreateTag(ctx, "v1", Revision{Branch: DefaultBranch}, "first"); err != nil {
		t.Fatal(err)
	}
	if _, err := d.CreateBranch(ctx, "f", Revision{Branch: DefaultBranch}); err != nil {
		t.Fatal(err)
	}
	if err := d.WriteBranch(ctx, "f", func(tx *Tx) error { return tx.Insert(ctx, "c", doc(10, "f")) }); err != nil {
		t.Fatal(err)
	}
	if err := d.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	insertOne(t, d, 11)
	return crashCopy(t, dir), e
}

func TestInspectReportsADataDirectory(t *testing.T) {
	dir, _ := inspectFixture(t)
	rep, err := Inspect(ctx, dir, InspectOptions{Check: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Databases) != 1 || rep.Databases[0].Name != "db" {
		t.Fatalf("databases %+v", rep.Databases)
	}
	db := rep.Databases[0]
	if db.Err != nil || db.Store != "table files" {
		t.Fatalf("db: store %q, %v", db.Store, db.Err)
	}
	docs := map[string]int{}
	for _, b := range db.Branches {
		if b.RootVersion != 2 || len(b.Collections) != 1 {
			t.Fatalf("branch %s: %+v", b.Name, b)
		}
		c := b.Collections[0]
		docs[b.Name] = c.Documents
		if len(c.Indexes) != 1 || c.Indexes[0].Name != "v_1" || c.Indexes[0].Entries != c.Documents {
			t.Errorf("branch %s: indexes %+v for %d documents", b.Name, c.Indexes, c.Documents)
		}
	}
	// The write after the checkpoint is in the log, not in main's root.
	if docs["main"] != 10 || docs["f"] != 11 || len(docs) != 2 {
		t.Errorf("documents by branch %v, want main 10 and f 11", docs)
	}
	if len(db.Tags) != 1 || db.Tags[0].Name != "v1" {
		t.Errorf("tags %+v", db.Tags)
	}
	last := db.Records[len(db.Records)-1]
	if !strings.Contains(last.Summary, "branch main: put c x1") {
		t.Errorf("last log record %+v", last)
	}
	if db.Check == nil || len(db.Check.Problems) != 0 || db.Check.Chunks == 0 {
		t.Errorf("check %+v", db.Check)
	}
	var formats []string
	for _, f := range rep.Files {
		formats = append(formats, f.Format)
		if f.Err != nil || f.Version != 1 {
			t.Errorf("file %+v", f)
		}
	}
	if !strings.Contains(strings.Join(formats, ","), "change log segment") {
		t.Errorf("files %v", formats)
	}
}

func TestInspectRefusesARunningServersDirectory(t *testing.T) {
	_, e := inspectFixture(t)
	if _, err := Inspect(ctx, e.Dir(), InspectOptions{}); !errors.Is(err, ErrDataDirLocked) {
		t.Errorf("Inspect under a running engine: %v, want ErrDataDirLocked", err)
	}
}

// TestCheckFindsDamagedChunks: bytes changed inside a table file make
// the check report problems instead of a clean store.
func TestCheckFindsDamagedChunks(t *testing.T) {
	dir, _ := inspectFixture(t)
	files, err := filepath.Glob(filepath.Join(dir, "db", "*"))
	if err != nil {
		t.Fatal(err)
	}
	var biggest string
	var size int64
	for _, f := range files {
		if st, err := os.Stat(f); err == nil && st.Mode().IsRegular() && len(filepath.Base(f)) == 32 && st.Size() > size {
			biggest, size = f, st.Size()
		}
	}
	if biggest == "" {
		t.Fatalf("no table file among %v", files)
	}
	data, err := os.ReadFile(biggest)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(data)/3; i++ {
		data[i] ^= 0x5a
	}
	if err := os.WriteFile(biggest, data, 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := Inspect(ctx, dir, InspectOptions{Check: true})
	if err != nil {
		t.Fatal(err)
	}
	db := rep.Databases[0]
	if db.Check == nil || len(db.Check.Problems) == 0 {
		t.Errorf("a damaged table file passed the check: %+v", db.Check)
	}
	t.Logf("error %v; check %+v", db.Err, db.Check)
}
