package wal

import (
	"encoding/binary"
	"errors"
	"github.com/dumbodb/dumbodb/internal/formatversion"
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"

	"github.com/rs/zerolog"
)

// TestNewerSegmentIsRefused: a segment whose intact header carries a
// format version newer than this build's stops the log's replay and
// HasRecords with ErrNewer, where a torn header would end the log
// quietly and lose its records.
func TestNewerSegmentIsRefused(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "wal")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	h := segmentHeader(1)
	binary.LittleEndian.PutUint32(h[8:], formatversion.WAL.Current+1)
	binary.LittleEndian.PutUint32(h[24:], crc32.Checksum(h[:24], castagnoli))
	seg := appendRecord(append([]byte(nil), h[:]...), 1, payload(1))
	if err := os.WriteFile(filepath.Join(dir, segmentName(1)), seg, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := HasRecords(dir); !errors.Is(err, formatversion.ErrNewer) {
		t.Errorf("HasRecords: %v, want ErrNewer", err)
	}
	w, err := Open(dir, Options{}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.Replay(0, 0, func(uint64, []byte) error { return nil }); !errors.Is(err, formatversion.ErrNewer) {
		t.Errorf("Replay: %v, want ErrNewer", err)
	}
}
