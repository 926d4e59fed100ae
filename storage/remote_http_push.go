package storage

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sync"

	"github.com/dolthub/dolt/go/store/chunks"
	"github.com/dolthub/dolt/go/store/hash"
	"github.com/dolthub/dolt/go/store/nbs"
	"github.com/dolthub/dolt/go/store/types"
)

// Pushing to a database of another server over HTTP
// (docs/format/remote-http.md, "push"): sendChunks finds the chunks the
// database there lacks, asks which of them the server's push cache
// already holds (from a push cut off before), and uploads the rest into
// it; moveRef then asks the server to take the cached chunks and move the
// ref, which it does in one step.

// hasBatch bounds the addresses of one has request a push sends.
const hasBatch = 64 << 10

// sendChunks uploads into the server's push cache what addrs reach that
// the remote database lacks.
func (r *httpRemote) sendChunks(ctx context.Context, local chunks.ChunkStore, addrs []hash.Hash) (TransferStats, error) {
	src, ok := local.(nbs.NBSCompressedChunkStore)
	if !ok {
		return TransferStats{}, fmt.Errorf("push to %s: the local store cannot be read for a push", r.ep.display)
	}
	walk, err := types.WalkAddrsForChunkStore(local)
	if err != nil {
		return TransferStats{}, err
	}
	missing, sizes, st, err := r.missingChunks(ctx, src, walk, addrs)
	if err != nil || len(missing) == 0 {
		return st, err
	}
	r.pushID = pushID(r.db, addrs)
	toSend, err := r.notInPushCache(ctx, missing)
	if err != nil {
		return st, err
	}
	for _, h := range missing {
		st.Resumed += uint64(sizes[h])
	}
	for _, h := range toSend {
		st.Resumed -= uint64(sizes[h])
	}
	return st, r.uploadChunks(ctx, src, toSend)
}

// pushID names a push by what it sends, so that the push done again
// after a cut finds the chunks the cut one left in the server's cache.
func pushID(db string, addrs []hash.Hash) string {
	sorted := slices.Clone(addrs)
	slices.SortFunc(sorted, func(a, b hash.Hash) int { return bytes.Compare(a[:], b[:]) })
	sum := sha256.New()
	fmt.Fprintf(sum, "%s\x00", db)
	for _, h := range sorted {
		sum.Write(h[:])
	}
	return hex.EncodeToString(sum.Sum(nil)[:16])
}

// missingChunks walks the graph from addrs down, level by level, asking
// the remote which chunks it lacks and reading those from src: it
// returns them (each with its compressed size) and their count and bytes.
// A chunk the remote has is not walked below: it has what it reaches.
func (r *httpRemote) missingChunks(ctx context.Context, src nbs.NBSCompressedChunkStore, walk chunkWalk, addrs []hash.Hash) ([]hash.Hash, map[hash.Hash]uint32, TransferStats, error) {
	remote := &httpChunkStore{r: r}
	lacks := func(frontier hash.HashSet) (hash.HashSet, error) { return hasManyBatched(ctx, remote, frontier) }
	missing, sizes, st, err := walkLacking(ctx, src, walk, addrs, lacks)
	if err != nil {
		err = fmt.Errorf("push to %s: %w", r.ep.display, err)
	}
	return missing, sizes, st, err
}

// chunkWalk calls back with each address a chunk holds
// (types.WalkAddrsForChunkStore).
type chunkWalk = func(chunks.Chunk, func(hash.Hash, bool) error) error

// walkLacking walks the graph from addrs down, level by level, keeping
// the chunks that lacks reports of each level and reading those from
// src: it returns them (each with its compressed size) and their count
// and bytes. A chunk lacks leaves out is not walked below: whoever has
// it has what it reaches.
func walkLacking(ctx context.Context, src nbs.NBSCompressedChunkStore, walk chunkWalk, addrs []hash.Hash, lacks func(hash.HashSet) (hash.HashSet, error)) ([]hash.Hash, map[hash.Hash]uint32, TransferStats, error) {
	var st TransferStats
	var missing []hash.Hash
	sizes := map[hash.Hash]uint32{}
	seen := hash.NewHashSet(addrs...)
	frontier := hash.NewHashSet(addrs...)
	for len(frontier) > 0 {
		if err := ctx.Err(); err != nil { // a command's maxTimeMS or killOp
			return nil, nil, st, err
		}
		absent, err := lacks(frontier)
		if err != nil {
			return nil, nil, st, err
		}
		next := hash.HashSet{}
		var mu sync.Mutex
		var walkErr error
		found := 0
		err = src.GetManyCompressed(ctx, absent, func(_ context.Context, tc nbs.ToChunker) {
			c, err := tc.ToChunk()
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				err = walk(c, func(h hash.Hash, _ bool) error {
					if !seen.Has(h) {
						seen.Insert(h)
						next.Insert(h)
					}
					return nil
				})
			}
			if err != nil {
				walkErr = err
				return
			}
			found++
			missing = append(missing, c.Hash())
			sizes[c.Hash()] = tc.CompressedSize()
			st.Chunks++
			st.Bytes += uint64(len(c.Data()))
		})
		if err == nil {
			err = walkErr
		}
		if err == nil && found != len(absent) {
			err = fmt.Errorf("%d chunks to send: %w", len(absent)-found, errChunksAbsent)
		}
		if err != nil {
			return nil, nil, st, err
		}
		frontier = next
	}
	return missing, sizes, st, nil
}

// errChunksAbsent: a walk reached chunks its store does not hold.
var errChunksAbsent = errors.New("not in the local store")

// hasManyBatched is HasMany in requests of at most hasBatch addresses.
func hasManyBatched(ctx context.Context, cs chunks.ChunkStore, hs hash.HashSet) (hash.HashSet, error) {
	absent := hash.HashSet{}
	batch := hash.HashSet{}
	flush := func() error {
		got, err := cs.HasMany(ctx, batch)
		for h := range got {
			absent.Insert(h)
		}
		batch = hash.HashSet{}
		return err
	}
	for h := range hs {
		batch.Insert(h)
		if len(batch) == hasBatch {
			if err := flush(); err != nil {
				return nil, err
			}
		}
	}
	if len(batch) > 0 {
		if err := flush(); err != nil {
			return nil, err
		}
	}
	return absent, nil
}

// notInPushCache is the chunks of missing the server's cache of this
// push does not hold.
func (r *httpRemote) notInPushCache(ctx context.Context, missing []hash.Hash) ([]hash.Hash, error) {
	var out []hash.Hash
	for batch := range slices.Chunk(missing, hasBatch) {
		body := make([]byte, 0, len(batch)*hash.ByteLen)
		for _, h := range batch {
			body = append(body, h[:]...)
		}
		resp, err := r.ep.do(ctx, http.MethodPost, r.pushPath("/has"), bytes.NewReader(body), int64(len(body)))
		if err != nil {
			return nil, err
		}
		data, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		absent, err := parseHashBody(data)
		if err != nil {
			return nil, fmt.Errorf("remote %s: push has: %w", r.ep.display, err)
		}
		for _, h := range batch {
			if absent.Has(h) {
				out = append(out, h)
			}
		}
	}
	return out, nil
}

func (r *httpRemote) pushPath(suffix string) string {
	return url.PathEscape(r.db) + "/push/" + r.pushID + suffix
}

// uploadBatch is how many chunks one read of the local store streams.
const uploadBatch = 4096

// uploadChunks streams the chunks into the server's push cache as
// records (address, length, compressed bytes), in one request.
func (r *httpRemote) uploadChunks(ctx context.Context, src nbs.NBSCompressedChunkStore, hs []hash.Hash) error {
	if len(hs) == 0 {
		return nil
	}
	pr, pw := io.Pipe()
	go func() {
		pw.CloseWithError(writeChunkRecords(ctx, src, hs, pw))
	}()
	resp, err := r.ep.do(ctx, http.MethodPost, r.pushPath("/chunks"), pr, -1)
	pr.CloseWithError(io.ErrClosedPipe) // ends the writer if the request ended first
	if err != nil {
		return err
	}
	io.Copy(io.Discard, resp.Body)
	return resp.Body.Close()
}

// writeChunkRecords writes the chunks of hs, read from src, as records.
func writeChunkRecords(ctx context.Context, src nbs.NBSCompressedChunkStore, hs []hash.Hash, w io.Writer) error {
	var mu sync.Mutex
	var werr error
	for batch := range slices.Chunk(hs, uploadBatch) {
		err := src.GetManyCompressed(ctx, hash.NewHashSet(batch...), func(_ context.Context, tc nbs.ToChunker) {
			mu.Lock()
			defer mu.Unlock()
			if werr == nil {
				werr = writeChunkRecord(w, tc)
			}
		})
		if err == nil {
			err = werr
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// writeChunkRecord writes one chunk as a record of a chunks body.
func writeChunkRecord(w io.Writer, tc nbs.ToChunker) error {
	cc, ok := tc.(nbs.CompressedChunk)
	if !ok {
		c, err := tc.ToChunk()
		if err != nil {
			return err
		}
		cc = nbs.ChunkToCompressedChunk(c)
	}
	var rec [hash.ByteLen + 4]byte
	h := cc.Hash()
	copy(rec[:], h[:])
	binary.BigEndian.PutUint32(rec[hash.ByteLen:], uint32(len(cc.FullCompressedChunk)))
	if _, err := w.Write(rec[:]); err != nil {
		return err
	}
	_, err := w.Write(cc.FullCompressedChunk)
	return err
}

// httpRefUpdate is one update of a push.
type httpRefUpdate struct {
	Ref   string `json:"ref"`
	Old   string `json:"old"`
	New   string `json:"new"`
	Force bool   `json:"force"`
}

// httpPushRequest is the body of a push's ref update.
type httpPushRequest struct {
	Updates []httpRefUpdate `json:"updates"`
}

// moveRef asks the server to take the push's cached chunks and move one
// ref.
func (r *httpRemote) moveRef(ctx context.Context, id string, addr hash.Hash, force bool) (hash.Hash, error) {
	refs, err := r.allRefs(ctx)
	if err != nil {
		return hash.Hash{}, err
	}
	old := refs[id]
	if old == addr && !addr.IsEmpty() {
		return old, nil
	}
	if r.pushID == "" {
		r.pushID = pushID(r.db, []hash.Hash{addr})
	}
	body, err := json.Marshal(httpPushRequest{Updates: []httpRefUpdate{{Ref: id, Old: addrString(old), New: addrString(addr), Force: force}}})
	if err != nil {
		return old, err
	}
	resp, err := r.ep.do(ctx, http.MethodPost, r.pushPath(""), bytes.NewReader(body), int64(len(body)))
	if err != nil {
		return old, err
	}
	io.Copy(io.Discard, resp.Body)
	return old, resp.Body.Close()
}
