package doctree

import (
	"bytes"
	"testing"
)

// TestIndexEncoding: every index round-trips, and byte order is numeric
// order, across each width's boundaries.
func TestIndexEncoding(t *testing.T) {
	var cases []int
	for _, edge := range []int{0, 0xF0, 0xF0 + 1<<8, 0xF0 + 1<<8 + 1<<16, 1 << 24} {
		for d := -3; d <= 3; d++ {
			if edge+d >= 0 {
				cases = append(cases, edge+d)
			}
		}
	}
	for i := 0; i < 70000; i += 97 {
		cases = append(cases, i)
	}
	var prev []byte
	prevN := -1
	for _, n := range cases {
		enc := appendIndex(nil, n)
		got, w, err := readIndex(enc)
		if err != nil || got != n || w != len(enc) {
			t.Fatalf("%d: encoded %x, decoded %d (width %d, %v)", n, enc, got, w, err)
		}
		if prev != nil && (bytes.Compare(prev, enc) < 0) != (prevN < n) && prevN != n {
			t.Fatalf("order: %d (%x) vs %d (%x)", prevN, prev, n, enc)
		}
		prev, prevN = enc, n
	}
}
