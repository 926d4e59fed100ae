package server

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/dumbodb/dumbodb/storage"

	"github.com/rs/zerolog"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// TestTTLPassReopensOnlyDatabasesWithTTLIndexes: after a restart the first
// TTL pass opens each database once, to learn its catalog, and closes it
// again at once; later passes reopen only the database with a TTL index,
// whose expired documents they delete.
func TestTTLPassReopensOnlyDatabasesWithTTLIndexes(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	now := time.Now()
	e := openIdleEngine(t, dir)
	ttlIndex := bsoncore.NewDocumentBuilder().AppendInt32("v", 2).
		AppendDocument("key", bsoncore.NewDocumentBuilder().AppendInt32("at", 1).Build()).
		AppendString("name", "at_1").AppendInt32("expireAfterSeconds", 60).Build()
	fill(t, e, "plain", nil, now.Add(-time.Hour))
	fill(t, e, "ttl", ttlIndex, now.Add(-time.Hour))
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}

	e = openIdleEngine(t, dir)
	s := New(Config{}, e, zerolog.Nop(), NewLogRing(16))
	s.expireAll(ctx, now)
	if st := e.DatabaseStats(); st.Open != 0 || st.Opens != 2 {
		t.Fatalf("after the first pass: %+v, want both opened once and closed", st)
	}
	s.expireAll(ctx, now)
	if st := e.DatabaseStats(); st.Open != 0 || st.Opens != 3 {
		t.Fatalf("after the second pass: %+v, want only ttl reopened, and closed", st)
	}
	for name, want := range map[string]int{"plain": 1, "ttl": 0} {
		if n := count(t, e, name); n != want {
			t.Errorf("%s holds %d documents, want %d", name, n, want)
		}
	}
}

func openIdleEngine(t *testing.T, dir string) *storage.Engine {
	t.Helper()
	e, err := storage.Open(dir, storage.Options{IdleDatabaseTimeout: time.Hour, Language: StorageLanguage()}, zerolog.New(io.Discard))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// fill creates database name with collection c, index spec (when given)
// and one document whose field at is the date at.
func fill(t *testing.T, e *storage.Engine, name string, spec bsoncore.Document, at time.Time) {
	t.Helper()
	ctx := context.Background()
	d, err := e.Database(ctx, name, true)
	if err != nil {
		t.Fatal(err)
	}
	err = d.Write(ctx, func(tx *storage.Tx) error {
		if _, err := tx.EnsureCollection(ctx, "c"); err != nil {
			return err
		}
		if spec != nil {
			if err := tx.SetIndexes(ctx, "c", []bsoncore.Document{spec}); err != nil {
				return err
			}
		}
		return tx.Insert(ctx, "c", bsoncore.NewDocumentBuilder().AppendInt32("_id", 1).
			AppendDateTime("at", at.UnixMilli()).Build())
	})
	if err != nil {
		t.Fatal(err)
	}
}

func count(t *testing.T, e *storage.Engine, name string) int {
	t.Helper()
	ctx := context.Background()
	d, err := e.Database(ctx, name, false)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := d.BranchSnapshot(ctx, storage.DefaultBranch)
	if err != nil {
		t.Fatal(err)
	}
	it, err := snap.Scan(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, err = it.Next(ctx); err == nil; _, err = it.Next(ctx) {
		n++
	}
	if !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
	return n
}
