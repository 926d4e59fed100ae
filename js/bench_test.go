package js

import (
	"context"
	"testing"
)

// BenchmarkCallBool is one $where call on a small document: the cost a
// $where adds per document examined.
func BenchmarkCallBool(b *testing.B) {
	e := New(Config{})
	f, err := Compile("this.a > 1 && this.s.length > 2")
	if err != nil {
		b.Fatal(err)
	}
	d := doc(b, `{"_id": 1, "a": 5, "s": "hello", "tags": ["x", "y"], "n": {"m": 1}}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.CallBool(context.Background(), "bench", f, d); err != nil {
			b.Fatal(err)
		}
	}
}
