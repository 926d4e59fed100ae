package storage

import (
	"context"
	"fmt"
)

// PullOptions are a pull's arguments: the branch pulled into, and the
// remote and remote branch (by default the branch's upstream, else the
// branch of the same name on the remote named).
type PullOptions struct {
	Branch               string
	Remote, RemoteBranch string
	FFOnly, NoFF, Rebase bool
	Commit               CommitOptions // the merge commit's author and message
}

// PullResult is what a pull did.
type PullResult struct {
	Fetch FetchResult
	Merge MergeResult
}

// Pull fetches the remote branch and merges it into the branch (or, with
// Rebase, replays the branch's commits onto it). Conflicts stop the merge
// in the merge flow, as dumboMerge's do.
func (d *Database) Pull(ctx context.Context, o PullOptions) (PullResult, error) {
	ctx, leave, err := d.enterGate(ctx)
	if err != nil {
		return PullResult{}, err
	}
	defer leave()
	var res PullResult
	if err := d.hold(ctx); err != nil {
		return res, err
	}
	defer d.release()
	if err := d.remoteBranchOf(o.Branch, &o.Remote, &o.RemoteBranch); err != nil {
		return res, err
	}
	if res.Fetch, err = d.fetch(ctx, o.Remote, o.RemoteBranch, false); err != nil {
		return res, err
	}
	tracking, err := d.resolveCommit(ctx, o.Remote+"/"+o.RemoteBranch)
	if err != nil {
		return res, err
	}
	theirs := Revision{Commit: tracking.Addr()}
	if o.Rebase {
		res.Merge, err = d.Rebase(ctx, o.Branch, theirs)
		return res, err
	}
	opts := MergeOptions{CommitOptions: o.Commit, FFOnly: o.FFOnly, NoFF: o.NoFF}
	if opts.Message == "" {
		rawURL, _ := d.remoteURL(o.Remote)
		opts.Message = fmt.Sprintf("Merge branch '%s' of %s into %s", o.RemoteBranch, RedactURL(rawURL), o.Branch)
	}
	res.Merge, err = d.Merge(ctx, o.Branch, theirs, opts)
	return res, err
}

// remoteBranchOf fills in the remote and remote branch a push or pull of
// branch names: by default its upstream, else the branch of the same name
// on the remote named.
func (d *Database) remoteBranchOf(branch string, remote, remoteBranch *string) error {
	d.remotesMu.Lock()
	u, hasUpstream := d.remotes.upstreams[branch]
	d.remotesMu.Unlock()
	switch {
	case *remote == "" && !hasUpstream:
		return fmt.Errorf("%w: branch %s has none: name a remote", ErrNoUpstream, branch)
	case *remote == "":
		*remote = u.Remote
	}
	if *remoteBranch == "" {
		*remoteBranch = branch
		if hasUpstream && u.Remote == *remote {
			*remoteBranch = u.Branch
		}
	}
	return nil
}
