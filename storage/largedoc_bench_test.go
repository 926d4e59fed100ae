package storage

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"io"

	"github.com/rs/zerolog"
	"testing"
)

// BenchmarkLargeDocWrite writes a 1 MB ordinal as a doctree and as a blob
// into a real chunk store (go test -bench LargeDocWrite ./storage/).
func BenchmarkLargeDocWrite(b *testing.B) {
	e, err := Open(b.TempDir(), Options{}, zerolog.New(io.Discard))
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	d, _ := e.Database(ctx, "db", true)
	doc := vonNeumann(16)
	for name, threshold := range map[string]int{"doctree": 1, "blob": -1} {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(doc)))
			for i := 0; i < b.N; i++ {
				doc[7]++ // a new l each time, as an import writes new documents
				if _, err := docValueTuple(ctx, d.ns, doc, threshold); err != nil {
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
