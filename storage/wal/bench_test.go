package wal

import (
	"io"
	"testing"

	"github.com/rs/zerolog"
)

// BenchmarkAppendDurable is one writer appending 256-byte records and
// waiting for each to be synced.
func BenchmarkAppendDurable(b *testing.B) {
	w, err := Open(b.TempDir(), Options{}, zerolog.New(io.Discard))
	if err != nil {
		b.Fatal(err)
	}
	w.Replay(0, 0, func(uint64, []byte) error { return nil })
	w.Start()
	defer w.Close()
	rec := make([]byte, 256)
	appendAndWait := func() {
		lsn, err := w.Append(rec)
		if err == nil {
			err = w.WaitDurable(lsn)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	appendAndWait() // creates the first segment
	w.bg.Wait()     // and its spare
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		appendAndWait()
	}
}
