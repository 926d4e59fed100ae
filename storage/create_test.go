package storage

import (
	"fmt"
	"testing"
)

// BenchmarkCreateDatabase is the first durable insert into a new database
// through the engine: Engine.Database creating it, then one Write that
// creates its collection and inserts a document (what the insert command
// does). docs/design/resources.md, "Creating a database", has the figures.
func BenchmarkCreateDatabase(b *testing.B) {
	e, err := Open(b.TempDir(), Options{}, discardLog())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { e.Close() })
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
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
