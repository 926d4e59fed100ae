package storage

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/dolthub/dolt/go/store/datas"
	"github.com/dolthub/dolt/go/store/hash"
)

// Revision is what a database name's "@..." part resolved to: a writable
// branch, or a read-only commit (a tag, a hash, or an ancestor expression).
type Revision struct {
	Branch string    // set for a branch
	Commit hash.Hash // set for a read-only snapshot
}

// ReadOnly reports whether writes to this revision are refused.
func (r Revision) ReadOnly() bool { return r.Branch == "" }

const (
	refHeads       = "refs/heads/"
	refTags        = "refs/tags/"
	refWorkingSets = "workingSets/heads/"
)

// branchNames lists the branches, sorted.
func (d *Database) branchNames(ctx context.Context) ([]string, error) {
	return d.refNames(ctx, refHeads)
}

// refNames lists the names of the refs under prefix, sorted. A store not
// written yet has main and nothing else (birth.go), which listing them
// need not write.
func (d *Database) refNames(ctx context.Context, prefix string) ([]string, error) {
	if !d.born.Load() {
		if prefix == refHeads {
			return []string{DefaultBranch}, nil
		}
		return nil, nil
	}
	dss, err := d.db.Datasets(ctx)
	if err != nil {
		return nil, err
	}
	var names []string
	err = dss.IterAll(ctx, func(id string, _ hash.Hash) error {
		if strings.HasPrefix(id, prefix) {
			names = append(names, strings.TrimPrefix(id, prefix))
		}
		return nil
	})
	sort.Strings(names)
	return names, err
}

// Resolve turns a revision spec into a Revision. current is the branch
// that HEAD means. Specs: a branch, a tag, a commit hash (or a unique
// prefix of at least 8 characters), HEAD, any of those followed by
// @{time} (vc_revision_time.go), and any of those followed by ~N or ^N
// (first parent N times, or the N-th parent).
func (d *Database) Resolve(ctx context.Context, spec, current string) (Revision, error) {
	if err := d.hold(ctx); err != nil {
		return Revision{}, err
	}
	defer d.release()
	base, steps, err := splitAncestry(spec)
	if err != nil {
		return Revision{}, err
	}
	base, at, timed, err := splitAtTime(base)
	if err != nil {
		return Revision{}, err
	}
	if base == "HEAD" || (timed && base == "") {
		base = current
	}
	if len(steps) == 0 && !timed {
		if ok, err := d.hasRef(ctx, refHeads, base); err != nil || ok {
			return Revision{Branch: base}, err
		}
	}
	c, err := d.resolveCommit(ctx, base)
	if err != nil {
		return Revision{}, err
	}
	if timed {
		if c, err = d.commitAtTime(ctx, c, at); err != nil {
			return Revision{}, err
		}
	}
	for _, st := range steps {
		if c, err = d.ancestor(ctx, c, st); err != nil {
			return Revision{}, fmt.Errorf("%w: %s", err, spec)
		}
	}
	return Revision{Commit: c.Addr()}, nil
}

// ancestryStep is one ~N or ^N.
type ancestryStep struct {
	tilde bool
	n     int
}

func splitAncestry(spec string) (string, []ancestryStep, error) {
	i := strings.IndexAny(spec, "~^")
	if i < 0 {
		return spec, nil, nil
	}
	base, rest := spec[:i], spec[i:]
	var steps []ancestryStep
	for rest != "" {
		op := rest[0]
		rest = rest[1:]
		j := 0
		for j < len(rest) && rest[j] >= '0' && rest[j] <= '9' {
			j++
		}
		n := 1
		if j > 0 {
			n, _ = strconv.Atoi(rest[:j])
		}
		rest = rest[j:]
		if op != '~' && op != '^' {
			return "", nil, fmt.Errorf("%w: bad ancestry in %q", ErrRevisionNotFound, spec)
		}
		steps = append(steps, ancestryStep{tilde: op == '~', n: n})
	}
	return base, steps, nil
}

func (d *Database) ancestor(ctx context.Context, c *datas.Commit, st ancestryStep) (*datas.Commit, error) {
	if st.tilde {
		for i := 0; i < st.n; i++ {
			parents, err := datas.GetCommitParents(ctx, d.vs, c.NomsValue())
			if err != nil {
				return nil, err
			}
			if len(parents) == 0 {
				return nil, ErrRevisionNotFound
			}
			c = parents[0]
		}
		return c, nil
	}
	if st.n == 0 {
		return c, nil
	}
	parents, err := datas.GetCommitParents(ctx, d.vs, c.NomsValue())
	if err != nil {
		return nil, err
	}
	if st.n > len(parents) {
		return nil, ErrRevisionNotFound
	}
	return parents[st.n-1], nil
}

func (d *Database) hasRef(ctx context.Context, prefix, name string) (bool, error) {
	ds, err := d.refDataset(ctx, prefix, name)
	if err != nil {
		return false, err
	}
	return ds.HasHead(), nil
}

// refDataset is the dataset of the ref prefix+name. Names come from
// clients, so one that breaks the ref rules is ErrInvalidRefName rather
// than Dolt's own error. Every version-control operation reads or moves
// refs through it, so it writes a new database's store first (birth.go).
func (d *Database) refDataset(ctx context.Context, prefix, name string) (datas.Dataset, error) {
	if !ValidRefName(name) {
		return datas.Dataset{}, fmt.Errorf("%w: %q", ErrInvalidRefName, name)
	}
	if err := d.ensureBorn(ctx); err != nil {
		return datas.Dataset{}, err
	}
	return d.db.GetDataset(ctx, prefix+name)
}

// resolveCommit finds the commit a branch, tag, remote-tracking ref
// (origin/main) or hash names.
func (d *Database) resolveCommit(ctx context.Context, name string) (*datas.Commit, error) {
	for _, prefix := range []string{refHeads, refTags, refRemotes} {
		ds, err := d.refDataset(ctx, prefix, name)
		if err != nil {
			return nil, err
		}
		if !ds.HasHead() {
			continue
		}
		if ds.IsTag() {
			_, addr, err := ds.HeadTag()
			if err != nil {
				return nil, err
			}
			return datas.LoadCommitAddr(ctx, d.vs, addr)
		}
		addr, _ := ds.MaybeHeadAddr()
		return datas.LoadCommitAddr(ctx, d.vs, addr)
	}
	return d.commitByHash(ctx, name)
}

// commitByHash loads a commit by its full hash, or by a unique prefix of
// at least 8 characters among the commits reachable from refs.
func (d *Database) commitByHash(ctx context.Context, s string) (*datas.Commit, error) {
	if h, ok := hash.MaybeParse(s); ok {
		c, err := datas.LoadCommitAddr(ctx, d.vs, h)
		if err != nil {
			return nil, fmt.Errorf("%w: %s", ErrRevisionNotFound, s)
		}
		return c, nil
	}
	if len(s) < 8 || len(s) >= 32 || strings.Trim(s, "0123456789abcdefghijklmnopqrstuv") != "" {
		return nil, fmt.Errorf("%w: %s", ErrRevisionNotFound, s) // not a prefix of a hash (base32 0-9a-v)
	}
	var found *datas.Commit
	err := d.walkAllCommits(ctx, func(c *datas.Commit) error {
		if strings.HasPrefix(c.Addr().String(), s) {
			if found != nil && found.Addr() != c.Addr() {
				return fmt.Errorf("%w: %s is ambiguous", ErrRevisionNotFound, s)
			}
			found = c
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if found == nil {
		return nil, fmt.Errorf("%w: %s", ErrRevisionNotFound, s)
	}
	return found, nil
}

// walkAllCommits visits every commit reachable from a branch or a tag once.
func (d *Database) walkAllCommits(ctx context.Context, fn func(*datas.Commit) error) error {
	heads, err := d.refHeadCommits(ctx)
	if err != nil {
		return err
	}
	seen := map[hash.Hash]bool{}
	stack := heads
	for len(stack) > 0 {
		c := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[c.Addr()] {
			continue
		}
		seen[c.Addr()] = true
		if err := fn(c); err != nil {
			return err
		}
		parents, err := datas.GetCommitParents(ctx, d.vs, c.NomsValue())
		if err != nil {
			return err
		}
		stack = append(stack, parents...)
	}
	return nil
}

// refHeadCommits is the commit of every branch and tag.
func (d *Database) refHeadCommits(ctx context.Context) ([]*datas.Commit, error) {
	var out []*datas.Commit
	err := d.eachRef(ctx, func(_ string, c *datas.Commit) { out = append(out, c) })
	return out, err
}

// headCommit is a branch's head commit.
func (d *Database) headCommit(ctx context.Context, branch string) (*datas.Commit, error) {
	ds, err := d.refDataset(ctx, refHeads, branch)
	if err != nil {
		return nil, err
	}
	addr, ok := ds.MaybeHeadAddr()
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrBranchNotFound, branch)
	}
	return datas.LoadCommitAddr(ctx, d.vs, addr)
}

// SnapshotAt is a read-only view of a revision: a branch's current state
// (uncommitted writes included) or a commit's root.
func (d *Database) SnapshotAt(ctx context.Context, rev Revision) (*Snapshot, error) {
	if err := d.hold(ctx); err != nil {
		return nil, err
	}
	defer d.release()
	if !rev.ReadOnly() {
		return d.BranchSnapshot(ctx, rev.Branch)
	}
	c, err := datas.LoadCommitAddr(ctx, d.vs, rev.Commit)
	if err != nil {
		return nil, err
	}
	st, err := d.commitState(ctx, c)
	if err != nil {
		return nil, err
	}
	return d.newSnapshot(st), nil
}

func (d *Database) commitState(ctx context.Context, c *datas.Commit) (*rootState, error) {
	rootAddr, err := datas.GetCommitRootHash(c.NomsValue())
	if err != nil {
		return nil, err
	}
	return loadRootState(ctx, d.ns, rootAddr)
}
