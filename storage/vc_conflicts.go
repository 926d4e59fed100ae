package storage

import (
	"context"
	"errors"
	"fmt"
	"github.com/dumbodb/dumbodb/storage/doctree"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/dolthub/dolt/go/store/datas"
	"github.com/dolthub/dolt/go/store/hash"
	"github.com/dolthub/dolt/go/store/prolly"
	"github.com/dolthub/dolt/go/store/prolly/tree"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Conflict is one document a merge could not merge. A nil document was
// absent (deleted) on that side.
type Conflict struct {
	Collection         string
	ID                 bsoncore.Value
	Base, Ours, Theirs bsoncore.Document
}

// Conflicts lists a branch's unresolved conflicts (of one collection when
// coll is set).
func (d *Database) Conflicts(ctx context.Context, branchName, coll string) ([]Conflict, error) {
	if err := d.hold(ctx); err != nil {
		return nil, err
	}
	defer d.release()
	snap, err := d.BranchSnapshot(ctx, branchName)
	if err != nil {
		return nil, err
	}
	var out []Conflict
	for _, name := range slices.Sorted(maps.Keys(snap.st.conflicts)) {
		if coll != "" && name != coll {
			continue
		}
		if out, err = d.readConflicts(ctx, name, snap.st.conflicts[name], -1, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// readConflicts appends to out the conflicts of collection coll's
// conflicts map m, in _id order: the first n of them (n < 0: all).
func (d *Database) readConflicts(ctx context.Context, coll string, m prolly.Map, n int, out []Conflict) ([]Conflict, error) {
	it, err := m.IterAll(ctx)
	if err != nil {
		return nil, err
	}
	for read := 0; n < 0 || read < n; read++ {
		_, v, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		raw, err := valueBytes(ctx, d.ns, v)
		if err != nil {
			return nil, err
		}
		out = append(out, conflictOf(coll, bsoncore.Document(append([]byte(nil), raw...))))
	}
	return out, nil
}

func conflictOf(coll string, rec bsoncore.Document) Conflict {
	c := Conflict{Collection: coll}
	c.Base, _ = rec.Lookup("base").DocumentOK()
	c.Ours, _ = rec.Lookup("ours").DocumentOK()
	c.Theirs, _ = rec.Lookup("theirs").DocumentOK()
	for _, doc := range []bsoncore.Document{c.Ours, c.Theirs, c.Base} {
		if doc != nil {
			c.ID = doc.Lookup("_id")
			break
		}
	}
	return c
}

// Resolutions of a conflict.
const (
	ResolveOurs   = "ours"
	ResolveTheirs = "theirs"
	ResolveCustom = "custom"
)

// ResolveConflict settles one conflict: keep ours, take theirs, or store
// a custom document (nil custom with "custom": delete the document).
func (d *Database) ResolveConflict(ctx context.Context, branchName, coll string, id bsoncore.Value, resolution string, custom bsoncore.Document) error {
	ctx, leave, err := d.enterGate(ctx)
	if err != nil {
		return err
	}
	defer leave()
	if err := d.hold(ctx); err != nil {
		return err
	}
	defer d.release()
	key := encodeID(id)
	return d.lockedBranch(ctx, branchName, func(b *branch) error {
		st := b.state.Load()
		cm, ok := st.conflicts[coll]
		if !ok {
			return fmt.Errorf("%w: %s", ErrConflictMissing, coll)
		}
		raw, found, err := lookup(ctx, d.ns, cm, nil, key)
		if err != nil || !found {
			if err == nil {
				err = ErrConflictMissing
			}
			return err
		}
		var doc bsoncore.Document
		switch resolution {
		case ResolveOurs:
			doc, _ = bsoncore.Document(raw).Lookup("ours").DocumentOK()
		case ResolveTheirs:
			doc, _ = bsoncore.Document(raw).Lookup("theirs").DocumentOK()
		default:
			doc = custom
		}
		if resolution != ResolveOurs {
			if err := checkResolution(st, coll, doc); err != nil {
				return err
			}
		}
		return d.settle(ctx, b, st, coll, key, doc)
	})
}

// checkResolution refuses a resolution the collection's validator
// refuses, as it refused it in the merge (vc_merge_validator.go); ours is
// what the branch had, so it is never checked.
func checkResolution(st *rootState, coll string, doc bsoncore.Document) error {
	c, ok := st.colls.lookup(coll)
	if !ok || doc == nil {
		return nil
	}
	v, _, err := mergeValidator(c.info.Options)
	if err != nil || v == nil || v.Match(doc) {
		return err
	}
	return ErrDocumentValidation
}

// settle writes the chosen document and drops the conflict entry.
// A conflict whose collection is gone (dropped or renamed by a log written
// before such changes were refused) cannot be settled: the merge must be
// aborted.
func (d *Database) settle(ctx context.Context, b *branch, st *rootState, coll string, key []byte, doc bsoncore.Document) error {
	cur := st.colls.get(coll)
	if cur == nil {
		return fmt.Errorf("%w: collection %q of the conflict no longer exists; abort the merge", ErrNamespaceNotFound, coll)
	}
	next := *st
	c := *cur
	ed := newEdits()
	_, existed, err := lookup(ctx, d.ns, c.base, nil, key)
	if err != nil {
		return err
	}
	c.edits = ed
	if err := settleCapped(ctx, d.ns, &c, key, doc); err != nil {
		return err
	}
	c.setEdit(&edit{key: key, value: doc}, existed)
	if c.base, err = foldEdits(ctx, d.ns, &c, d.largeDoc()); err != nil {
		return err
	}
	c.edits, c.editBytes = nil, 0
	next.colls = st.colls.with(map[string]*collection{coll: &c})
	next.conflicts = make(map[string]prolly.Map, len(st.conflicts))
	for n, m := range st.conflicts {
		next.conflicts[n] = m
	}
	if next.conflicts[coll], err = deleteMapKey(ctx, d.ns, st.conflicts[coll], key); err != nil {
		return err
	}
	if n, _ := next.conflicts[coll].Count(); n == 0 {
		delete(next.conflicts, coll)
	}
	return d.storeWorking(ctx, b, &next)
}

func deleteMapKey(ctx context.Context, ns tree.NodeStore, m prolly.Map, key []byte) (prolly.Map, error) {
	k, err := doctree.KeyTuple(ns, key)
	if err != nil {
		return prolly.Map{}, err
	}
	mut := m.Mutate()
	if err := mut.Delete(ctx, k); err != nil {
		return prolly.Map{}, err
	}
	return mut.Map(ctx)
}

// MergeAbort ends a merge in progress and restores the head commit's state.
func (d *Database) MergeAbort(ctx context.Context, branchName string) error {
	ctx, leave, err := d.enterGate(ctx)
	if err != nil {
		return err
	}
	defer leave()
	if err := d.hold(ctx); err != nil {
		return err
	}
	defer d.release()
	return d.lockedBranch(ctx, branchName, func(b *branch) error {
		st := b.state.Load()
		if !st.hasMerge() {
			return ErrNoMergeInProgress
		}
		if kind, _ := st.merge.Lookup("kind").StringValueOK(); kind == KindRebase {
			orig, err := d.commitByHash(ctx, st.merge.Lookup("orig").StringValue())
			if err != nil {
				return err
			}
			return d.moveHead(ctx, b, orig)
		}
		head, err := d.headCommit(ctx, b.name)
		if err != nil {
			return err
		}
		return d.resetWorkingSet(ctx, b, head)
	})
}

// MergeContinue commits a merge whose conflicts are all resolved.
func (d *Database) MergeContinue(ctx context.Context, branchName string, opts CommitOptions) (CommitInfo, error) {
	ctx, leave, err := d.enterGate(ctx)
	if err != nil {
		return CommitInfo{}, err
	}
	defer leave()
	if err := d.hold(ctx); err != nil {
		return CommitInfo{}, err
	}
	defer d.release()
	var info CommitInfo
	err = d.lockedBranch(ctx, branchName, func(b *branch) error {
		st := b.state.Load()
		if !st.hasMerge() {
			return ErrNoMergeInProgress
		}
		if len(st.conflicts) > 0 {
			return ErrUnresolved
		}
		if opts.Message == "" {
			opts.Message, _ = st.merge.Lookup("message").StringValueOK()
		}
		if opts.Author == "" {
			opts.Author, _ = st.merge.Lookup("author").StringValueOK()
		}
		var parents []hash.Hash
		if arr, ok := st.merge.Lookup("parents").ArrayOK(); ok {
			vals, _ := arr.Values()
			for _, v := range vals {
				if h, ok := hash.MaybeParse(v.StringValue()); ok {
					parents = append(parents, h)
				}
			}
		}
		c, err := d.commitRoot(ctx, b, st, opts, parents)
		if err != nil {
			return err
		}
		if kind, _ := st.merge.Lookup("kind").StringValueOK(); kind == KindRebase {
			if err := d.continueRebase(ctx, b, st.merge); err != nil {
				return err
			}
			if c, err = d.headCommit(ctx, b.name); err != nil {
				return err
			}
		}
		info, err = d.describe(ctx, c, nil)
		return err
	})
	return info, err
}

// CherryPick applies the change a commit made (relative to its first
// parent) onto a branch, as a new commit with the same message.
func (d *Database) CherryPick(ctx context.Context, branchName string, rev Revision, opts CommitOptions) (MergeResult, error) {
	ctx, leave, err := d.enterGate(ctx)
	if err != nil {
		return MergeResult{}, err
	}
	defer leave()
	if err := d.hold(ctx); err != nil {
		return MergeResult{}, err
	}
	defer d.release()
	return d.applyCommitChange(ctx, branchName, rev, opts, false)
}

// Revert undoes the change a commit made, as a new commit.
func (d *Database) Revert(ctx context.Context, branchName string, rev Revision, opts CommitOptions) (MergeResult, error) {
	ctx, leave, err := d.enterGate(ctx)
	if err != nil {
		return MergeResult{}, err
	}
	defer leave()
	if err := d.hold(ctx); err != nil {
		return MergeResult{}, err
	}
	defer d.release()
	return d.applyCommitChange(ctx, branchName, rev, opts, true)
}

// revertMessage is Git's message for a revert: `Revert "<subject>"`, the
// subject as it is. (Quoting it Go-style doubled the backslashes of every
// revert of a revert, until the message outgrew what Dolt can store.)
func revertMessage(description string) string {
	subject, _, _ := strings.Cut(description, "\n")
	return `Revert "` + subject + `"`
}

func (d *Database) applyCommitChange(ctx context.Context, branchName string, rev Revision, opts CommitOptions, revert bool) (MergeResult, error) {
	c, err := d.revisionCommit(ctx, rev)
	if err != nil {
		return MergeResult{}, err
	}
	parents, err := datas.GetCommitParents(ctx, d.vs, c.NomsValue())
	if err != nil {
		return MergeResult{}, err
	}
	if len(parents) != 1 {
		return MergeResult{}, fmt.Errorf("%w: commit %s has %d parents; pick a commit with one", ErrNotSingleParent, c.Addr(), len(parents))
	}
	meta, err := datas.GetCommitMeta(ctx, c.NomsValue())
	if err != nil {
		return MergeResult{}, err
	}
	base, theirs, kind := parents[0], c, KindCherryPick
	if opts.Message == "" {
		opts.Message = meta.Description
	}
	if revert {
		base, theirs, kind = c, parents[0], KindRevert
		if opts.Message == meta.Description {
			opts.Message = revertMessage(meta.Description)
		}
	}
	var res MergeResult
	err = d.lockedBranch(ctx, branchName, func(b *branch) error {
		if _, err := d.readyToMerge(ctx, b); err != nil {
			return err
		}
		baseState, err := d.commitState(ctx, base)
		if err != nil {
			return err
		}
		return d.applyThreeWay(ctx, b, baseState, theirs, kind, opts, nil, &res)
	})
	return res, err
}
