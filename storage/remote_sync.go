package storage

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/dolthub/dolt/go/store/chunks"
	"github.com/dolthub/dolt/go/store/datas"
	"github.com/dolthub/dolt/go/store/hash"
)

// Fetch, push and pull between a database and its remotes
// (docs/design/remotes.md).

// RefUpdate is one ref a fetch or push moved; Old or New is "" when the
// ref was created or deleted.
type RefUpdate struct {
	Name     string
	Old, New string
}

// FetchResult is what a fetch did.
type FetchResult struct {
	Updated     []RefUpdate
	Transferred TransferStats
}

// Fetch copies a remote's branches (one when branch is set) and the tags
// the database lacks into the database, and points the tracking refs
// <remote>/<branch> at them; with prune, tracking refs of branches the
// remote no longer has go.
func (d *Database) Fetch(ctx context.Context, remote, branch string, prune bool) (FetchResult, error) {
	ctx, leave, err := d.enterGate(ctx)
	if err != nil {
		return FetchResult{}, err
	}
	defer leave()
	if err := d.hold(ctx); err != nil {
		return FetchResult{}, err
	}
	defer d.release()
	return d.fetch(ctx, remote, branch, prune)
}

func (d *Database) fetch(ctx context.Context, remote, branch string, prune bool) (FetchResult, error) {
	var res FetchResult
	rs, err := d.openNamedRemote(ctx, remote, false)
	if err != nil {
		return res, err
	}
	defer rs.close()
	heads, tags, err := remoteRefsToFetch(ctx, rs, branch)
	if err != nil {
		return res, err
	}
	if err := d.ensureBorn(ctx); err != nil {
		return res, err
	}
	d.compactMu.Lock() // GC would drop copied chunks no ref reaches yet
	defer d.compactMu.Unlock()
	rawURL, _ := d.remoteURL(remote)
	src, finish := d.engine.cachedSource(ctx, rawURL, rs.chunks())
	err = d.fetchFrom(ctx, src, remote, heads, tags, prune && branch == "", &res)
	res.Transferred.Resumed = finish(err == nil)
	return res, err
}

// fetchFrom copies the heads and the missing tags from src and moves the
// tracking refs.
func (d *Database) fetchFrom(ctx context.Context, src chunks.ChunkStore, remote string, heads, tags map[string]hash.Hash, prune bool, res *FetchResult) error {
	var err error
	if res.Transferred, err = copyChunks(ctx, src, d.cs, slices.Collect(maps.Values(heads))); err != nil {
		return err
	}
	if res.Updated, err = d.moveTrackingRefs(ctx, remote, heads, prune); err != nil {
		return err
	}
	return d.addMissingTags(ctx, src, tags, res)
}

// remoteRefsToFetch are a remote's branch heads (one branch's when
// branch is set) and its tags.
func remoteRefsToFetch(ctx context.Context, rs remoteStore, branch string) (heads, tags map[string]hash.Hash, err error) {
	if heads, err = rs.refs(ctx, refHeads); err != nil {
		return nil, nil, err
	}
	if branch != "" {
		addr, ok := heads[branch]
		if !ok {
			return nil, nil, fmt.Errorf("%w: %s on the remote", ErrBranchNotFound, branch)
		}
		heads = map[string]hash.Hash{branch: addr}
	}
	tags, err = rs.refs(ctx, refTags)
	return heads, tags, err
}

// moveTrackingRefs points the remote's tracking refs at heads, and with
// prune deletes those of branches not in heads.
func (d *Database) moveTrackingRefs(ctx context.Context, remote string, heads map[string]hash.Hash, prune bool) ([]RefUpdate, error) {
	old, err := d.trackingRefs(ctx, remote)
	if err != nil {
		return nil, err
	}
	var updated []RefUpdate
	for _, b := range slices.Sorted(maps.Keys(heads)) {
		if old[b] == heads[b] {
			continue
		}
		if err := d.setTrackingRef(ctx, remote, b, heads[b]); err != nil {
			return nil, err
		}
		updated = append(updated, RefUpdate{Name: remote + "/" + b, Old: addrString(old[b]), New: heads[b].String()})
	}
	if !prune {
		return updated, nil
	}
	for _, b := range slices.Sorted(maps.Keys(old)) {
		if _, ok := heads[b]; !ok {
			updated = append(updated, RefUpdate{Name: remote + "/" + b, Old: old[b].String()})
		}
	}
	return updated, d.deleteTrackingRefs(ctx, remote, heads)
}

// addMissingTags copies the remote's tags that the database lacks, as
// git fetch does for tags; a tag the database has keeps its value.
func (d *Database) addMissingTags(ctx context.Context, src chunks.ChunkStore, tags map[string]hash.Hash, res *FetchResult) error {
	local, err := datasetRefs(ctx, d.db, refTags)
	if err != nil {
		return err
	}
	var missing []hash.Hash
	for name, addr := range tags {
		if _, ok := local[name]; !ok {
			missing = append(missing, addr)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	st, err := copyChunks(ctx, src, d.cs, missing)
	if err != nil {
		return err
	}
	res.Transferred.Chunks += st.Chunks
	res.Transferred.Bytes += st.Bytes
	for _, name := range slices.Sorted(maps.Keys(tags)) {
		if _, ok := local[name]; ok {
			continue
		}
		if err := setRef(ctx, d.db, refTags+name, tags[name]); err != nil {
			return err
		}
		res.Updated = append(res.Updated, RefUpdate{Name: "tag " + name, New: tags[name].String()})
	}
	return nil
}

// setRef points a store's dataset at a commit or tag it holds.
func setRef(ctx context.Context, db datas.Database, id string, addr hash.Hash) error {
	ds, err := db.GetDataset(ctx, id)
	if err != nil {
		return err
	}
	_, err = db.SetHead(ctx, ds, addr, "")
	return err
}

func addrString(h hash.Hash) string {
	if h.IsEmpty() {
		return ""
	}
	return h.String()
}

// PushOptions are a push's arguments.
type PushOptions struct {
	Remote, Branch, RemoteBranch string
	SetUpstream, Force, Delete   bool
	Tags                         bool // also push the tags the remote lacks
}

// PushResult is what a push did.
type PushResult struct {
	Remote      string
	Updated     []RefUpdate
	UpToDate    bool
	Transferred TransferStats
}

// Push copies a branch's head commit to a remote and moves the remote
// branch to it, refusing what is not a fast-forward unless Force; with
// Delete it removes the remote branch instead. The remote and remote
// branch default to the branch's upstream.
func (d *Database) Push(ctx context.Context, o PushOptions) (PushResult, error) {
	ctx, leave, err := d.enterGate(ctx)
	if err != nil {
		return PushResult{}, err
	}
	defer leave()
	if err := d.hold(ctx); err != nil {
		return PushResult{}, err
	}
	defer d.release()
	if err := d.remoteBranchOf(o.Branch, &o.Remote, &o.RemoteBranch); err != nil {
		return PushResult{}, err
	}
	rs, err := d.openNamedRemote(ctx, o.Remote, !o.Delete)
	if err != nil {
		return PushResult{}, err
	}
	defer rs.close()
	if o.Delete {
		return d.deleteRemoteBranch(ctx, rs, o)
	}
	if err := d.ensureBorn(ctx); err != nil {
		return PushResult{}, err
	}
	res, err := d.pushBranch(ctx, rs, o)
	if err != nil {
		return res, err
	}
	if o.Tags {
		if err := d.pushTags(ctx, rs, &res); err != nil {
			return res, err
		}
	}
	if o.SetUpstream {
		return res, d.setUpstream(o.Branch, Upstream{Remote: o.Remote, Branch: o.RemoteBranch})
	}
	return res, nil
}

// pushBranch copies the branch's head and moves the remote branch.
func (d *Database) pushBranch(ctx context.Context, rs remoteStore, o PushOptions) (PushResult, error) {
	res := PushResult{Remote: o.Remote}
	head, err := d.headCommit(ctx, o.Branch)
	if err != nil {
		return res, err
	}
	if res.Transferred, err = d.copyOut(ctx, rs, []hash.Hash{head.Addr()}); err != nil {
		return res, err
	}
	old, err := rs.moveRef(ctx, refHeads+o.RemoteBranch, head.Addr(), o.Force)
	switch {
	case errors.Is(err, ErrNotFastForward):
		return res, fmt.Errorf("%w: %s/%s has commits %s lacks: pull first, or push with force",
			ErrNotFastForward, o.Remote, o.RemoteBranch, o.Branch)
	case err != nil:
		return res, err
	case old == head.Addr():
		res.UpToDate = true
	default:
		res.Updated = append(res.Updated, RefUpdate{Name: o.RemoteBranch, Old: addrString(old), New: head.Addr().String()})
	}
	return res, d.setTrackingRef(ctx, o.Remote, o.RemoteBranch, head.Addr())
}

// copyOut copies what addrs reach to the remote; GC and compaction,
// which could remove or move the chunks it reads, wait for it.
func (d *Database) copyOut(ctx context.Context, rs remoteStore, addrs []hash.Hash) (TransferStats, error) {
	d.compactMu.Lock()
	defer d.compactMu.Unlock()
	return rs.sendChunks(ctx, d.cs, addrs)
}

// pushTags copies the tags the remote lacks.
func (d *Database) pushTags(ctx context.Context, rs remoteStore, res *PushResult) error {
	local, err := datasetRefs(ctx, d.db, refTags)
	if err != nil {
		return err
	}
	remote, err := rs.refs(ctx, refTags)
	if err != nil {
		return err
	}
	var missing []string
	for name := range local {
		if _, ok := remote[name]; !ok {
			missing = append(missing, name)
		}
	}
	slices.Sort(missing)
	addrs := make([]hash.Hash, len(missing))
	for i, name := range missing {
		addrs[i] = local[name]
	}
	if len(addrs) == 0 {
		return nil
	}
	st, err := d.copyOut(ctx, rs, addrs)
	if err != nil {
		return err
	}
	res.Transferred.Chunks += st.Chunks
	res.Transferred.Bytes += st.Bytes
	for i, name := range missing {
		if _, err := rs.moveRef(ctx, refTags+name, addrs[i], false); err != nil {
			return err
		}
		res.Updated = append(res.Updated, RefUpdate{Name: "tag " + name, New: addrs[i].String()})
	}
	return nil
}

// deleteRemoteBranch removes a branch of the remote and its tracking ref.
func (d *Database) deleteRemoteBranch(ctx context.Context, rs remoteStore, o PushOptions) (PushResult, error) {
	res := PushResult{Remote: o.Remote}
	branches, err := rs.refs(ctx, refHeads)
	if err != nil {
		return res, err
	}
	if _, ok := branches[o.RemoteBranch]; !ok {
		return res, fmt.Errorf("%w: %s on the remote", ErrBranchNotFound, o.RemoteBranch)
	}
	old, err := rs.moveRef(ctx, refHeads+o.RemoteBranch, hash.Hash{}, true)
	if err != nil {
		return res, err
	}
	res.Updated = append(res.Updated, RefUpdate{Name: o.RemoteBranch, Old: old.String()})
	return res, d.deleteTrackingRef(ctx, o.Remote, o.RemoteBranch)
}
