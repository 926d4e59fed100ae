package storage

import (
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

	"dumbodb/storage/s3blob"

	"github.com/dolthub/dolt/go/store/hash"
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
	return len(fetched.Updated) > 0 || moved || retagged, err
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
