package storage

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/dolthub/dolt/go/store/datas"
	"github.com/dolthub/dolt/go/store/hash"
	"github.com/dolthub/dolt/go/store/prolly"
	"github.com/dolthub/dolt/go/store/types"
)

// CommitInfo describes one commit.
type CommitInfo struct {
	ID        string
	Parents   []string
	Message   string
	Author    string
	Timestamp time.Time
	Refs      []string
}

// CommitOptions are the user-supplied parts of a commit.
type CommitOptions struct {
	Message string
	Author  string    // "Name <email>"; empty: the engine's default
	Time    time.Time // zero: now
	// Describe, when set, makes the message and author from the notes of
	// the writes the commit holds (Tx.Note), read under the branch's
	// writer lock, so that they are exactly those writes'.
	Describe func(notes []WriteNote) (message, author string)
}

// WriteNote describes one write for the commit that will hold it.
type WriteNote struct {
	Author, Message string
}

// Note describes the write for the next commit of its branch that asks
// for its writes' notes (CommitOptions.Describe).
func (tx *Tx) Note(n WriteNote) { tx.note = &n }

// addNote keeps a published write's note. Called with b.writeMu held.
func (b *branch) addNote(tx *Tx) {
	if tx.note != nil {
		b.notes = append(b.notes, *tx.note)
	}
}

// maxCommitMeta bounds a commit's or tag's message and author together.
// Dolt encodes them in one flatbuffer and panics past 16 MiB; a megabyte
// is more than any message needs.
const maxCommitMeta = 1 << 20

// commitMeta checks the user's parts of a commit here, as the client's
// mistakes: Dolt refuses a blank message or an author without an email
// with errors of its own.
func (d *Database) commitMeta(opts CommitOptions) (*datas.CommitMeta, error) {
	author := opts.Author
	if author == "" {
		author = d.engine.opts.Author
	}
	name, email, ok := splitAuthor(author)
	switch {
	case !ok:
		return nil, fmt.Errorf("%w: author %q is not of the form \"Name <email>\"", ErrInvalidCommitMeta, author)
	case strings.TrimSpace(opts.Message) == "":
		return nil, fmt.Errorf("%w: the commit message is empty", ErrInvalidCommitMeta)
	}
	if err := checkMetaSize(opts.Message, author); err != nil {
		return nil, err
	}
	ts := opts.Time
	if ts.IsZero() {
		ts = time.Now()
	}
	return datas.NewCommitMetaWithUserTS(name, email, opts.Message, ts)
}

// checkMetaSize refuses commit or tag metadata over maxCommitMeta.
func checkMetaSize(parts ...string) error {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	if n > maxCommitMeta {
		return fmt.Errorf("%w: message and author take %d bytes, more than the %d allowed", ErrInvalidCommitMeta, n, maxCommitMeta)
	}
	return nil
}

// splitAuthor parses "Name <email>"; ok is false unless both parts are
// there.
func splitAuthor(a string) (name, email string, ok bool) {
	i := strings.Index(a, "<")
	if i < 0 || !strings.HasSuffix(a, ">") {
		return a, "", false
	}
	name, email = strings.TrimSpace(a[:i]), strings.TrimSpace(a[i+1:len(a)-1])
	return name, email, name != "" && email != ""
}

func formatAuthor(name, email string) string {
	if email == "" {
		return name
	}
	return name + " <" + email + ">"
}

// ValidRefName applies Git's main rules for branch and tag names, and
// Dolt's on top (ASCII only, no component starting with '.' or ending in
// ".lock"), which refuses the rest with an error of its own.
func ValidRefName(name string) bool {
	if name == "" || name == "HEAD" || strings.HasPrefix(name, "-") || strings.HasSuffix(name, ".") ||
		strings.HasSuffix(name, "/") || strings.Contains(name, "..") || strings.Contains(name, "//") {
		return false
	}
	return !strings.ContainsAny(name, " ~^:?*[\\@\x00\t\n") && datas.ValidateDatasetId(refHeads+name) == nil
}

// lockedBranch runs fn with a branch's writers stopped and its edits
// checkpointed, so fn sees a stable root.
func (d *Database) lockedBranch(ctx context.Context, name string, fn func(b *branch) error) error {
	b, err := d.branch(ctx, name)
	if err != nil {
		return err
	}
	// A checkpoint running beside the writers ends first: the one below
	// then folds only what was written since.
	d.ckptMu.Lock()
	defer d.ckptMu.Unlock()
	d.engine.lockWriter(b)
	defer b.writeMu.Unlock()
	if d.closed.Load() {
		return ErrClosed
	}
	if b.deleted {
		return fmt.Errorf("%w: %s", ErrBranchNotFound, name)
	}
	if err := d.checkpointLocked(ctx, b); err != nil {
		return diskFull(err)
	}
	defer d.reloadOnPanic(b)
	d.engine.panics.at("vc.locked")
	if err := fn(b); err != nil {
		d.removeFailedTemp(err)
		return diskFull(err)
	}
	return nil
}

// reloadOnPanic, deferred under b's writer lock, reloads b from its refs
// and working set when the operation panics, then lets the panic go on.
// A version-control operation moves refs and the working set on disk before
// its in-memory state follows; a panic between the two must not leave them
// apart. Nothing is lost: b was checkpointed before the operation began.
func (d *Database) reloadOnPanic(b *branch) {
	p := recover()
	if p == nil {
		return
	}
	fresh, err := d.loadBranch(context.Background(), b.name)
	switch {
	case errors.Is(err, ErrBranchNotFound):
		b.deleted = true
		b.hist.release(d.engine)
		d.mu.Lock()
		delete(d.branches, b.name)
		d.mu.Unlock()
	case err != nil:
		d.log.Error().Str("c", "STORAGE").Err(err).Str("db", d.name).Str("branch", b.name).
			Msg("reloading a branch after a panic failed")
	default:
		b.ws, b.headRef = fresh.ws, fresh.headRef
		b.setDurable(fresh.state.Load())
	}
	panic(p)
}

// claimLogged is st, which is to replace b's state, claiming the log
// position of that state: a state built afresh (a merge's) holds every
// write logged for b so far all the same, and recovery must not replay
// those records over it. Called with b's writer lock held.
func claimLogged(b *branch, st *rootState) *rootState {
	cur := b.state.Load()
	if st.lsn >= cur.lsn {
		return st
	}
	claimed := *st
	claimed.lsn, claimed.ckptLSN = cur.lsn, cur.lsn
	return &claimed
}

func (d *Database) workingSetSpec(working, staged types.Ref, lsn uint64) datas.WorkingSetSpec {
	return datas.WorkingSetSpec{
		Meta: &datas.WorkingSetMeta{
			Name: "dumbodb", Email: "dumbodb@localhost",
			Description: fmt.Sprintf("%s%d", walLSNPrefix, lsn),
			Timestamp:   uint64(time.Now().UnixMilli()),
		},
		WorkingRoot: working,
		StagedRoot:  staged,
	}
}

// describe turns a commit into a CommitInfo; refs maps commits to names.
func (d *Database) describe(ctx context.Context, c *datas.Commit, refs map[hash.Hash][]string) (CommitInfo, error) {
	meta, err := datas.GetCommitMeta(ctx, c.NomsValue())
	if err != nil {
		return CommitInfo{}, err
	}
	parents, err := datas.GetCommitParents(ctx, d.vs, c.NomsValue())
	if err != nil {
		return CommitInfo{}, err
	}
	info := CommitInfo{
		ID: c.Addr().String(), Message: meta.Description,
		Author:    formatAuthor(meta.Name, meta.Email),
		Timestamp: time.UnixMilli(meta.UserTimestamp),
		Refs:      refs[c.Addr()],
	}
	for _, p := range parents {
		info.Parents = append(info.Parents, p.Addr().String())
	}
	return info, nil
}

// BranchInfo describes a branch.
type BranchInfo struct {
	Name string
	Head CommitInfo
}

// Branches lists the branches with their head commits.
func (d *Database) Branches(ctx context.Context) ([]BranchInfo, error) {
	if err := d.hold(ctx); err != nil {
		return nil, err
	}
	defer d.release()
	names, err := d.branchNames(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]BranchInfo, 0, len(names))
	for _, n := range names {
		c, err := d.headCommit(ctx, n)
		if err != nil {
			return nil, err
		}
		info, err := d.describe(ctx, c, nil)
		if err != nil {
			return nil, err
		}
		out = append(out, BranchInfo{Name: n, Head: info})
	}
	return out, nil
}

// CreateBranch makes a branch at a revision's commit (a branch's head).
func (d *Database) CreateBranch(ctx context.Context, name string, at Revision) (CommitInfo, error) {
	ctx, leave, err := d.enterGate(ctx)
	if err != nil {
		return CommitInfo{}, err
	}
	defer leave()
	if err := d.hold(ctx); err != nil {
		return CommitInfo{}, err
	}
	defer d.release()
	if !ValidRefName(name) {
		return CommitInfo{}, fmt.Errorf("%w: %q", ErrInvalidRefName, name)
	}
	if ok, err := d.hasRef(ctx, refHeads, name); err != nil || ok {
		if err == nil {
			err = fmt.Errorf("%w: %s", ErrBranchExists, name)
		}
		return CommitInfo{}, err
	}
	c, err := d.revisionCommit(ctx, at)
	if err != nil {
		return CommitInfo{}, err
	}
	ds, err := d.refDataset(ctx, refHeads, name)
	if err != nil {
		return CommitInfo{}, err
	}
	if _, err := d.db.SetHead(ctx, ds, c.Addr(), ""); err != nil {
		return CommitInfo{}, err
	}
	d.engine.panics.at("vc.ref")
	ws, err := d.refDataset(ctx, refWorkingSets, name)
	if err != nil {
		return CommitInfo{}, err
	}
	// The new branch's log position starts at the log's end: no earlier
	// record is about it.
	if _, _, err := d.newWorkingSet(ctx, ws, c, d.wl.LastLSN()); err != nil {
		return CommitInfo{}, err
	}
	return d.describe(ctx, c, nil)
}

// newWorkingSet points a branch's working set at a commit's root.
func (d *Database) newWorkingSet(ctx context.Context, ws datas.Dataset, c *datas.Commit, lsn uint64) (datas.Dataset, types.Ref, error) {
	ref, err := d.commitRootRef(ctx, c)
	if err != nil {
		return ws, types.Ref{}, err
	}
	prev, _ := ws.MaybeHeadAddr()
	ws, err = d.db.UpdateWorkingSet(ctx, ws, d.workingSetSpec(ref, ref, lsn), prev)
	return ws, ref, err
}

// resetWorkingSet makes a locked branch's working state a commit's root.
func (d *Database) resetWorkingSet(ctx context.Context, b *branch, c *datas.Commit) error {
	lsn := b.state.Load().lsn
	ws, ref, err := d.newWorkingSet(ctx, b.ws, c, lsn)
	if err != nil {
		return err
	}
	return d.installWorkingRoot(ctx, b, ws, ref.TargetHash(), lsn, &ref)
}

// installWorkingRoot makes a locked branch's state the root its working
// set ws now holds (and, when headRef is set, its head's root that).
func (d *Database) installWorkingRoot(ctx context.Context, b *branch, ws datas.Dataset, root hash.Hash, lsn uint64, headRef *types.Ref) error {
	st, err := loadRootState(ctx, d.ns, root)
	if err != nil {
		return err
	}
	st.lsn, st.ckptLSN = lsn, lsn
	b.ws = ws
	b.notes = nil // the writes they describe are gone from the working set
	if headRef != nil {
		b.headRef = *headRef
	}
	prev := b.state.Load()
	d.engine.addEditBytes(-prev.editBytes())
	b.setDurable(st)
	d.logStateChange(ctx, b, prev, st)
	return nil
}

// revisionCommit is the commit a revision stands for (a branch's head).
func (d *Database) revisionCommit(ctx context.Context, rev Revision) (*datas.Commit, error) {
	if rev.ReadOnly() {
		return datas.LoadCommitAddr(ctx, d.vs, rev.Commit)
	}
	return d.headCommit(ctx, rev.Branch)
}

// DeleteBranch removes a branch. Without force it refuses a branch whose
// head is not in current's history, or that has uncommitted changes.
func (d *Database) DeleteBranch(ctx context.Context, name, current string, force bool) error {
	ctx, leave, err := d.enterGate(ctx)
	if err != nil {
		return err
	}
	defer leave()
	if err := d.hold(ctx); err != nil {
		return err
	}
	defer d.release()
	if name == DefaultBranch {
		return ErrDeleteDefault
	}
	head, err := d.headCommit(ctx, name)
	if err != nil {
		return err
	}
	if !force {
		if err := d.checkMerged(ctx, head, current); err != nil {
			return err
		}
	}
	return d.lockedBranch(ctx, name, func(b *branch) error {
		if !force {
			if same, err := sameData(ctx, d.ns, b.state.Load().root, b.headRef.TargetHash()); err != nil || !same {
				return cmp.Or(err, fmt.Errorf("%w: %s", ErrBranchDirty, name))
			}
		}
		if _, err := d.db.Delete(ctx, b.ws, ""); err != nil && b.ws.HasHead() {
			return err
		}
		ds, err := d.refDataset(ctx, refHeads, name)
		if err != nil {
			return err
		}
		if _, err := d.db.Delete(ctx, ds, ""); err != nil {
			return err
		}
		d.engine.panics.at("vc.ref")
		b.deleted = true
		b.hist.release(d.engine)
		d.mu.Lock()
		delete(d.branches, name)
		d.mu.Unlock()
		return nil
	})
}

func (d *Database) checkMerged(ctx context.Context, head *datas.Commit, current string) error {
	cur, err := d.headCommit(ctx, current)
	if err != nil {
		return err
	}
	bases, err := d.mergeBases(ctx, []*datas.Commit{head}, []*datas.Commit{cur})
	if err != nil {
		return err
	}
	if !onlyBase(bases, head) {
		return ErrBranchUnmerged
	}
	return nil
}

// AheadBehind counts the commits target has that base lacks (ahead) and
// the other way round (behind).
func (d *Database) AheadBehind(ctx context.Context, base, target Revision) (ahead, behind int, err error) {
	if err := d.hold(ctx); err != nil {
		return 0, 0, err
	}
	defer d.release()
	bc, err := d.revisionCommit(ctx, base)
	if err != nil {
		return 0, 0, err
	}
	tc, err := d.revisionCommit(ctx, target)
	if err != nil {
		return 0, 0, err
	}
	err = d.walkSides(ctx, []*datas.Commit{tc}, []*datas.Commit{bc}, func(_ *datas.Commit, s uint8) error {
		switch s {
		case reachLeft:
			ahead++
		case reachRight:
			behind++
		}
		return nil
	})
	return ahead, behind, err
}

// Reset moves a branch's head to a commit. A soft reset keeps the working
// state; a hard one replaces it with the commit's root and ends any merge.
func (d *Database) Reset(ctx context.Context, branchName string, to Revision, hard bool) (CommitInfo, error) {
	ctx, leave, err := d.enterGate(ctx)
	if err != nil {
		return CommitInfo{}, err
	}
	defer leave()
	if err := d.hold(ctx); err != nil {
		return CommitInfo{}, err
	}
	defer d.release()
	target, err := d.revisionCommit(ctx, to)
	if err != nil {
		return CommitInfo{}, err
	}
	err = d.lockedBranch(ctx, branchName, func(b *branch) error {
		head, err := d.refDataset(ctx, refHeads, b.name)
		if err != nil {
			return err
		}
		if _, err := d.db.SetHead(ctx, head, target.Addr(), ""); err != nil {
			return err
		}
		d.engine.panics.at("vc.ref")
		if hard {
			return d.resetWorkingSet(ctx, b, target)
		}
		headRef, err := d.commitRootRef(ctx, target)
		if err != nil {
			return err
		}
		b.headRef = headRef
		return d.persist(ctx, b, b.state.Load().root, b.state.Load().lsn)
	})
	if err != nil {
		return CommitInfo{}, err
	}
	return d.describe(ctx, target, nil)
}

func (d *Database) commitRootRef(ctx context.Context, c *datas.Commit) (types.Ref, error) {
	rootAddr, err := datas.GetCommitRootHash(c.NomsValue())
	if err != nil {
		return types.Ref{}, err
	}
	v, err := d.vs.ReadValue(ctx, rootAddr)
	if err != nil {
		return types.Ref{}, err
	}
	return types.NewRef(v, d.vs.Format())
}

// refsByCommit maps commits to the branch and tag names that point at them.
func (d *Database) refsByCommit(ctx context.Context) (map[hash.Hash][]string, error) {
	out := map[hash.Hash][]string{}
	err := d.eachRef(ctx, func(name string, c *datas.Commit) { out[c.Addr()] = append(out[c.Addr()], name) })
	return out, err
}

// eachRef calls fn with every branch and tag and the commit it points at.
func (d *Database) eachRef(ctx context.Context, fn func(name string, c *datas.Commit)) error {
	for _, prefix := range []string{refHeads, refTags} {
		names, err := d.refNames(ctx, prefix)
		if err != nil {
			return err
		}
		for _, n := range names {
			c, err := d.resolveCommit(ctx, n)
			if err != nil {
				return err
			}
			fn(n, c)
		}
	}
	return nil
}

// mapOf returns a collection's map in a state (empty when absent).
func (d *Database) mapOf(ctx context.Context, st *rootState, coll string) (prolly.Map, bool, error) {
	if c, ok := st.colls.lookup(coll); ok {
		return c.base, true, nil
	}
	m, err := emptyMap(ctx, d.ns)
	return m, false, err
}
