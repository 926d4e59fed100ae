package storage

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/dolthub/dolt/go/store/chunks"
	"github.com/dolthub/dolt/go/store/hash"
	"github.com/dolthub/dolt/go/store/types"
)

// Outboxes (docs/format/remotes.md, "Outboxes"): a push to an s3://
// remote first has Dolt's puller write the table files the remote lacks
// into a directory of the pushing server's own, then uploads them one by
// one, each only if the bucket lacks it, and adds them to the remote's
// manifest together. A push cut off keeps its outbox; the push of the
// same commits done again uploads only the files the bucket still lacks.

// outboxReady lists an outbox's table files once the puller has written
// them all.
const outboxReady = "ready.json"

// outboxFile is one table file of an outbox.
type outboxFile struct {
	ID          string `json:"id"`
	Chunks      int    `json:"chunks"`
	Size        int64  `json:"size"`
	SplitOffset uint64 `json:"splitOffset"`
}

// outboxList is what outboxReady holds.
type outboxList struct {
	Files  []outboxFile `json:"files"`
	Chunks uint64       `json:"chunks"`
	Bytes  uint64       `json:"bytes"`
}

// sendThroughOutbox pushes what addrs reach in local and the remote lacks
// through an outbox under root.
func (r *chunkStoreRemote) sendThroughOutbox(ctx context.Context, local chunks.ChunkStore, addrs []hash.Hash) (TransferStats, error) {
	dir := filepath.Join(r.outboxRoot, "out-"+outboxID(r.url, addrs))
	list, err := readOutbox(dir)
	if err != nil {
		if list, err = r.fillOutbox(ctx, dir, local, addrs); err != nil {
			return TransferStats{}, err
		}
	}
	st := TransferStats{Chunks: list.Chunks, Bytes: list.Bytes}
	if len(list.Files) == 0 {
		return st, os.RemoveAll(dir)
	}
	if st.Resumed, err = r.uploadOutbox(ctx, dir, list); err != nil {
		return st, err
	}
	if err := r.addOutbox(ctx, list); err != nil {
		return st, err
	}
	return st, os.RemoveAll(dir)
}

// outboxID names the outbox of a push by its remote and what it sends.
func outboxID(rawURL string, addrs []hash.Hash) string {
	sorted := slices.Clone(addrs)
	slices.SortFunc(sorted, func(a, b hash.Hash) int { return bytes.Compare(a[:], b[:]) })
	sum := sha256.New()
	fmt.Fprintf(sum, "%s\x00", RedactURL(rawURL))
	for _, h := range sorted {
		sum.Write(h[:])
	}
	return hex.EncodeToString(sum.Sum(nil)[:8])
}

// readOutbox reads a complete outbox's list; an outbox the puller had not
// finished is none.
func readOutbox(dir string) (outboxList, error) {
	var list outboxList
	data, err := os.ReadFile(filepath.Join(dir, outboxReady))
	if err == nil {
		err = json.Unmarshal(data, &list)
	}
	return list, err
}

// fillOutbox has the puller write into dir the table files of what addrs
// reach and the remote lacks, then records them as ready.
func (r *chunkStoreRemote) fillOutbox(ctx context.Context, dir string, local chunks.ChunkStore, addrs []hash.Hash) (outboxList, error) {
	os.RemoveAll(dir) // an outbox the puller did not finish
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return outboxList{}, err
	}
	sink := &outboxSink{ChunkStore: r.cs, dir: dir}
	st, err := copyChunks(ctx, local, sink, addrs)
	if err != nil {
		return outboxList{}, err
	}
	list := outboxList{Files: sink.files, Chunks: st.Chunks, Bytes: st.Bytes}
	data, err := json.Marshal(list)
	if err != nil {
		return list, err
	}
	return list, writeFileSynced(filepath.Join(dir, outboxReady), data)
}

// uploadOutbox writes into the remote each file of the outbox it lacks;
// it returns the bytes of the files it already had.
func (r *chunkStoreRemote) uploadOutbox(ctx context.Context, dir string, list outboxList) (uint64, error) {
	var had uint64
	for _, f := range list.Files {
		ok, err := r.hasTableFile(ctx, f.ID)
		if err != nil {
			return had, err
		}
		if ok {
			had += uint64(f.Size)
			continue
		}
		err = r.cs.WriteTableFile(ctx, f.ID, f.SplitOffset, f.Chunks, nil, func() (io.ReadCloser, uint64, error) {
			fh, err := os.Open(filepath.Join(dir, f.ID))
			return fh, uint64(f.Size), err
		})
		if err != nil {
			return had, err
		}
	}
	return had, nil
}

// addOutbox adds the outbox's files to the remote's manifest in one
// update, which checks that every address their chunks hold is there.
func (r *chunkStoreRemote) addOutbox(ctx context.Context, list outboxList) error {
	walk, err := types.WalkAddrsForChunkStore(r.cs)
	if err != nil {
		return err
	}
	files := map[string]int{}
	for _, f := range list.Files {
		files[f.ID] = f.Chunks
	}
	return r.cs.AddTableFilesToManifest(ctx, files, func(c chunks.Chunk) chunks.GetAddrsCb {
		return func(ctx context.Context, ins hash.HashSet, exists chunks.PendingRefExists) error {
			return walk(c, func(h hash.Hash, _ bool) error {
				if !exists(h) {
					ins.Insert(h)
				}
				return nil
			})
		}
	})
}

// writeFileSynced writes a small file durably.
func writeFileSynced(path string, data []byte) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	return errors.Join(err, f.Close())
}

// outboxSink is the puller's sink for an outbox: it asks the remote what
// it lacks and keeps the table files it is given in the outbox.
type outboxSink struct {
	chunks.ChunkStore // the remote's: HasMany and Version
	dir               string
	mu                sync.Mutex
	files             []outboxFile
}

// errOutboxOnly: a call the outbox does not take.
var errOutboxOnly = errors.New("an outbox takes table files only")

func (s *outboxSink) Sources(context.Context) (chunks.TableFileSources, error) {
	return chunks.TableFileSources{}, errOutboxOnly
}

func (s *outboxSink) Size(context.Context) (uint64, error) { return 0, nil }

func (s *outboxSink) WriteTableFile(_ context.Context, id string, splitOffset uint64, numChunks int, _ []byte, getRd func() (io.ReadCloser, uint64, error)) error {
	rd, _, err := getRd()
	if err != nil {
		return err
	}
	defer rd.Close()
	f, err := os.Create(filepath.Join(s.dir, id))
	if err != nil {
		return err
	}
	n, err := io.Copy(f, rd)
	if err == nil {
		err = f.Sync()
	}
	if err = errors.Join(err, f.Close()); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.files = append(s.files, outboxFile{ID: id, Chunks: numChunks, Size: n, SplitOffset: splitOffset})
	return nil
}

// AddTableFilesToManifest is where the puller ends: the files are all
// written; sendThroughOutbox adds them to the remote.
func (s *outboxSink) AddTableFilesToManifest(context.Context, map[string]int, chunks.GetAddrsCurry) error {
	return nil
}

func (s *outboxSink) PruneTableFiles(context.Context) error { return nil }

func (s *outboxSink) Commit(context.Context, hash.Hash, hash.Hash) (bool, error) {
	return false, errOutboxOnly
}

func (s *outboxSink) SupportedOperations() chunks.TableFileStoreOps {
	return chunks.TableFileStoreOps{CanWrite: true}
}
