package storage

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Uploads: data a client sends a server in pieces (a bundle for
// dumboBundleRestore, documents for dumboBulkLoad) gathers in a file
// under the transfer caches, named by its kind, the target database and
// the upload's id, until the command that uses it takes it; an upload
// cut off keeps what arrived, and one untouched for a week goes with the
// stale caches.

// The kinds of uploads.
const (
	UploadBundle = "bundle-in-"
	UploadBulk   = "bulk-in-"
)

// ErrUpload: a piece that does not follow what the upload holds, or an
// upload that does not exist.
var ErrUpload = errors.New("upload")

func (e *Engine) uploadPath(kind, db, id string) string {
	sum := sha256.Sum256([]byte(db + "\x00" + id))
	return filepath.Join(e.dir, transferCacheDir, kind+hex.EncodeToString(sum[:8]))
}

// AppendUpload adds data to upload id of database db at offset, which
// must be what the upload holds (0 starts it again), and returns its new
// size.
func (e *Engine) AppendUpload(kind, db, id string, offset int64, data []byte) (int64, error) {
	_, leave, _ := e.gate.enter(context.Background()) // waits while frozen
	defer leave()
	path := e.uploadPath(kind, db, id)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return 0, err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	if offset != 0 && offset != st.Size() {
		return st.Size(), fmt.Errorf("%w %s holds %d bytes; a piece at offset %d does not follow", ErrUpload, id, st.Size(), offset)
	}
	if err := f.Truncate(offset); err != nil {
		return 0, err
	}
	if _, err := f.WriteAt(data, offset); err != nil {
		return 0, diskFull(err)
	}
	return offset + int64(len(data)), nil
}

// TakeUpload opens upload id of database db for reading and removes its
// name: closing the file frees it, whether what used it succeeded or
// not (the client then sends it again).
func (e *Engine) TakeUpload(ctx context.Context, kind, db, id string) (*os.File, error) {
	_, leave, err := e.gate.enter(ctx)
	if err != nil {
		return nil, err
	}
	defer leave()
	path := e.uploadPath(kind, db, id)
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w %s: none for database %s", ErrUpload, id, db)
	}
	if err != nil {
		return nil, err
	}
	os.Remove(path)
	return f, nil
}
