package storage

import (
	"encoding/binary"
	"errors"
	"github.com/dumbodb/dumbodb/internal/formatversion"
	"os"
	"path/filepath"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// setFileVersion rewrites the format version in the header of the file at
// path.
func setFileVersion(t *testing.T, path string, v uint32) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	binary.LittleEndian.PutUint32(data[8:], v)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// openNewer opens the engine on dir and then database db, and returns
// the first error.
func openNewer(dir string) error {
	e, err := Open(dir, Options{}, discardLog())
	if err != nil {
		return err
	}
	defer e.Close()
	_, err = e.Database(ctx, "db", false)
	return err
}

// TestNewerServerFilesAreRefused: the change log, the decision log and a
// database's retry file, each with a format version newer than this
// build's, are refused with ErrNewer rather than read or taken for torn.
func TestNewerServerFilesAreRefused(t *testing.T) {
	for _, c := range []struct {
		name string
		path func(dir string) string
	}{
		{"change log", func(dir string) string { return filepath.Join(dir, "changes", "00000000000000000001.chg") }},
		{"decision log", func(dir string) string { return filepath.Join(dir, decisionLogName) }},
		{"retry file", func(dir string) string { return filepath.Join(dir, "db", "retry") }},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			e := openEngine(t, dir, Options{})
			d, err := e.Database(ctx, "db", true)
			if err != nil {
				t.Fatal(err)
			}
			insertRetryable(t, d, 1, 0, 1, bsoncore.NewDocumentBuilder().Build())
			if err := d.Checkpoint(ctx); err != nil {
				t.Fatal(err)
			}
			if err := e.Close(); err != nil {
				t.Fatal(err)
			}
			path := c.path(dir)
			if c.name == "decision log" {
				h := formatversion.DecisionLog.Header()
				if err := os.WriteFile(path, append(h[:], 0, 0, 0, 0), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := openNewer(dir); err != nil {
				t.Fatalf("before the version changed: %v", err)
			}
			setFileVersion(t, path, 99)
			if err := openNewer(dir); !errors.Is(err, formatversion.ErrNewer) {
				t.Errorf("%s of version 99: %v, want ErrNewer", c.name, err)
			}
		})
	}
}
