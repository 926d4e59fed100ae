package storage

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/dumbodb/dumbodb/storage/s3blob"

	"github.com/dolthub/dolt/go/store/hash"
	"github.com/dolthub/dolt/go/store/types"
)

// Following the databases stored under a remote URL, one per database,
// as a read replica does (docs/design/replicas.md).

// FollowResult is what one poll did to one database.
type FollowResult struct {
	Database string
	Cloned   bool
	Changed  bool // a branch or tag moved, appeared or went
	Err      error
}

// Follow brings every database stored under rawURL (at <rawURL>/<db>) up
// to date: a database the engine lacks is cloned, one it has is fetched
// from its origin and its branches and tags made the remote's.
func (e *Engine) Follow(ctx context.Context, rawURL string) ([]FollowResult, error) {
	ctx, leave, err := e.gate.enter(ctx)
	if err != nil {
		return nil, err
	}
	defer leave()
	names, err := remoteDatabases(ctx, rawURL)
	if err != nil {
		return nil, err
	}
	out := make([]FollowResult, 0, len(names))
	for _, name := range names {
		out = append(out, e.followOne(ctx, name, remoteChild(rawURL, name)))
	}
	return out, nil
}

func (e *Engine) followOne(ctx context.Context, name, dbURL string) FollowResult {
	res := FollowResult{Database: name}
	d, err := e.Database(ctx, name, false)
	if err != nil {
		res.Err = err
		return res
	}
	if d == nil {
		_, res.Err = e.Clone(ctx, name, dbURL, "")
		res.Cloned, res.Changed = res.Err == nil, res.Err == nil
		return res
	}
	res.Changed, res.Err = d.Mirror(ctx, "origin")
	return res
}

// remoteChild is the URL of database name under a remote URL.
func remoteChild(rawURL, name string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return rawURL
	}
	u.Path = path.Join(u.Path, name)
	return u.String()
}

// remoteDatabases lists the databases stored under a remote URL: the
// children that hold a store.
func remoteDatabases(ctx context.Context, rawURL string) ([]string, error) {
	u, err := url.Parse(rawURL)
	if err == nil && (u.Scheme == "http" || u.Scheme == "https") {
		return httpRemoteDatabases(ctx, rawURL)
	}
	if err == nil && u.Scheme == "s3" {
		cfg, err := parseS3URL(rawURL)
		if err != nil {
			return nil, err
		}
		return s3blob.New(cfg).Children(ctx, s3ManifestKey)
	}
	dir, err := fileRemoteDir(rawURL)
	if err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrRemoteNotFound, RedactURL(rawURL), err)
	}
	var names []string
	for _, ent := range entries {
		if ent.IsDir() && !strings.HasPrefix(ent.Name(), ".") && hasStore(filepath.Join(dir, ent.Name())) {
			names = append(names, ent.Name())
		}
	}
	return names, nil
}

// Mirror fetches a remote and makes the database's branches and tags
// the remote's: each branch reset hard to its remote branch, the branches
// only the remote has made, those it lacks deleted (main stays), the tags
// set as the remote's. It reports whether anything moved. Only a
// database nobody writes (a replica's) should be mirrored: local commits
// are dropped.
func (d *Database) Mirror(ctx context.Context, remote string) (bool, error) {
	ctx, leave, err := d.enterGate(ctx)
	if err != nil {
		return false, err
	}
	defer leave()
	if err := d.hold(ctx); err != nil {
		return false, err
	}
	defer d.release()
	fetched, err := d.fetch(ctx, remote, "", true)
	if err != nil {
		return false, err
	}
	tracking, err := d.trackingRefs(ctx, remote)
	if err != nil {
		return false, err
	}
	moved, err := d.mirrorBranches(ctx, tracking)
	if err != nil {
		return false, err
	}
	retagged, err := d.mirrorTags(ctx, remote)
	if err != nil {
		return true, err
	}
	rerooted, err := d.mirrorWorkingRoots(ctx, remote)
	return len(fetched.Updated) > 0 || moved || retagged || rerooted, err
}

// mirrorWorkingRoots makes each branch's working root the one the
// remote serves for it (a server over HTTP serves its checkpointed
// working roots; a store serves none): its chunks copied, then the
// branch's working set moved to it.
func (d *Database) mirrorWorkingRoots(ctx context.Context, remote string) (bool, error) {
	rs, err := d.openNamedRemote(ctx, remote, false)
	if err != nil {
		return false, err
	}
	defer rs.close()
	roots, err := rs.refs(ctx, refWorking)
	if err != nil || len(roots) == 0 {
		return false, err
	}
	held, err := d.copyWorkingRoots(ctx, rs, roots)
	defer d.dropIncoming(ctx, held)
	if err != nil {
		return false, err
	}
	changed := false
	for _, b := range slices.Sorted(maps.Keys(roots)) {
		cur, err := d.workingSetRoot(ctx, b)
		if err != nil || cur == roots[b] {
			if err != nil {
				return changed, err
			}
			continue
		}
		err = d.lockedBranch(ctx, b, func(br *branch) error { return d.setWorkingRoot(ctx, br, roots[b]) })
		if err != nil && !errors.Is(err, ErrBranchNotFound) {
			return changed, fmt.Errorf("branch %s: %w", b, err)
		}
		changed = changed || err == nil
	}
	return changed, nil
}

// copyWorkingRoots copies the working roots' chunks and holds them with
// incoming refs (which the caller drops) until the working sets point at
// them.
func (d *Database) copyWorkingRoots(ctx context.Context, rs remoteStore, roots map[string]hash.Hash) ([]string, error) {
	d.compactMu.Lock()
	defer d.compactMu.Unlock()
	if _, err := copyChunks(ctx, rs.chunks(), d.cs, slices.Collect(maps.Values(roots))); err != nil {
		return nil, err
	}
	var held []string
	seq := incomingSeq.Add(1)
	for _, b := range slices.Sorted(maps.Keys(roots)) {
		id := fmt.Sprintf("%sreplica-%d-%d", refIncoming, seq, len(held))
		ref, err := d.rootRef(ctx, roots[b])
		if err != nil {
			return held, err
		}
		ds, err := d.db.GetDataset(ctx, id)
		if err == nil {
			_, err = d.db.UpdateWorkingSet(ctx, ds, d.workingSetSpec(ref, ref, 0), hash.Hash{})
		}
		if err != nil {
			return held, err
		}
		held = append(held, id)
	}
	return held, nil
}

// setWorkingRoot points a locked branch's working set at root, which the
// store holds.
func (d *Database) setWorkingRoot(ctx context.Context, b *branch, root hash.Hash) error {
	ref, err := d.rootRef(ctx, root)
	if err != nil {
		return err
	}
	lsn := b.state.Load().lsn
	prev, _ := b.ws.MaybeHeadAddr()
	ws, err := d.db.UpdateWorkingSet(ctx, b.ws, d.workingSetSpec(ref, ref, lsn), prev)
	if err != nil {
		return err
	}
	return d.installWorkingRoot(ctx, b, ws, root, lsn, nil)
}

// mirrorBranches points the branches at the tracking refs' commits.
func (d *Database) mirrorBranches(ctx context.Context, tracking map[string]hash.Hash) (bool, error) {
	local, err := datasetRefs(ctx, d.db, refHeads)
	if err != nil {
		return false, err
	}
	changed := false
	for _, b := range slices.Sorted(maps.Keys(tracking)) {
		at := Revision{Commit: tracking[b]}
		switch cur, ok := local[b]; {
		case !ok:
			_, err = d.CreateBranch(ctx, b, at)
		case cur != tracking[b]:
			_, err = d.Reset(ctx, b, at, true)
		default:
			continue
		}
		if err != nil {
			return changed, fmt.Errorf("branch %s: %w", b, err)
		}
		changed = true
	}
	for b := range local {
		if _, ok := tracking[b]; ok || b == DefaultBranch {
			continue
		}
		if err := d.DeleteBranch(ctx, b, DefaultBranch, true); err != nil && !errors.Is(err, ErrBranchNotFound) {
			return changed, fmt.Errorf("branch %s: %w", b, err)
		}
		changed = true
	}
	return changed, nil
}

// mirrorTags makes the tags the remote's.
func (d *Database) mirrorTags(ctx context.Context, remote string) (bool, error) {
	rs, err := d.openNamedRemote(ctx, remote, false)
	if err != nil {
		return false, err
	}
	defer rs.close()
	theirs, err := rs.refs(ctx, refTags)
	if err != nil {
		return false, err
	}
	ours, err := datasetRefs(ctx, d.db, refTags)
	if err != nil {
		return false, err
	}
	changed := false
	for name, addr := range theirs {
		if ours[name] != addr {
			if err := setRef(ctx, d.db, refTags+name, addr); err != nil { // fetched: its chunks are here
				return changed, err
			}
			changed = true
		}
	}
	for name := range ours {
		if _, ok := theirs[name]; !ok {
			if err := d.DeleteTag(ctx, name); err != nil {
				return changed, err
			}
			changed = true
		}
	}
	return changed, nil
}

// rootRef is a reference to a root the store holds.
func (d *Database) rootRef(ctx context.Context, root hash.Hash) (types.Ref, error) {
	v, err := d.vs.ReadValue(ctx, root)
	if err != nil || v == nil {
		return types.Ref{}, cmp.Or(err, fmt.Errorf("root %s is not in the store", root))
	}
	return types.NewRef(v, d.vs.Format())
}
