package storage

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"slices"
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
	// Positions stay: b leaves a tombstone at 2, d comes after c at 4.
	if next.find("d") != 4 || next.find("b") != -1 || next.find("c") != 3 {
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

// TestRopeSplicesMatchAModel: random replacements, removals and appends
// on a rope of several blocks, against a model of the document's fields:
// after each version the rope's bytes are the model's, every name is
// found where it should be, and the version's field record, applied to
// the previous bytes, gives the same bytes (it turns positions, with
// their tombstones, into document indexes).
func TestRopeSplicesMatchAModel(t *testing.T) {
	m := &fieldModel{}
	for f := range 300 {
		m.set(fmt.Sprint("f", f), strings.Repeat("x", f%50))
	}
	rope, err := newRope(m.bytes(1))
	if err != nil || rope == nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(3))
	for step := range 2000 {
		before := rope.bytes()
		var splices []elemSplice
		var appended []bsoncore.Element
		for _, name := range pickNames(rng, 1+rng.Intn(4)) {
			p := rope.find(name)
			switch {
			case p >= 0 && rng.Intn(3) == 0:
				splices = append(splices, elemSplice{at: p, del: 1})
				m.unset(name)
			case p >= 0:
				v := fmt.Sprint(step)
				splices = append(splices, elemSplice{at: p, del: 1, ins: []bsoncore.Element{bsoncore.AppendStringElement(nil, name, v)}})
				m.set(name, v)
			default:
				v := fmt.Sprint("new ", step)
				appended = append(appended, bsoncore.AppendStringElement(nil, name, v))
				m.set(name, v)
			}
		}
		slices.SortFunc(splices, func(a, b elemSplice) int { return a.at - b.at })
		if appended != nil {
			splices = append(splices, elemSplice{at: rope.n, ins: appended})
		}
		next := rope.splice(splices)
		want := m.bytes(1)
		if !bytes.Equal(next.bytes(), want) {
			t.Fatalf("step %d: the rope's bytes differ from the model", step)
		}
		s, sum := encodeFieldSplices(rope, splices)
		if got, err := applyFieldSplices(before, s, len(before), sum); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("step %d: the field record gives other bytes (%v)", step, err)
		}
		for _, name := range m.names {
			if p := next.find(name); p < 0 || !elementNamed(next.at(p), name) {
				t.Fatalf("step %d: %s not found", step, name)
			}
		}
		if next.find("absent") >= 0 {
			t.Fatalf("step %d: a name never set is found", step)
		}
		rope = next
	}
	if rope.n-rope.indexed > ropeTailMax || rope.n < 400 {
		t.Fatalf("%d positions, %d indexed: the test did not append past the index", rope.n, rope.indexed)
	}
}

// pickNames picks n distinct names among f0 to f599.
func pickNames(rng *rand.Rand, n int) []string {
	var out []string
	for len(out) < n {
		name := fmt.Sprint("f", rng.Intn(600))
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out
}
