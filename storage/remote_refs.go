package storage

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"

	"github.com/dolthub/dolt/go/store/datas"
	"github.com/dolthub/dolt/go/store/hash"
)

// A database's remotes as commands see them: add, remove, list, and the
// refs that track the remotes' branches (docs/format/remotes.md).

// refRemotes prefixes the remote-tracking refs: refs/remotes/origin/main.
const refRemotes = "refs/remotes/"

// RemoteInfo is a remote as listed: its URL without credentials.
type RemoteInfo struct {
	Name, URL string
}

// AddRemote adds a remote; its URL must be one DumboDB can reach.
func (d *Database) AddRemote(ctx context.Context, name, rawURL string) error {
	ctx, leave, err := d.enterGate(ctx)
	if err != nil {
		return err
	}
	defer leave()
	if err := d.hold(ctx); err != nil {
		return err
	}
	defer d.release()
	if !validRemoteName(name) {
		return fmt.Errorf("%w: remote name %q", ErrInvalidRefName, name)
	}
	if err := checkRemoteURL(rawURL); err != nil {
		return err
	}
	d.remotesMu.Lock()
	defer d.remotesMu.Unlock()
	if _, ok := d.remotes.remotes[name]; ok {
		return fmt.Errorf("%w: %s", ErrRemoteExists, name)
	}
	next := d.remotes.clone()
	next.remotes[name] = rawURL
	return d.saveRemotes(next)
}

// RemoveRemote removes a remote, its tracking refs and the upstreams
// that name it.
func (d *Database) RemoveRemote(ctx context.Context, name string) error {
	ctx, leave, err := d.enterGate(ctx)
	if err != nil {
		return err
	}
	defer leave()
	if err := d.hold(ctx); err != nil {
		return err
	}
	defer d.release()
	d.remotesMu.Lock()
	defer d.remotesMu.Unlock()
	if _, ok := d.remotes.remotes[name]; !ok {
		return fmt.Errorf("%w: %s", ErrRemoteNotFound, name)
	}
	if err := d.deleteTrackingRefs(ctx, name, nil); err != nil {
		return err
	}
	next := d.remotes.clone()
	delete(next.remotes, name)
	for branch, u := range next.upstreams {
		if u.Remote == name {
			delete(next.upstreams, branch)
		}
	}
	return d.saveRemotes(next)
}

// Remotes lists the remotes, sorted by name.
func (d *Database) Remotes(ctx context.Context) ([]RemoteInfo, error) {
	if err := d.hold(ctx); err != nil {
		return nil, err
	}
	defer d.release()
	d.remotesMu.Lock()
	defer d.remotesMu.Unlock()
	var out []RemoteInfo
	for _, name := range slices.Sorted(maps.Keys(d.remotes.remotes)) {
		out = append(out, RemoteInfo{Name: name, URL: RedactURL(d.remotes.remotes[name])})
	}
	return out, nil
}

// Upstream is the branch's upstream, if it has one.
func (d *Database) Upstream(ctx context.Context, branch string) (Upstream, bool, error) {
	if err := d.hold(ctx); err != nil {
		return Upstream{}, false, err
	}
	defer d.release()
	d.remotesMu.Lock()
	defer d.remotesMu.Unlock()
	u, ok := d.remotes.upstreams[branch]
	return u, ok, nil
}

// remoteURL is a remote's URL.
func (d *Database) remoteURL(name string) (string, error) {
	d.remotesMu.Lock()
	defer d.remotesMu.Unlock()
	u, ok := d.remotes.remotes[name]
	if !ok {
		return "", fmt.Errorf("%w: %s", ErrRemoteNotFound, name)
	}
	return u, nil
}

// openNamedRemote opens the store of the remote called name; with
// create, one that holds no store yet opens empty (a push).
func (d *Database) openNamedRemote(ctx context.Context, name string, create bool) (remoteStore, error) {
	rawURL, err := d.remoteURL(name)
	if err != nil {
		return nil, err
	}
	rs, err := openRemote(ctx, rawURL, create)
	if csr, ok := rs.(*chunkStoreRemote); ok {
		csr.outboxRoot = filepath.Join(d.engine.dir, transferCacheDir)
	}
	return rs, err
}

// setUpstream records a branch's upstream.
func (d *Database) setUpstream(branch string, u Upstream) error {
	d.remotesMu.Lock()
	defer d.remotesMu.Unlock()
	if d.remotes.upstreams[branch] == u {
		return nil
	}
	next := d.remotes.clone()
	next.upstreams[branch] = u
	return d.saveRemotes(next)
}

// saveRemotes writes next and makes it the database's configuration.
// Called with remotesMu held.
func (d *Database) saveRemotes(next *remoteConfig) error {
	if err := next.save(d.dir); err != nil {
		return err
	}
	d.remotes = next
	return nil
}

func (cfg *remoteConfig) clone() *remoteConfig {
	return &remoteConfig{remotes: maps.Clone(cfg.remotes), upstreams: maps.Clone(cfg.upstreams)}
}

// RemoteBranches lists the remote-tracking refs ("origin/main") with
// their commits, sorted.
func (d *Database) RemoteBranches(ctx context.Context) ([]BranchInfo, error) {
	if err := d.hold(ctx); err != nil {
		return nil, err
	}
	defer d.release()
	if !d.born.Load() {
		return nil, nil
	}
	refs, err := datasetRefs(ctx, d.db, refRemotes)
	if err != nil {
		return nil, err
	}
	var out []BranchInfo
	for _, name := range slices.Sorted(maps.Keys(refs)) {
		c, err := datas.LoadCommitAddr(ctx, d.vs, refs[name])
		if err != nil {
			return nil, err
		}
		info, err := d.describe(ctx, c, nil)
		if err != nil {
			return nil, err
		}
		out = append(out, BranchInfo{Name: name, Head: info})
	}
	return out, nil
}

// trackingRefs maps a remote's branches to the commits its tracking refs
// hold.
func (d *Database) trackingRefs(ctx context.Context, remote string) (map[string]hash.Hash, error) {
	if !d.born.Load() {
		return map[string]hash.Hash{}, nil
	}
	return datasetRefs(ctx, d.db, refRemotes+remote+"/")
}

// setTrackingRef points remote/branch at a commit the store holds.
func (d *Database) setTrackingRef(ctx context.Context, remote, branch string, addr hash.Hash) error {
	ds, err := d.db.GetDataset(ctx, refRemotes+remote+"/"+branch)
	if err != nil {
		return err
	}
	_, err = d.db.SetHead(ctx, ds, addr, "")
	return err
}

// deleteTrackingRefs removes a remote's tracking refs but those keep
// names (nil: all).
func (d *Database) deleteTrackingRefs(ctx context.Context, remote string, keep map[string]hash.Hash) error {
	refs, err := d.trackingRefs(ctx, remote)
	if err != nil {
		return err
	}
	for branch := range refs {
		if _, ok := keep[branch]; ok {
			continue
		}
		if err := d.deleteTrackingRef(ctx, remote, branch); err != nil {
			return err
		}
	}
	return nil
}

// deleteTrackingRef removes remote/branch, if the database has it.
func (d *Database) deleteTrackingRef(ctx context.Context, remote, branch string) error {
	if !d.born.Load() {
		return nil
	}
	ds, err := d.db.GetDataset(ctx, refRemotes+remote+"/"+branch)
	if err != nil || !ds.HasHead() {
		return err
	}
	_, err = d.db.Delete(ctx, ds, "")
	return err
}
