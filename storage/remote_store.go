package storage

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/dumbodb/dumbodb/storage/s3blob"

	"github.com/dolthub/dolt/go/store/chunks"
	"github.com/dolthub/dolt/go/store/datas"
	"github.com/dolthub/dolt/go/store/datas/pull"
	"github.com/dolthub/dolt/go/store/hash"
	"github.com/dolthub/dolt/go/store/nbs"
	"github.com/dolthub/dolt/go/store/prolly/tree"
	"github.com/dolthub/dolt/go/store/types"
)

// A remote's store, opened from its URL, and the copy of chunks between
// stores (docs/design/remotes.md).

// remoteStore is an open remote: its refs, the chunk store copies read
// from and write to, and the moves of its refs.
type remoteStore interface {
	// refs maps the names of the remote's refs under prefix to their
	// addresses (a branch's head commit, a tag's tag object).
	refs(ctx context.Context, prefix string) (map[string]hash.Hash, error)
	// chunks is the remote's chunk store as a copy's source.
	chunks() chunks.ChunkStore
	// sendChunks copies to the remote what addrs reach in local and the
	// remote lacks, for the moveRef calls that follow.
	sendChunks(ctx context.Context, local chunks.ChunkStore, addrs []hash.Hash) (TransferStats, error)
	// moveRef points ref id (refs/heads/<b>, refs/tags/<t>) at addr, which
	// the remote holds: a branch only by a fast-forward unless force
	// (ErrNotFastForward), a tag only when it has none; an empty addr
	// deletes the ref. It returns the ref's address before the move.
	moveRef(ctx context.Context, id string, addr hash.Hash, force bool) (hash.Hash, error)
	close() error
}

// openRemote opens the store a remote URL names. With create, a remote
// that holds no store yet is opened empty (a push to a new remote).
func openRemote(ctx context.Context, rawURL string, create bool) (remoteStore, error) {
	var cs *nbs.NomsBlockStore
	var hasTableFile func(context.Context, string) (bool, error)
	var err error
	switch u, _ := url.Parse(rawURL); {
	case u != nil && (u.Scheme == "http" || u.Scheme == "https"):
		return openHTTPRemote(ctx, rawURL)
	case u != nil && u.Scheme == "s3":
		cs, hasTableFile, err = openS3Remote(ctx, rawURL, create)
	default:
		cs, err = openFileRemote(ctx, rawURL, create)
	}
	if err != nil {
		return nil, err
	}
	return &chunkStoreRemote{cs: cs, db: datas.NewTypesDatabase(types.NewValueStore(cs), tree.NewNodeStore(cs)),
		url: rawURL, hasTableFile: hasTableFile}, nil
}

// checkRemoteURL checks that a URL names a remote DumboDB can reach,
// without reaching it.
func checkRemoteURL(rawURL string) error {
	u, err := url.Parse(rawURL)
	switch {
	case err == nil && u.Scheme == "s3":
		_, err := parseS3URL(rawURL)
		return err
	case err == nil && (u.Scheme == "http" || u.Scheme == "https"):
		_, _, err := parseHTTPRemoteURL(rawURL)
		return err
	}
	_, err = fileRemoteDir(rawURL)
	return err
}

// openFileRemote opens a file:// remote's store; with create, its
// directory is made when missing.
func openFileRemote(ctx context.Context, rawURL string, create bool) (*nbs.NomsBlockStore, error) {
	dir, err := fileRemoteDir(rawURL)
	if err != nil {
		return nil, err
	}
	if !hasStore(dir) {
		if !create {
			return nil, fmt.Errorf("%w: %s", ErrRemoteNotFound, RedactURL(rawURL))
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("remote %s: %w", RedactURL(rawURL), err)
		}
	}
	cs, err := nbs.NewLocalStore(ctx, types.Format_DOLT.VersionString(), dir, memTableBytes,
		nbs.NewUnlimitedMemQuotaProvider(), false)
	if err != nil {
		return nil, fmt.Errorf("remote %s: %w", RedactURL(rawURL), err)
	}
	return cs, nil
}

// parseS3URL reads an s3:// remote's URL.
func parseS3URL(rawURL string) (s3blob.Config, error) {
	cfg, err := s3blob.ParseURL(rawURL)
	if err != nil {
		return cfg, fmt.Errorf("%w: %v", ErrBadRemoteURL, err)
	}
	return cfg, nil
}

// openS3Remote opens an s3:// remote's store: a Dolt chunk store over the
// bucket prefix's objects; without create, one that has no manifest yet
// is no remote. It also returns whether the bucket holds a table file.
func openS3Remote(ctx context.Context, rawURL string, create bool) (*nbs.NomsBlockStore, func(context.Context, string) (bool, error), error) {
	cfg, err := parseS3URL(rawURL)
	if err != nil {
		return nil, nil, err
	}
	bs := s3blob.New(cfg)
	if !create {
		ok, err := bs.Exists(ctx, s3ManifestKey)
		if err != nil {
			return nil, nil, fmt.Errorf("remote %s: %w", RedactURL(rawURL), err)
		}
		if !ok {
			return nil, nil, fmt.Errorf("%w: %s", ErrRemoteNotFound, RedactURL(rawURL))
		}
	}
	cs, err := nbs.NewBSStore(ctx, types.Format_DOLT.VersionString(), bs, memTableBytes, nbs.NewUnlimitedMemQuotaProvider())
	if err != nil {
		return nil, nil, fmt.Errorf("remote %s: %w", RedactURL(rawURL), err)
	}
	return cs, bs.Exists, nil
}

// s3ManifestKey is the blob holding a blobstore chunk store's manifest,
// as Dolt names it.
const s3ManifestKey = "manifest"

// fileRemoteDir is the directory of a file:// URL; schemes other than
// file and s3 are refused with ErrRemoteScheme.
func fileRemoteDir(rawURL string) (string, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "", fmt.Errorf("%w: %s", ErrBadRemoteURL, RedactURL(rawURL))
	}
	if u.Scheme != "file" {
		return "", fmt.Errorf("%w: %q", ErrRemoteScheme, u.Scheme)
	}
	if u.Host != "" && u.Host != "localhost" || !filepath.IsAbs(u.Path) {
		return "", fmt.Errorf("%w: a file remote is file:///absolute/path, not %s", ErrBadRemoteURL, RedactURL(rawURL))
	}
	return filepath.Clean(u.Path), nil
}

// chunkStoreRemote is a remote that is a Dolt chunk store DumboDB opens
// itself (file://, s3://): its refs move by Dolt's compare-and-set of the
// store's root.
type chunkStoreRemote struct {
	cs  *nbs.NomsBlockStore
	db  datas.Database
	url string
	// hasTableFile, for an s3:// remote, reports whether the bucket holds
	// a table file (named by its manifest or not yet): a push then goes
	// through an outbox under outboxRoot (remote_outbox.go), so that a
	// push cut off is resumed. nil (a file:// remote, written at disk
	// speed): the puller writes into the remote.
	hasTableFile func(ctx context.Context, id string) (bool, error)
	outboxRoot   string
}

func (r *chunkStoreRemote) close() error { return r.db.Close() }

func (r *chunkStoreRemote) chunks() chunks.ChunkStore { return r.cs }

func (r *chunkStoreRemote) sendChunks(ctx context.Context, local chunks.ChunkStore, addrs []hash.Hash) (TransferStats, error) {
	if r.hasTableFile != nil && r.outboxRoot != "" {
		return r.sendThroughOutbox(ctx, local, addrs)
	}
	return copyChunks(ctx, local, r.cs, addrs)
}

func (r *chunkStoreRemote) refs(ctx context.Context, prefix string) (map[string]hash.Hash, error) {
	return datasetRefs(ctx, r.db, prefix)
}

func (r *chunkStoreRemote) moveRef(ctx context.Context, id string, addr hash.Hash, force bool) (hash.Hash, error) {
	ds, err := r.db.GetDataset(ctx, id)
	if err != nil {
		return hash.Hash{}, err
	}
	old, _ := ds.MaybeHeadAddr()
	switch {
	case addr.IsEmpty():
		_, err = r.db.Delete(ctx, ds, "")
	case old == addr:
	case strings.HasPrefix(id, refTags) && !old.IsEmpty() && !force:
		err = fmt.Errorf("%w: %s on the remote", ErrTagExists, strings.TrimPrefix(id, refTags))
	case force || strings.HasPrefix(id, refTags):
		_, err = r.db.SetHead(ctx, ds, addr, "")
	default:
		_, err = r.db.FastForward(ctx, ds, addr, "")
		if errors.Is(err, datas.ErrMergeNeeded) {
			err = fmt.Errorf("%w: the remote's %s has commits this push lacks", ErrNotFastForward, strings.TrimPrefix(id, refHeads))
		}
	}
	return old, err
}

// datasetRefs maps the names of a store's datasets under prefix to their
// heads' addresses.
func datasetRefs(ctx context.Context, db datas.Database, prefix string) (map[string]hash.Hash, error) {
	dss, err := db.Datasets(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]hash.Hash{}
	err = dss.IterAll(ctx, func(id string, addr hash.Hash) error {
		if name, ok := strings.CutPrefix(id, prefix); ok {
			out[name] = addr
		}
		return nil
	})
	return out, err
}

// Dolt's puller writes what it copies as archives (zstd with a
// dictionary it trains for each file) unless this variable is "0".
// DumboDB's stores hold classic table files, which compaction conjoins,
// and the training would cost a clone most of its time (about 5 x over
// HTTP on loopback), so copies are written as table files.
func init() { os.Setenv("DOLT_ARCHIVE_PULL_STREAMER", "0") }

// TransferStats is what a copy between stores moved: the chunks and
// their bytes, of which Resumed bytes (compressed) came from the transfer
// cache of a copy cut off before rather than from the remote
// (remote_resume.go).
type TransferStats struct {
	Chunks, Bytes uint64
	Resumed       uint64
}

// transferTableFileSize is the size of the table files a copy writes.
const transferTableFileSize = 128 << 20

// copyChunks copies into sink the chunks that addrs reach in src and sink
// lacks, with Dolt's puller: it stops at the chunks sink has and adds what
// it copied to sink's manifest once it is durable.
func copyChunks(ctx context.Context, src, sink chunks.ChunkStore, addrs []hash.Hash) (TransferStats, error) {
	walk, err := types.WalkAddrsForChunkStore(src)
	if err != nil {
		return TransferStats{}, err
	}
	statsCh := make(chan pull.Stats)
	var last pull.Stats
	drained := make(chan struct{})
	go func() {
		for s := range statsCh {
			last = s
		}
		close(drained)
	}()
	p, err := pull.NewPuller(ctx, os.TempDir(), transferTableFileSize, src, sink, walk, addrs, statsCh)
	if err == nil {
		err = p.Pull(ctx)
	}
	close(statsCh) // Pull has stopped its senders when it returns
	<-drained
	if errors.Is(err, pull.ErrDBUpToDate) {
		err = nil
	}
	return TransferStats{Chunks: last.FetchedSourceChunks, Bytes: last.FetchedSourceBytes}, err
}
