package wire

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// bigMsg is an OP_MSG whose body holds a string of n bytes.
func bigMsg(t *testing.T, n int) []byte {
	body := bsoncore.NewDocumentBuilder().AppendString("s", string(make([]byte, n))).Build()
	return encode(t, 1, 0, &Msg{Body: body}, CompressorNoop)
}

// TestBudgetBoundsMessagesInFlight: messages arriving at once share the
// budget past their free share; a message that would pass it fails with
// ErrOverBudget, and releasing makes room again. A message holds every
// array its buffer grew through (garbage until the collector runs):
// 1 and 2 MiB, and the 4 MiB (rounded up to pages) it fits in.
func TestBudgetBoundsMessagesInFlight(t *testing.T) {
	b := NewBudget(16 << 20)
	msg := bigMsg(t, 4<<20)
	_, _, _, held1, err := ReadBudgeted(bytes.NewReader(msg), b)
	if err != nil {
		t.Fatal(err)
	}
	if grown := (1+2+4)<<20 - freePerMessage; held1 < grown || held1 > 2*len(msg) || b.Used() != int64(held1) {
		t.Fatalf("held %d, budget used %d; want the arrays grown through, %d or a little more", held1, b.Used(), grown)
	}
	// A second large message stalls half-way: what it got so far counts.
	_, _, _, held2, err := ReadBudgeted(io.LimitReader(bytes.NewReader(msg), 2<<20), b)
	if !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, ErrOverBudget) {
		t.Fatalf("stalled read: %v", err)
	}
	_, _, _, held3, err := ReadBudgeted(bytes.NewReader(msg), b)
	if !errors.Is(err, ErrOverBudget) {
		t.Fatalf("third message: %v, want ErrOverBudget (used %d)", err, b.Used())
	}
	// Small messages are free even now.
	small := bigMsg(t, 1000)
	if _, _, _, held, err := ReadBudgeted(bytes.NewReader(small), b); err != nil || held != 0 {
		t.Fatalf("small message: held %d, %v", held, err)
	}
	b.Release(held1)
	b.Release(held2)
	b.Release(held3)
	if b.Used() != 0 {
		t.Fatalf("used %d after releasing everything", b.Used())
	}
	if _, _, _, held, err := ReadBudgeted(bytes.NewReader(msg), b); err != nil {
		t.Fatalf("after release: %v", err)
	} else {
		b.Release(held)
	}
}
