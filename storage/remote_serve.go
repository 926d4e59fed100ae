package storage

import (
	"bufio"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/dolthub/dolt/go/store/hash"
	"github.com/dolthub/dolt/go/store/nbs"
	"github.com/dolthub/dolt/go/store/types"
)

// The serving side of remotes over HTTP: what a database answers to
// another server's fetch, clone and push (docs/format/remote-http.md).
// The server package speaks HTTP and checks users; this file the
// protocol's bodies and what they do to the database.

// RemoteFormat is the chunk format a served database's store holds.
var RemoteFormat = types.Format_DOLT.VersionString()

// MaxRemoteHashes bounds the addresses of one has or chunks request.
const MaxRemoteHashes = 1 << 20

// ErrBadRemoteRequest: a remote request whose body breaks the protocol.
var ErrBadRemoteRequest = errors.New("bad remote request")

// refWorking prefixes the working roots a server serves for its read
// replicas: refs/working/<b> is the root branch b's working set holds, as
// last checkpointed.
const refWorking = "refs/working/"

// ServedRefs are the database's branches, tags and checkpointed working
// roots as a remote serves them: refs/heads/<b>, refs/tags/<t> and
// refs/working/<b> to their addresses.
func (d *Database) ServedRefs(ctx context.Context) (map[string]string, error) {
	if err := d.hold(ctx); err != nil {
		return nil, err
	}
	defer d.release()
	out := map[string]string{}
	if !d.born.Load() {
		return out, nil
	}
	for _, prefix := range []string{refHeads, refTags} {
		refs, err := datasetRefs(ctx, d.db, prefix)
		if err != nil {
			return nil, err
		}
		for name, addr := range refs {
			out[prefix+name] = addr.String()
		}
	}
	return out, d.addWorkingRoots(ctx, out)
}

// addWorkingRoots adds refs/working/<b> for each branch with a working
// set.
func (d *Database) addWorkingRoots(ctx context.Context, out map[string]string) error {
	sets, err := datasetRefs(ctx, d.db, refWorkingSets)
	if err != nil {
		return err
	}
	for name := range sets {
		if _, ok := out[refHeads+name]; !ok {
			continue
		}
		root, err := d.workingSetRoot(ctx, name)
		if err != nil {
			return err
		}
		out[refWorking+name] = root.String()
	}
	return nil
}

// workingSetRoot is the root branch name's working set holds (empty: it
// has none).
func (d *Database) workingSetRoot(ctx context.Context, name string) (hash.Hash, error) {
	ds, err := d.db.GetDataset(ctx, refWorkingSets+name)
	if err != nil || !ds.HasHead() {
		return hash.Hash{}, err
	}
	ws, err := ds.HeadWorkingSet()
	if err != nil {
		return hash.Hash{}, err
	}
	return ws.WorkingAddr, nil
}

// RefsToken is a digest of the databases named and their stores' roots,
// which every commit, checkpoint and ref move changes: a long poll waits
// for it to change. An open database's root is read in memory; one
// closed for idleness has not changed since it was last read, so that
// reading stands and the poll does not keep it open (only one never read
// is opened, once).
func (e *Engine) RefsToken(ctx context.Context, names []string) (string, error) {
	h := sha256.New()
	for _, name := range names {
		root, err := e.storeRoot(ctx, name)
		if err != nil && !errors.Is(err, ErrClosed) {
			return "", err
		}
		fmt.Fprintf(h, "%s\x00%s\x00", name, root)
	}
	return hex.EncodeToString(h.Sum(nil)[:16]), nil
}

// storeRoot is database name's store root as last seen (empty: no such
// database, or one not written yet).
func (e *Engine) storeRoot(ctx context.Context, name string) (hash.Hash, error) {
	e.mu.Lock()
	d := e.dbs[name]
	e.mu.Unlock()
	if d == nil || !d.holdIfOpen() {
		if root, ok := e.rootsSeen.Load(name); ok && d != nil {
			return root.(hash.Hash), nil
		}
		var err error
		if d, err = e.Database(ctx, name, false); err != nil || d == nil || !d.holdIfOpen() {
			return hash.Hash{}, err
		}
	}
	defer d.release()
	root, err := d.cs.Root(ctx)
	if err == nil {
		e.rootsSeen.Store(name, root)
	}
	return root, err
}

// parseHashBody reads a has or chunks request's addresses.
func parseHashBody(body []byte) (hash.HashSet, error) {
	if len(body)%hash.ByteLen != 0 || len(body)/hash.ByteLen > MaxRemoteHashes {
		return nil, fmt.Errorf("%w: a body of %d bytes is not up to %d addresses of %d bytes",
			ErrBadRemoteRequest, len(body), MaxRemoteHashes, hash.ByteLen)
	}
	hs := make(hash.HashSet, len(body)/hash.ByteLen)
	for i := 0; i < len(body); i += hash.ByteLen {
		hs.Insert(hash.New(body[i : i+hash.ByteLen]))
	}
	return hs, nil
}

// ServeHas answers a has request: the addresses of body the store lacks.
func (d *Database) ServeHas(ctx context.Context, body []byte) ([]byte, error) {
	hs, err := parseHashBody(body)
	if err != nil {
		return nil, err
	}
	if err := d.hold(ctx); err != nil {
		return nil, err
	}
	defer d.release()
	absent, err := d.cs.HasMany(ctx, hs)
	if err != nil {
		return nil, err
	}
	out, _ := hashBody(absent)
	return out, nil
}

// ServeChunks answers a chunks request: each chunk of body the store
// holds, written to w as a record (address, length, compressed bytes).
// A body that is no list of addresses fails before anything is written.
func (d *Database) ServeChunks(ctx context.Context, body []byte, w io.Writer) error {
	hs, err := parseHashBody(body)
	if err != nil {
		return err
	}
	if err = d.hold(ctx); err != nil {
		return err
	}
	defer d.release()
	bw := bufio.NewWriterSize(w, 256<<10)
	var mu sync.Mutex // the store calls back from several readers at once
	var writeErr error
	err = d.cs.GetManyCompressed(ctx, hs, func(_ context.Context, tc nbs.ToChunker) {
		mu.Lock()
		defer mu.Unlock()
		if writeErr == nil {
			writeErr = writeChunkRecord(bw, tc)
		}
	})
	return cmp.Or(err, writeErr, bw.Flush())
}
