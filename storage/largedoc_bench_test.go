package storage

import (
	"io"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/rs/zerolog"

	"github.com/dumbodb/dumbodb/storage/doctree"
	"testing"
)

// BenchmarkLargeDocWrite writes a 1 MB ordinal, changed in one field each
// time, into a real chunk store: as a doctree through the database's
// Writer (which skips the nodes it wrote before), as a doctree built
// afresh, and as a blob (go test -bench LargeDocWrite ./storage/).
func BenchmarkLargeDocWrite(b *testing.B) {
	e, err := Open(b.TempDir(), Options{}, zerolog.New(io.Discard))
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	d, _ := e.Database(ctx, "db", true)
	doc := vonNeumann(16)
	for name, writer := range map[string]func() *docWriter{
		"doctree":       func() *docWriter { return d.docs },
		"doctree-fresh": func() *docWriter { return &docWriter{threshold: 1, trees: doctree.NewWriter(d.ns)} },
		"blob":          func() *docWriter { return nil },
	} {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(doc)))
			for i := 0; i < b.N; i++ {
				doc[7]++ // a new l each time
				if _, err := docValueTuple(ctx, d.ns, doc, writer()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkLargeDocImport inserts a 1 MB ordinal and commits, with and
// without doctrees (go test -bench LargeDocImport ./storage/).
func BenchmarkLargeDocImport(b *testing.B) {
	doc := setField(vonNeumann(16), "_id", bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, 0)})
	for name, threshold := range map[string]int{"doctree": 0, "blob": -1} {
		b.Run(name, func(b *testing.B) {
			e, err := Open(b.TempDir(), Options{LargeDocThreshold: threshold}, zerolog.New(io.Discard))
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
			d, _ := e.Database(ctx, "db", true)
			b.SetBytes(int64(len(doc)))
			for i := 0; i < b.N; i++ {
				doc = setField(doc, "_id", bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, int32(i))})
				put(b, d, "main", doc)
				if _, err := d.Commit(ctx, "main", CommitOptions{Message: "import"}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
