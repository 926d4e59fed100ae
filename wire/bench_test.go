package wire

import (
	"bytes"
	"io"
	"testing"
)

func BenchmarkReadMsg(b *testing.B) {
	raw := encode(b, 1, 0, insertMsg(b, 1), CompressorNoop)
	r := bytes.NewReader(raw)
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		r.Reset(raw)
		if _, _, _, err := Read(r); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkWriteMsg(b *testing.B) {
	msg := insertMsg(b, 1)
	b.SetBytes(int64(len(encode(b, 1, 0, msg, CompressorNoop))))
	b.ReportAllocs()
	for b.Loop() {
		if err := Write(io.Discard, 1, 0, msg, CompressorNoop); err != nil {
			b.Fatal(err)
		}
	}
}
