package doctree

import (
	"context"
	"fmt"
	"testing"

	"github.com/dolthub/dolt/go/store/prolly/tree"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

func ordinal(n int) []byte {
	doc := bsoncore.NewDocumentBuilder().AppendInt32("l", 0).Build()
	for i := 0; i < n; i++ {
		b := bsoncore.NewDocumentBuilder().AppendInt32("l", int32(i+1))
		els, _ := doc.Elements()
		for _, el := range els[1:] {
			b.AppendValue(el.Key(), el.Value())
		}
		doc = b.AppendDocument(fmt.Sprintf("k%d", i), doc).Build()
	}
	return doc
}

// BenchmarkBuild writes a 1 MB ordinal as a doctree (go test -bench Build
// ./storage/doctree/).
func BenchmarkBuild(b *testing.B) {
	ctx := context.Background()
	ns := tree.NewTestNodeStore()
	doc := ordinal(16)
	b.SetBytes(int64(len(doc)))
	for i := 0; i < b.N; i++ {
		if _, err := Build(ctx, ns, doc); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDocument reads a 1 MB ordinal back whole.
func BenchmarkDocument(b *testing.B) {
	ctx := context.Background()
	ns := tree.NewTestNodeStore()
	doc := ordinal(16)
	m, err := Build(ctx, ns, doc)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(doc)))
	for i := 0; i < b.N; i++ {
		if _, err := FromMap(m).Document(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
