package wire

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"sync"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

func TestRoundTrip(t *testing.T) {
	for name, msg := range sampleMessages(t) {
		for _, comp := range allCompressors {
			t.Run(fmt.Sprintf("%s/%v", name, comp), func(t *testing.T) {
				raw := encode(t, 42, 7, msg, comp)
				h, got, gotComp, err := Read(bytes.NewReader(raw))
				if err != nil {
					t.Fatalf("Read: %v", err)
				}
				wantOp := msg.opCode()
				if comp != CompressorNoop {
					wantOp = OpCompressed
				}
				wantHeader := Header{MessageLength: int32(len(raw)), RequestID: 42, ResponseTo: 7, OpCode: wantOp}
				if h != wantHeader {
					t.Errorf("header = %+v, want %+v", h, wantHeader)
				}
				if gotComp != comp {
					t.Errorf("compressor = %v, want %v", gotComp, comp)
				}
				if !reflect.DeepEqual(got, msg) {
					t.Errorf("message = %#v, want %#v", got, msg)
				}
			})
		}
	}
}

func TestRoundTripLargeMessage(t *testing.T) {
	// Several MB, so Read takes the grow-as-data-arrives path and zlib
	// decompression crosses its first allocation step.
	msg := insertMsg(t, 40_000)
	for _, comp := range allCompressors {
		t.Run(comp.String(), func(t *testing.T) {
			raw := encode(t, 1, 0, msg, comp)
			_, got, _, err := Read(bytes.NewReader(raw))
			if err != nil {
				t.Fatalf("Read: %v", err)
			}
			if !reflect.DeepEqual(got, msg) {
				t.Error("large message did not round-trip")
			}
		})
	}
}

func TestReadConsumesExactlyOneMessage(t *testing.T) {
	var stream bytes.Buffer
	msgs := []Message{insertMsg(t, 2), &Msg{Body: mustDoc(t, "ping", int32(1))}}
	for i, m := range msgs {
		if err := Write(&stream, int32(i), 0, m, CompressorZstd); err != nil {
			t.Fatal(err)
		}
	}
	for i, want := range msgs {
		h, got, _, err := Read(&stream)
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if h.RequestID != int32(i) || !reflect.DeepEqual(got, want) {
			t.Errorf("message %d = %+v %#v, want request %d %#v", i, h, got, i, want)
		}
	}
	if _, _, _, err := Read(&stream); err != io.EOF {
		t.Fatalf("Read at a clean end = %v, want io.EOF itself", err)
	}
}

func TestWriteChecksum(t *testing.T) {
	raw := encode(t, 1, 0, &Msg{Flags: FlagChecksumPresent, Body: mustDoc(t, "ping", int32(1))}, CompressorNoop)
	end := len(raw) - 4
	if got, want := le.Uint32(raw[end:]), crc32c(raw[:end]); got != want {
		t.Fatalf("checksum = %#x, want %#x", got, want)
	}
}

func TestWriteSingleWrite(t *testing.T) {
	for _, comp := range allCompressors {
		w := &countingWriter{}
		if err := Write(w, 1, 0, insertMsg(t, 5), comp); err != nil {
			t.Fatal(err)
		}
		if w.calls != 1 {
			t.Errorf("%v: %d Write calls, want 1", comp, w.calls)
		}
	}
}

type countingWriter struct{ calls int }

func (w *countingWriter) Write(p []byte) (int, error) { w.calls++; return len(p), nil }

func TestWriteErrors(t *testing.T) {
	body := mustDoc(t, "ping", int32(1))
	big := bsoncore.NewDocumentBuilder().AppendBinary("b", 0, make([]byte, 10<<20)).Build()
	huge := []Sequence{{Identifier: "d", Documents: []bsoncore.Document{big, big, big, big, big}}}
	tests := map[string]struct {
		msg  Message
		comp CompressorID
		want string
	}{
		"nil message":        {nil, CompressorNoop, "nil"},
		"nil *Msg":           {(*Msg)(nil), CompressorNoop, "nil"},
		"nil body":           {&Msg{}, CompressorNoop, "body"},
		"bad body prefix":    {&Msg{Body: body[:len(body)-1]}, CompressorNoop, "length prefix"},
		"NUL in identifier":  {&Msg{Body: body, Sequences: []Sequence{{Identifier: "a\x00b"}}}, CompressorNoop, "NUL"},
		"bad sequence doc":   {&Msg{Body: body, Sequences: []Sequence{{Identifier: "d", Documents: []bsoncore.Document{{1}}}}}, CompressorNoop, `"d" document 0`},
		"NUL in collection":  {&Query{FullCollectionName: "a\x00", Query: body}, CompressorNoop, "NUL"},
		"nil query":          {&Query{FullCollectionName: "a.b"}, CompressorNoop, "query"},
		"bad reply doc":      {&Reply{Documents: []bsoncore.Document{nil}}, CompressorNoop, "document 0"},
		"unknown compressor": {&Msg{Body: body}, 9, "compressor"},
		"too large":          {&Msg{Body: body, Sequences: huge}, CompressorZstd, "exceeds"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			err := Write(&buf, 1, 0, tt.msg, tt.comp)
			var pe *ProtocolError
			if !errors.As(err, &pe) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Write error = %v, want a *ProtocolError mentioning %q", err, tt.want)
			}
			if buf.Len() != 0 {
				t.Errorf("Write wrote %d bytes despite failing", buf.Len())
			}
		})
	}
}

func TestWriteWriterError(t *testing.T) {
	err := Write(failingWriter{}, 1, 0, &Msg{Body: mustDoc(t, "a", int32(1))}, CompressorNoop)
	if !errors.Is(err, io.ErrClosedPipe) {
		t.Fatalf("Write error = %v, want it to wrap io.ErrClosedPipe", err)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, io.ErrClosedPipe }

func TestDocument(t *testing.T) {
	m := insertMsg(t, 12) // two-digit array keys too
	got, err := m.Document()
	if err != nil {
		t.Fatal(err)
	}
	if err := got.Validate(); err != nil {
		t.Fatalf("folded document is invalid: %v", err)
	}
	var want bson.D
	if err := bson.Unmarshal(m.Body, &want); err != nil {
		t.Fatal(err)
	}
	var docs bson.A
	for _, d := range m.Sequences[0].Documents {
		docs = append(docs, bson.Raw(d))
	}
	want = append(want, bson.E{Key: "documents", Value: docs})
	wantBytes, err := bson.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, wantBytes) {
		t.Fatalf("Document() = %v\nwant %v", got, bsoncore.Document(wantBytes))
	}
	if len(got) != cap(got) {
		t.Errorf("Document() sized its buffer %d for %d bytes", cap(got), len(got))
	}
	if allocs := testing.AllocsPerRun(100, func() { _, _ = m.Document() }); allocs != 1 {
		t.Errorf("Document() made %v allocations, want 1", allocs)
	}
}

func TestDocumentWithoutSequencesIsBody(t *testing.T) {
	m := &Msg{Body: mustDoc(t, "ping", int32(1))}
	got, err := m.Document()
	if err != nil || &got[0] != &m.Body[0] {
		t.Fatalf("Document() = %v, %v; want the body itself", got, err)
	}
}

func TestDocumentSeveralSequences(t *testing.T) {
	m := sampleMessages(t)["msg two sequences"].(*Msg)
	got, err := m.Document()
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := got.Lookup("updates").Array().Values(); len(n) != 1 {
		t.Errorf("updates has %d values, want 1", len(n))
	}
	if n, _ := got.Lookup("empty").Array().Values(); len(n) != 0 {
		t.Errorf("empty has %d values, want 0", len(n))
	}
	if got.Lookup("update").StringValue() != "things" {
		t.Error("body field lost")
	}
}

func TestDocumentConflicts(t *testing.T) {
	body := mustDoc(t, "insert", "c", "documents", bson.A{})
	seq := func(id string) Sequence { return Sequence{Identifier: id, Documents: []bsoncore.Document{mustDoc(t)}} }
	tests := map[string]*Msg{
		"field in body":       {Body: body, Sequences: []Sequence{seq("documents")}},
		"duplicate sequences": {Body: mustDoc(t, "insert", "c"), Sequences: []Sequence{seq("d"), seq("d")}},
		"NUL in identifier":   {Body: body, Sequences: []Sequence{seq("x\x00")}},
		"malformed body":      {Body: body[:4], Sequences: []Sequence{seq("d")}},
		"malformed document":  {Body: body, Sequences: []Sequence{{Identifier: "d", Documents: []bsoncore.Document{{5, 0}}}}},
	}
	for name, m := range tests {
		if _, err := m.Document(); err == nil {
			t.Errorf("%s: Document() succeeded", name)
		}
	}
	// The client's two mistakes are told apart, for the server's codes.
	for name, want := range map[string]SequenceError{
		"field in body":       {Identifier: "documents", InBody: true},
		"duplicate sequences": {Identifier: "d"},
	} {
		var se *SequenceError
		if _, err := tests[name].Document(); !errors.As(err, &se) || *se != want {
			t.Errorf("%s: Document() error %v, want %+v", name, err, want)
		}
	}
}

func TestCompressorByName(t *testing.T) {
	for _, c := range []CompressorID{CompressorSnappy, CompressorZlib, CompressorZstd} {
		if got, ok := CompressorByName(c.String()); !ok || got != c {
			t.Errorf("CompressorByName(%q) = %v, %v", c.String(), got, ok)
		}
	}
	for _, name := range []string{"noop", "lz4", "", "Zstd"} {
		if _, ok := CompressorByName(name); ok {
			t.Errorf("CompressorByName(%q) succeeded", name)
		}
	}
}

// TestConcurrent exercises the pooled zlib state and the shared zstd
// encoder and decoder from many goroutines (run with -race).
func TestConcurrent(t *testing.T) {
	msg := insertMsg(t, 50)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 20 {
				comp := allCompressors[(g+i)%len(allCompressors)]
				var buf bytes.Buffer
				if err := Write(&buf, int32(i), 0, msg, comp); err != nil {
					t.Error(err)
					return
				}
				_, got, _, err := Read(&buf)
				if err != nil {
					t.Error(err)
					return
				}
				if !reflect.DeepEqual(got, msg) {
					t.Errorf("%v: message changed in a concurrent round trip", comp)
				}
			}
		})
	}
	wg.Wait()
}
