package storage

import (
	"errors"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// TestFieldRecordRoundTrip: a field record's splices, encoded from a rope
// and applied to the base's bytes, give the rope's new document; a base
// other than the one it was made from, damaged splices and inserted
// bytes that are not whole elements fail with errPatchMismatch.
func TestFieldRecordRoundTrip(t *testing.T) {
	base := bsoncore.NewDocumentBuilder().AppendInt32("_id", 1).AppendString("a", strings.Repeat("a", 100)).
		AppendString("b", "b").AppendString("c", "c").Build()
	rope, err := newRope(base)
	if err != nil {
		t.Fatal(err)
	}
	newA := bsoncore.AppendStringElement(nil, "a", "A")
	newD := bsoncore.AppendInt64Element(nil, "d", 4)
	splices := []elemSplice{
		{at: 1, del: 1, ins: []bsoncore.Element{newA}},
		{at: 2, del: 1},
		{at: 4, ins: []bsoncore.Element{newD}},
	}
	next := rope.splice(splices)
	want := bsoncore.NewDocumentBuilder().AppendInt32("_id", 1).AppendString("a", "A").
		AppendString("c", "c").AppendInt64("d", 4).Build()
	if got := next.bytes(); string(got) != string(want) {
		t.Fatalf("the rope's document: %v, want %v", bsoncore.Document(got), want)
	}
	if next.find("d") != 3 || next.find("b") != -1 || next.find("c") != 2 {
		t.Fatalf("names after the splices: d %d, b %d, c %d", next.find("d"), next.find("b"), next.find("c"))
	}
	s, sum := encodeFieldSplices(rope, splices)
	got, err := applyFieldSplices(base, s, len(base), sum)
	if err != nil || string(got) != string(want) {
		t.Fatalf("replayed: %v, %v", bsoncore.Document(got), err)
	}
	other := bsoncore.NewDocumentBuilder().AppendInt32("_id", 1).AppendString("a", strings.Repeat("z", 100)).
		AppendString("b", "b").AppendString("c", "c").Build()
	bad := []struct {
		name string
		base []byte
		s    []byte
	}{
		{"a base of another length", want, s},
		{"a base with other removed bytes", other, s},
		{"splices past the base", base, append([]byte{9, 1, 0}, s...)},
		{"a truncated insertion", base, s[:5]},
		{"inserted bytes that are not an element", base, []byte{0, 0, 3, 'x', 'y', 'z'}},
	}
	for _, b := range bad {
		if _, err := applyFieldSplices(b.base, b.s, len(base), sum); !errors.Is(err, errPatchMismatch) {
			t.Errorf("%s: %v", b.name, err)
		}
	}
}
