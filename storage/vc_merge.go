package storage

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/dumbodb/dumbodb/storage/doctree"
	"github.com/dumbodb/dumbodb/timeseries"
	"github.com/dumbodb/dumbodb/value"

	"github.com/dolthub/dolt/go/store/datas"
	"github.com/dolthub/dolt/go/store/hash"
	"github.com/dolthub/dolt/go/store/prolly"
	"github.com/dolthub/dolt/go/store/prolly/tree"
	"github.com/dolthub/dolt/go/store/val"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Merge kinds, as kept in the merge state.
const (
	KindMerge      = "merge"
	KindCherryPick = "cherry-pick"
	KindRevert     = "revert"
)

// MergeOptions tune Merge.
type MergeOptions struct {
	CommitOptions
	NoFF, FFOnly bool
	// DryRun: find what the merge would do (up to date, a fast-forward,
	// the conflicts per collection) and change nothing.
	DryRun bool
	// ConflictIDs: of a dry run, how many conflicting documents' _ids
	// per collection to name, the first in _id order.
	ConflictIDs int
}

// MergeResult is what a merge did.
type MergeResult struct {
	UpToDate    bool
	FastForward bool
	Commit      CommitInfo
	Conflicts   map[string]int // per collection, when the merge stopped
	// ConflictIDs: of a dry run, the first MergeOptions.ConflictIDs
	// conflicting _ids of each collection, in _id order.
	ConflictIDs map[string][]bsoncore.Value
	// MergeBase: of a dry run that is no fast-forward, the merge's base
	// commit when it has one ("": several, merged into a virtual base).
	MergeBase string
}

// Merge merges a revision into a branch: a fast-forward when possible,
// else a three-way merge at field level. With conflicts it returns
// ErrMergeConflicts, leaves HEAD where it was and keeps the merge state in
// the working set until MergeContinue or MergeAbort.
func (d *Database) Merge(ctx context.Context, branchName string, theirs Revision, opts MergeOptions) (MergeResult, error) {
	ctx, leave, err := d.enterGate(ctx)
	if err != nil {
		return MergeResult{}, err
	}
	defer leave()
	return d.onMergeableBranch(ctx, branchName, theirs, func(b *branch, ours, theirC *datas.Commit, res *MergeResult) error {
		bases, err := d.mergeBases(ctx, []*datas.Commit{ours}, []*datas.Commit{theirC})
		if err != nil {
			return err
		}
		switch {
		case onlyBase(bases, theirC):
			res.UpToDate = true
			res.Commit, err = d.describe(ctx, ours, nil)
			return err
		case onlyBase(bases, ours) && !opts.NoFF && opts.DryRun:
			res.FastForward = true
			res.Commit, err = d.describe(ctx, theirC, nil)
			return err
		case onlyBase(bases, ours) && !opts.NoFF:
			return d.fastForward(ctx, b, theirC, res)
		case opts.FFOnly:
			return ErrNotFastForward
		}
		base, err := d.mergeBaseState(ctx, bases)
		if err != nil {
			return err
		}
		if opts.DryRun {
			if len(bases) == 1 {
				res.MergeBase = bases[0].Addr().String()
			}
			return d.dryThreeWay(ctx, base, b, theirC, opts.ConflictIDs, res)
		}
		if opts.Message == "" {
			opts.Message = fmt.Sprintf("Merge %s into %s", theirC.Addr().String(), b.name)
		}
		return d.applyThreeWay(ctx, b, base, theirC, KindMerge, opts.CommitOptions, []hash.Hash{theirC.Addr()}, res)
	})
}

// onMergeableBranch runs a merge or a rebase of rev into a branch: it
// holds the database, finds rev's commit, locks the branch, checks that it
// can take a merge (readyToMerge) and calls fn with the branch's head
// commit and rev's commit; fn fills in the result.
func (d *Database) onMergeableBranch(ctx context.Context, branchName string, rev Revision, fn func(b *branch, head, revC *datas.Commit, res *MergeResult) error) (MergeResult, error) {
	if err := d.hold(ctx); err != nil {
		return MergeResult{}, err
	}
	defer d.release()
	revC, err := d.revisionCommit(ctx, rev)
	if err != nil {
		return MergeResult{}, err
	}
	var res MergeResult
	err = d.lockedBranch(ctx, branchName, func(b *branch) error {
		head, err := d.readyToMerge(ctx, b)
		if err != nil {
			return err
		}
		return fn(b, head, revC, &res)
	})
	return res, err
}

// readyToMerge checks that a locked branch can take a merge and returns
// its head commit.
func (d *Database) readyToMerge(ctx context.Context, b *branch) (*datas.Commit, error) {
	st := b.state.Load()
	if st.hasMerge() {
		return nil, ErrMergeInProgress
	}
	if same, err := sameData(ctx, d.ns, st.root, b.headRef.TargetHash()); err != nil || !same {
		return nil, cmp.Or(err, fmt.Errorf("%w: commit or reset them first", ErrBranchDirty))
	}
	return d.headCommit(ctx, b.name)
}

func (d *Database) fastForward(ctx context.Context, b *branch, to *datas.Commit, res *MergeResult) error {
	head, err := d.refDataset(ctx, refHeads, b.name)
	if err != nil {
		return err
	}
	if _, err := d.db.FastForward(ctx, head, to.Addr(), ""); err != nil {
		return err
	}
	d.engine.panics.at("vc.ref")
	if err := d.resetWorkingSet(ctx, b, to); err != nil {
		return err
	}
	res.FastForward = true
	res.Commit, err = d.describe(ctx, to, nil)
	return err
}

// applyThreeWay merges theirs into b's head over base and commits, or
// stores the conflicts and the merge state.
func (d *Database) applyThreeWay(ctx context.Context, b *branch, base *rootState, theirC *datas.Commit,
	kind string, opts CommitOptions, extraParents []hash.Hash, res *MergeResult) error {
	theirs, err := d.commitState(ctx, theirC)
	if err != nil {
		return err
	}
	ours := b.state.Load()
	merged, err := d.threeWay(ctx, base, ours, theirs, recordConflicts)
	if err != nil {
		return err
	}
	if len(merged.conflicts) == 0 {
		root, err := buildRoot(ctx, d.ns, merged)
		if err != nil {
			return err
		}
		merged.root, merged.checkpointed = root, true
		c, err := d.commitRoot(ctx, b, merged, opts, extraParents)
		if err != nil {
			return err
		}
		d.logStateChange(ctx, b, ours, b.state.Load())
		res.Commit, err = d.describe(ctx, c, nil)
		return err
	}
	merged.merge = mergeStateDoc(kind, theirC.Addr(), opts, extraParents)
	if err := d.storeWorking(ctx, b, merged); err != nil {
		return err
	}
	res.Conflicts = map[string]int{}
	for coll, m := range merged.conflicts {
		n, _ := m.Count()
		res.Conflicts[coll] = n
	}
	return ErrMergeConflicts
}

func mergeStateDoc(kind string, theirs hash.Hash, opts CommitOptions, extraParents []hash.Hash) bsoncore.Document {
	parents := bsoncore.NewArrayBuilder()
	for _, p := range extraParents {
		parents.AppendString(p.String())
	}
	return bsoncore.NewDocumentBuilder().
		AppendString("kind", kind).
		AppendString("theirs", theirs.String()).
		AppendString("message", opts.Message).
		AppendString("author", opts.Author).
		AppendArray("parents", parents.Build()).Build()
}

// storeWorking makes st (checkpointed-style: no edits) b's durable working
// state.
func (d *Database) storeWorking(ctx context.Context, b *branch, st *rootState) error {
	root, err := buildRoot(ctx, d.ns, st)
	if err != nil {
		return err
	}
	cur := b.state.Load()
	st.lsn, st.ckptLSN, st.root, st.checkpointed = cur.lsn, cur.lsn, root, true
	if err := d.persist(ctx, b, root, cur.lsn); err != nil {
		return err
	}
	b.setDurable(st)
	d.logStateChange(ctx, b, cur, st)
	return nil
}

// mergeMode says what a three-way merge does with a document it cannot
// merge.
type mergeMode int

const (
	recordConflicts mergeMode = iota // keep ours and record a conflict
	keepBaseVersion                  // a virtual merge base: see virtualBaseVersion
)

// threeWay merges every collection; the result has no edits, only bases.
func (d *Database) threeWay(ctx context.Context, base, ours, theirs *rootState, mode mergeMode) (*rootState, error) {
	out := &rootState{}
	names := unionNames(ours, theirs)
	names = append(names, base.collectionNames()...)
	sort.Strings(names)
	for i, name := range names {
		if i > 0 && names[i-1] == name {
			continue
		}
		if err := d.mergeCollection(ctx, base, ours, theirs, name, mode, out); err != nil {
			return nil, fmt.Errorf("merge %s: %w", name, err)
		}
	}
	return out, nil
}

func (d *Database) mergeCollection(ctx context.Context, base, ours, theirs *rootState, name string, mode mergeMode, out *rootState) error {
	b, inBase := base.colls.lookup(name)
	o, inOurs := ours.colls.lookup(name)
	t, inTheirs := theirs.colls.lookup(name)
	switch {
	case !inOurs && !inTheirs:
		return nil // dropped on both sides (or never there)
	case inBase && !inTheirs && o.base.HashOf() == b.base.HashOf():
		return nil // they dropped it, we did not change it
	case inBase && !inOurs && t.base.HashOf() == b.base.HashOf():
		return nil // we dropped it, they did not change it
	}
	info, err := pickInfo(b, o, t, inBase, inOurs)
	if err != nil {
		return err
	}
	baseMap, _, err := d.mapOf(ctx, base, name)
	if err != nil {
		return err
	}
	oursMap, _, err := d.mapOf(ctx, ours, name)
	if err != nil {
		return err
	}
	theirsMap, _, err := d.mapOf(ctx, theirs, name)
	if err != nil {
		return err
	}
	merged, recs, err := d.mergeMaps(ctx, baseMap, oursMap, theirsMap, mode, docMergerOf(info))
	if err != nil {
		return err
	}
	// A virtual merge base need not keep unique constraints: it is only
	// compared with, and its indexes are never brought up to date.
	if inOurs && mode == recordConflicts {
		var clashes []conflictRec
		merged, clashes, err = d.uniqueClashes(ctx, info, o, baseMap, oursMap, theirsMap, merged)
		if err != nil {
			return err
		}
		recs = append(recs, clashes...)
		if merged, clashes, err = d.validatorClashes(ctx, info, baseMap, oursMap, theirsMap, merged); err != nil {
			return err
		}
		recs = append(recs, clashes...)
	}
	n, err := merged.Count()
	if err != nil {
		return err
	}
	// The indexes of either side are a starting point: buildRoot diffs
	// them up to the merged map (or builds them) before anything is stored.
	mc := &collection{info: info, base: merged, count: n, indexes: indexCandidates(o, t)}
	if err := mergeCapped(ctx, d.ns, mc, o, t); err != nil {
		return err
	}
	out.colls = out.colls.with(map[string]*collection{name: mc})
	if len(recs) > 0 {
		cm, err := d.conflictMap(ctx, recs)
		if err != nil {
			return err
		}
		if out.conflicts == nil {
			out.conflicts = map[string]prolly.Map{}
		}
		out.conflicts[name] = cm
	}
	return nil
}

// pickInfo merges catalog entries: the options option by option and the
// index specs index by index; one option or index changed differently on
// both sides (a view's pipeline, a validator, an index's options) is
// ErrOptionsConflict.
func pickInfo(b, o, t *collection, inBase, inOurs bool) (CollectionInfo, error) {
	switch {
	case !inOurs:
		return t.info, nil
	case t == nil:
		return o.info, nil
	case inBase:
		info := o.info
		opts, clash := mergeOptions(b.info.Options, o.info.Options, t.info.Options)
		if clash != "" {
			return CollectionInfo{}, fmt.Errorf("%w: option %q of %s changed differently on both sides (ours %s, theirs %s); make one side agree, then merge again",
				ErrOptionsConflict, clash, o.info.Name, o.info.Options.Lookup(clash), t.info.Options.Lookup(clash))
		}
		info.Options = opts
		specs, clash := mergeIndexSpecs(b.info.Indexes, o.info.Indexes, t.info.Indexes)
		if clash != "" {
			return CollectionInfo{}, fmt.Errorf("%w: index %q of %s changed differently on both sides (ours %s, theirs %s); make one side agree, then merge again",
				ErrOptionsConflict, clash, o.info.Name, specNamed(o.info.Indexes, clash), specNamed(t.info.Indexes, clash))
		}
		info.Indexes = specs
		return info, nil
	}
	return o.info, nil
}

// mergeOptions merges collection options key by key, each option (a
// validator, its level, its action, ...) a whole value: a side's change
// of one option merges with the other side's change of another. When both
// sides changed one option differently, ours is kept.
func mergeOptions(base, ours, theirs bsoncore.Document) (bsoncore.Document, string) {
	if bytes.Equal(ours, base) {
		return theirs, ""
	}
	if bytes.Equal(theirs, base) || bytes.Equal(ours, theirs) {
		return ours, ""
	}
	b := bsoncore.NewDocumentBuilder()
	oels, _ := ours.Elements()
	tels, _ := theirs.Elements()
	seen := map[string]bool{}
	for _, el := range append(oels, tels...) {
		k := el.Key()
		if seen[k] {
			continue
		}
		seen[k] = true
		bv, ov, tv := base.Lookup(k), ours.Lookup(k), theirs.Lookup(k)
		v := ov
		switch {
		case value.Same(ov, bv):
			v = tv
		case !value.Same(tv, bv) && !value.Same(ov, tv):
			return nil, k
		}
		if v.Type != 0 {
			b.AppendValue(k, v)
		}
	}
	return b.Build(), ""
}

// docMerger merges documents changed on both sides: field by field
// (mergeDocs), or for the buckets of a time-series collection
// (docs/format/timeseries.md, bucket set) by their measurements. Field by
// field, and path by path for large documents (mergeTrees), would be
// wrong for buckets: two branches adding measurements to one bucket both
// number them from the same count, so their fields clash or, worse, join
// two measurements into one.
type docMerger struct {
	bucket *timeseries.Spec
	mode   string // the collection's merge mode
}

// docMergerOf is how a collection's documents merge.
func docMergerOf(info CollectionInfo) docMerger {
	spec, ok := timeseries.SpecOf(info.Options)
	if !ok || !strings.HasPrefix(info.Name, "system.buckets.") {
		return docMerger{mode: mergeModeOf(info)}
	}
	return docMerger{bucket: &spec, mode: MergeFieldDivergent}
}

// byPaths reports whether large documents may merge path by path (in
// fieldTouched they merge whole, to see fields both sides set alike).
func (m docMerger) byPaths() bool { return m.bucket == nil && m.mode == MergeFieldDivergent }

// deletes reports whether a deletion on one side merges with a change on
// the other (a bucket's measurements do: the deleted side has none).
func (m docMerger) deletes() bool { return m.bucket != nil }

// merge merges whole documents (base nil when both sides added one; ours
// or theirs nil, for deletes, when a side deleted it); false: a conflict,
// a nil document: a deletion.
func (m docMerger) merge(base, ours, theirs bsoncore.Document) (bsoncore.Document, bool) {
	switch {
	case m.bucket != nil:
		return timeseries.MergeBuckets(*m.bucket, base, ours, theirs)
	case !fieldLevel(m.mode):
		return nil, false // both sides wrote the document, with different results
	case m.mode == MergeFieldTouched:
		return mergeDocsTouched(base, ours, theirs)
	}
	return mergeDocs(base, ours, theirs)
}

type conflictRec struct {
	key                []byte
	base, ours, theirs []byte
}

// mergeMaps merges document maps; documents changed on both sides merge
// field by field, and what cannot merge becomes a conflict record (ours
// stays) or, with keepBaseVersion, gets its virtualBaseVersion.
func (d *Database) mergeMaps(ctx context.Context, base, ours, theirs prolly.Map, mode mergeMode, merge docMerger) (prolly.Map, []conflictRec, error) {
	var recs []conflictRec
	var cbErr error
	merged, _, err := prolly.MergeMaps(ctx, ours, theirs, base, func(left, right tree.Diff) (tree.Diff, bool) {
		resolved, ok, rec, err := d.resolveCollision(ctx, left, right, merge)
		if !ok && err == nil && mode == keepBaseVersion {
			resolved, err = d.virtualBaseVersion(ctx, left)
			ok = err == nil
		}
		if err != nil && cbErr == nil {
			cbErr = err
		}
		if !ok {
			recs = append(recs, rec)
		}
		return resolved, ok
	})
	if err == nil {
		err = cbErr
	}
	if err == nil && touched(merge.mode) {
		var more []conflictRec
		more, err = d.convergentConflicts(ctx, base, ours, theirs)
		recs = append(recs, more...)
	}
	return merged, recs, err
}

// virtualBaseVersion is what a virtual merge base holds for a document its
// bases cannot merge: their own base's version or, where that lacks the
// document, an empty one (no _id), which no branch can hold, so that a
// side that deleted the document conflicts with one that kept it, as in Git.
func (d *Database) virtualBaseVersion(ctx context.Context, left tree.Diff) (tree.Diff, error) {
	v := left.From
	if v == nil {
		t, err := valueTuple(ctx, d.ns, bsoncore.NewDocumentBuilder().Build())
		if err != nil {
			return tree.Diff{}, err
		}
		v = tree.Item(t)
	}
	return tree.Diff{Key: left.Key, From: left.To, To: v}, nil
}

func (d *Database) resolveCollision(ctx context.Context, left, right tree.Diff, merge docMerger) (tree.Diff, bool, conflictRec, error) {
	rec := conflictRec{key: append([]byte(nil), keyBytes(val.Tuple(left.Key))...)}
	if left.From != nil && left.To != nil && right.To != nil && merge.byPaths() {
		v, ok, err := d.mergeTrees(ctx, left.From, left.To, right.To)
		if err != nil || ok {
			return tree.Diff{Type: tree.ModifiedDiff, Key: left.Key, From: left.From, To: tree.Item(v)}, ok, rec, err
		}
	}
	var err error
	for _, p := range []struct {
		dst *[]byte
		src tree.Item
	}{{&rec.base, left.From}, {&rec.ours, left.To}, {&rec.theirs, right.To}} {
		if p.src != nil {
			if *p.dst, err = d.docOf(ctx, p.src); err != nil {
				return tree.Diff{}, false, rec, err
			}
		}
	}
	if (rec.ours == nil || rec.theirs == nil) && !merge.deletes() {
		return tree.Diff{}, false, rec, nil // delete against modify
	}
	// The empty document is what a virtual merge base holds for a document
	// its bases could not merge (virtualBaseVersion): like Git's
	// conflict-marked file, it merges with nothing but itself. (Nested
	// empty documents are user data and merge field by field.)
	if isEmptyDoc(rec.ours) || isEmptyDoc(rec.theirs) {
		return tree.Diff{}, false, rec, nil
	}
	doc, ok := merge.merge(rec.base, rec.ours, rec.theirs)
	if !ok {
		return tree.Diff{}, false, rec, nil
	}
	if doc == nil { // merged into a deletion
		return tree.Diff{Type: tree.RemovedDiff, Key: left.Key, From: left.To}, true, rec, nil
	}
	v, err := docValueTuple(ctx, d.ns, doc, d.largeDoc())
	if err != nil {
		return tree.Diff{}, false, rec, err
	}
	return tree.Diff{Type: tree.ModifiedDiff, Key: left.Key, From: left.From, To: tree.Item(v)}, true, rec, nil
}

// conflictMap stores conflict records keyed by _id key.
func (d *Database) conflictMap(ctx context.Context, recs []conflictRec) (prolly.Map, error) {
	sort.Slice(recs, func(i, j int) bool { return bytes.Compare(recs[i].key, recs[j].key) < 0 })
	tuples := make([]val.Tuple, 0, 2*len(recs))
	for _, r := range recs {
		k, err := doctree.KeyTuple(d.ns, r.key)
		if err != nil {
			return prolly.Map{}, err
		}
		b := bsoncore.NewDocumentBuilder()
		for _, f := range []struct {
			name string
			doc  []byte
		}{{"base", r.base}, {"ours", r.ours}, {"theirs", r.theirs}} {
			if f.doc != nil {
				b.AppendDocument(f.name, f.doc)
			}
		}
		v, err := valueTuple(ctx, d.ns, b.Build())
		if err != nil {
			return prolly.Map{}, err
		}
		tuples = append(tuples, k, v)
	}
	return prolly.NewMapFromTuples(ctx, d.ns, keyDesc, valDesc, tuples...)
}

// mergeDocs merges two versions of a document field by field over their
// common base (nil base: both added it). It fails when one field was
// changed differently on both sides.
func mergeDocs(base, ours, theirs bsoncore.Document) (bsoncore.Document, bool) {
	return mergeDocsBy(base, ours, theirs, false)
}

// mergeDocsBy is mergeDocs; with touched, a field both sides changed
// conflicts even when they agree.
func mergeDocsBy(base, ours, theirs bsoncore.Document, touched bool) (bsoncore.Document, bool) {
	if base == nil {
		base = bsoncore.NewDocumentBuilder().Build()
	}
	b := bsoncore.NewDocumentBuilder()
	oels, _ := ours.Elements()
	tels, _ := theirs.Elements()
	seen := map[string]bool{}
	keys := make([]string, 0, len(oels)+len(tels))
	for _, el := range append(oels, tels...) {
		if !seen[el.Key()] {
			seen[el.Key()] = true
			keys = append(keys, el.Key())
		}
	}
	for _, k := range keys {
		v, present, ok := mergeField(base.Lookup(k), ours.Lookup(k), theirs.Lookup(k), touched)
		if !ok {
			return nil, false
		}
		if present {
			b.AppendValue(k, v)
		}
	}
	return b.Build(), true
}

// isEmptyDoc reports a document with no field (a stored document always
// has an _id).
func isEmptyDoc(d bsoncore.Document) bool { return len(d) == 5 }

// mergeField merges one field; a zero Value is a missing field.
func mergeField(b, o, t bsoncore.Value, touched bool) (bsoncore.Value, bool, bool) {
	switch {
	case value.Same(o, t) && (!touched || value.Same(o, b)):
		return o, o.Type != 0, true
	case value.Same(o, b):
		return t, t.Type != 0, true
	case value.Same(t, b):
		return o, o.Type != 0, true
	case o.Type == bsoncore.TypeEmbeddedDocument && t.Type == bsoncore.TypeEmbeddedDocument &&
		(b.Type == bsoncore.TypeEmbeddedDocument || b.Type == 0):
		var bd bsoncore.Document
		if b.Type != 0 {
			bd = b.Document()
		}
		doc, ok := mergeDocsBy(bd, o.Document(), t.Document(), touched)
		return bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: doc}, true, ok
	}
	return bsoncore.Value{}, false, false
}
