package storage

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dolthub/dolt/go/store/chunks"
	"github.com/dolthub/dolt/go/store/hash"
	"github.com/dolthub/dolt/go/store/nbs"
	"github.com/dolthub/dolt/go/store/types"
)

// Transfer caches (docs/format/remotes.md, "Transfer caches"): the
// chunks a copy from a network remote received, kept when the copy is
// cut off, so that the next copy from that remote reads them from disk
// instead of receiving them again. The cache is a source beside the
// remote, never a sink: the puller still walks everything the database
// lacks, so a chunk whose children never arrived cannot hide them.

const (
	transferCacheDir = ".transfers"
	// transferCacheFlush is how much a cache takes before it writes a
	// table file.
	transferCacheFlush = 32 << 20
	// transferCacheMaxAge is how long an untouched cache is kept.
	transferCacheMaxAge = 7 * 24 * time.Hour
)

// transferCache is an open cache of one remote's chunks.
type transferCache struct {
	dir     string
	cs      *nbs.NomsBlockStore
	mu      sync.Mutex // serialises flushes
	pending atomic.Int64
	resumed atomic.Uint64 // bytes the cache supplied
}

// cachedSource is the source a copy from rawURL reads: the remote, with
// a transfer cache beside it for a remote across the network (a file://
// remote is read at disk speed: the cache's second write would cost what
// a resend saves); finish ends the copy,
// removing the cache after a complete one and keeping it otherwise, and
// returns the bytes the cache supplied. A cache that cannot be opened
// (another copy from the same remote holds it) is done without.
func (e *Engine) cachedSource(ctx context.Context, rawURL string, remote chunks.ChunkStore) (chunks.ChunkStore, func(ok bool) uint64) {
	src, ok := remote.(nbs.NBSCompressedChunkStore)
	if u, err := url.Parse(rawURL); err != nil || u.Scheme == "file" || !ok {
		return remote, func(bool) uint64 { return 0 }
	}
	c, err := e.openTransferCache(ctx, rawURL)
	if err != nil {
		return remote, func(bool) uint64 { return 0 }
	}
	return &cachingSource{NBSCompressedChunkStore: src, cache: c}, c.finish
}

func (e *Engine) openTransferCache(ctx context.Context, rawURL string) (*transferCache, error) {
	sum := sha256.Sum256([]byte(RedactURL(rawURL)))
	return e.openCacheAt(ctx, filepath.Join(e.dir, transferCacheDir, hex.EncodeToString(sum[:8])))
}

// openCacheAt opens (or makes) the cache in dir, under the data
// directory's transfer caches, first removing the stale ones.
func (e *Engine) openCacheAt(ctx context.Context, dir string) (*transferCache, error) {
	removeStaleCaches(filepath.Dir(dir))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	now := time.Now()
	os.Chtimes(dir, now, now) // touched: not stale
	cs, err := nbs.NewLocalStore(ctx, types.Format_DOLT.VersionString(), dir, memTableBytes,
		nbs.NewUnlimitedMemQuotaProvider(), false)
	if err != nil {
		return nil, err
	}
	return &transferCache{dir: dir, cs: cs}, nil
}

// removeStaleCaches removes the caches untouched for transferCacheMaxAge.
func removeStaleCaches(root string) {
	entries, _ := os.ReadDir(root)
	for _, ent := range entries {
		if info, err := ent.Info(); err == nil && time.Since(info.ModTime()) > transferCacheMaxAge {
			os.RemoveAll(filepath.Join(root, ent.Name()))
		}
	}
}

// put keeps a received chunk. The cache is best effort: a chunk it fails
// to keep is received again by a later copy, nothing worse.
func (c *transferCache) put(ctx context.Context, tc nbs.ToChunker) {
	if ch, err := tc.ToChunk(); err == nil {
		c.putChunk(ctx, ch)
	}
}

func (c *transferCache) putChunk(ctx context.Context, ch chunks.Chunk) {
	if c.cs.Put(ctx, ch, noAddrs) != nil {
		return
	}
	if c.pending.Add(int64(len(ch.Data()))) >= transferCacheFlush {
		c.flush(ctx)
	}
}

// noAddrs checks no references: the cache has no refs, and its chunks'
// children may be yet to come.
func noAddrs(chunks.Chunk) chunks.GetAddrsCb {
	return func(context.Context, hash.HashSet, chunks.PendingRefExists) error { return nil }
}

// flush writes what the cache took since its last flush.
func (c *transferCache) flush(ctx context.Context) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pending.Store(0)
	if root, err := c.cs.Root(ctx); err == nil {
		c.cs.Commit(ctx, root, root)
	}
}

// finish ends the cache's copy: a complete one removes it, another keeps
// what it received.
func (c *transferCache) finish(ok bool) uint64 {
	if !ok {
		c.flush(context.Background())
	}
	c.cs.Close()
	if ok {
		os.RemoveAll(c.dir)
	}
	return c.resumed.Load()
}

// cachingSource reads a remote's chunks through a transfer cache: those
// the cache holds from disk, the others from the remote, kept as they
// arrive.
type cachingSource struct {
	nbs.NBSCompressedChunkStore
	cache *transferCache
}

func (s *cachingSource) GetManyCompressed(ctx context.Context, hs hash.HashSet, found func(context.Context, nbs.ToChunker)) error {
	absent, err := s.cache.cs.HasMany(ctx, hs)
	if err != nil {
		absent = hs
	}
	if len(absent) < len(hs) {
		cached := hash.HashSet{}
		for h := range hs {
			if !absent.Has(h) {
				cached.Insert(h)
			}
		}
		err := s.cache.cs.GetManyCompressed(ctx, cached, func(ctx context.Context, tc nbs.ToChunker) {
			s.cache.resumed.Add(uint64(tc.CompressedSize()))
			found(ctx, tc)
		})
		if err != nil {
			return err
		}
	}
	if len(absent) == 0 {
		return nil
	}
	return s.NBSCompressedChunkStore.GetManyCompressed(ctx, absent, func(ctx context.Context, tc nbs.ToChunker) {
		found(ctx, tc)
		s.cache.put(ctx, tc)
	})
}

func (s *cachingSource) GetMany(ctx context.Context, hs hash.HashSet, found func(context.Context, *chunks.Chunk)) error {
	var convErr error
	var mu sync.Mutex
	err := s.GetManyCompressed(ctx, hs, func(ctx context.Context, tc nbs.ToChunker) {
		c, err := tc.ToChunk()
		if err != nil {
			mu.Lock()
			convErr = err
			mu.Unlock()
			return
		}
		found(ctx, &c)
	})
	if err != nil {
		return err
	}
	return convErr
}

func (s *cachingSource) Get(ctx context.Context, h hash.Hash) (chunks.Chunk, error) {
	out := chunks.EmptyChunk
	err := s.GetMany(ctx, hash.NewHashSet(h), func(_ context.Context, c *chunks.Chunk) { out = *c })
	return out, err
}
