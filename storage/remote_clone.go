package storage

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"time"

	"github.com/dumbodb/dumbodb/internal/durablefile"

	"github.com/dolthub/dolt/go/store/chunks"
	"github.com/dolthub/dolt/go/store/datas"
	"github.com/dolthub/dolt/go/store/hash"
	"github.com/dolthub/dolt/go/store/nbs"
	"github.com/dolthub/dolt/go/store/prolly/tree"
	"github.com/dolthub/dolt/go/store/types"
)

// cloneSeq tells apart the temporary directories of clones.
var cloneSeq atomic.Int64

// Clone makes database name a copy of the remote at rawURL: each of its
// branches (only branch and main when branch is set), its tags, the
// tracking refs origin/<branch>, and origin as its remote, the upstream
// of each branch. The copy is made in a directory of its own and renamed
// to name once complete, so a crash leaves no half database (start
// removes the directory).
func (e *Engine) Clone(ctx context.Context, name, rawURL, branch string) (FetchResult, error) {
	ctx, leave, err := e.gate.enter(ctx)
	if err != nil {
		return FetchResult{}, err
	}
	defer leave()
	if err := e.cloneTargetFree(name); err != nil {
		return FetchResult{}, err
	}
	rs, err := openRemote(ctx, rawURL, false)
	if err != nil {
		return FetchResult{}, err
	}
	defer rs.close()
	heads, tags, err := cloneRefs(ctx, rs, branch)
	if err != nil {
		return FetchResult{}, err
	}
	tmp := filepath.Join(e.dir, fmt.Sprintf("%s%d-%d", clonePrefix, time.Now().UnixNano(), cloneSeq.Add(1)))
	src, finish := e.cachedSource(ctx, rawURL, rs.chunks())
	res, err := cloneInto(ctx, tmp, src, rawURL, heads, tags)
	res.Transferred.Resumed = finish(err == nil)
	if err == nil {
		err = e.installClone(tmp, name)
	}
	if err != nil {
		os.RemoveAll(tmp)
	}
	return res, err
}

// cloneTargetFree checks that name can take a clone.
func (e *Engine) cloneTargetFree(name string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.checkDatabaseName(name); err != nil {
		return err
	}
	if _, ok := e.dbs[name]; ok || isDatabaseDir(e.dbDir(name)) {
		return fmt.Errorf("%w: %s", ErrDatabaseExists, name)
	}
	if other := e.caseConflict(name); other != "" {
		return fmt.Errorf("%w: %q and %q", ErrDatabaseDiffersInCase, name, other)
	}
	return nil
}

// cloneRefs are the branches and tags a clone copies; main must be among
// the branches, as every database has it.
func cloneRefs(ctx context.Context, rs remoteStore, branch string) (heads, tags map[string]hash.Hash, err error) {
	if heads, tags, err = remoteRefsToFetch(ctx, rs, ""); err != nil {
		return nil, nil, err
	}
	if _, ok := heads[DefaultBranch]; !ok {
		return nil, nil, fmt.Errorf("%w: the remote has no %s", ErrBranchNotFound, DefaultBranch)
	}
	if branch == "" {
		return heads, tags, nil
	}
	if _, ok := heads[branch]; !ok {
		return nil, nil, fmt.Errorf("%w: %s on the remote", ErrBranchNotFound, branch)
	}
	return map[string]hash.Hash{DefaultBranch: heads[DefaultBranch], branch: heads[branch]}, tags, nil
}

// cloneInto writes the clone's store and remotes file into dir; a
// rawURL of "" makes a copy with no remote (a restored bundle).
func cloneInto(ctx context.Context, dir string, src chunks.ChunkStore, rawURL string, heads, tags map[string]hash.Hash) (FetchResult, error) {
	var res FetchResult
	if err := os.Mkdir(dir, 0o755); err != nil {
		return res, err
	}
	cs, err := nbs.NewLocalStore(ctx, types.Format_DOLT.VersionString(), dir, memTableBytes,
		nbs.NewUnlimitedMemQuotaProvider(), false)
	if err != nil {
		return res, err
	}
	db := datas.NewTypesDatabase(types.NewValueStore(cs), tree.NewNodeStore(cs))
	defer db.Close()
	addrs := append(slices.Collect(maps.Values(heads)), slices.Collect(maps.Values(tags))...)
	if res.Transferred, err = copyChunks(ctx, src, cs, addrs); err != nil {
		return res, err
	}
	cfg := &remoteConfig{remotes: map[string]string{"origin": rawURL}, upstreams: map[string]Upstream{}}
	if rawURL == "" { // a restored bundle: no remote to track
		cfg.remotes = map[string]string{}
	}
	for _, b := range slices.Sorted(maps.Keys(heads)) {
		ids := []string{refHeads + b, refRemotes + "origin/" + b}
		if rawURL == "" {
			ids = ids[:1]
		} else {
			cfg.upstreams[b] = Upstream{Remote: "origin", Branch: b}
		}
		for _, id := range ids {
			if err := setRef(ctx, db, id, heads[b]); err != nil {
				return res, err
			}
		}
		res.Updated = append(res.Updated, RefUpdate{Name: b, New: heads[b].String()})
	}
	for _, t := range slices.Sorted(maps.Keys(tags)) {
		if err := setRef(ctx, db, refTags+t, tags[t]); err != nil {
			return res, err
		}
		res.Updated = append(res.Updated, RefUpdate{Name: "tag " + t, New: tags[t].String()})
	}
	return res, cfg.save(dir)
}

// installClone renames a complete clone to its name and makes the rename
// durable.
func (e *Engine) installClone(tmp, name string) error {
	if err := durablefile.SyncDir(tmp); err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	dir := e.dbDir(name)
	if _, ok := e.dbs[name]; ok || isDatabaseDir(dir) {
		return fmt.Errorf("%w: %s", ErrDatabaseExists, name)
	}
	if exists(dir) {
		if err := os.RemoveAll(dir); err != nil { // a directory that is no database
			return err
		}
	}
	if err := os.Rename(tmp, dir); err != nil {
		return err
	}
	if err := durablefile.SyncDir(e.dir); err != nil {
		return err
	}
	if e.onDisk != nil {
		e.onDisk[name] = true
	}
	return nil
}
