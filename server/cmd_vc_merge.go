package server

import (
	"errors"
	"maps"
	"slices"

	"github.com/dumbodb/dumbodb/index"
	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/storage"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

func cmdDumboMerge(r *request) (bsoncore.Document, error) {
	d, err := r.vcDatabase()
	if err != nil {
		return nil, err
	}
	var mergeIn, strategy string
	var opts storage.MergeOptions
	var cont, abort bool
	opts.CommitOptions, err = r.commitOptions(map[string]fieldHandler{
		"mergeIn":  r.stringArg("mergeIn", &mergeIn),
		"noFF":     r.boolArg("noFF", &opts.NoFF),
		"ffOnly":   r.boolArg("ffOnly", &opts.FFOnly),
		"continue": r.boolArg("continue", &cont),
		"abort":    r.boolArg("abort", &abort),
		"dryRun":   r.boolArg("dryRun", &opts.DryRun),
		"strategy": r.stringArg("strategy", &strategy),
	})
	if err != nil {
		return nil, err
	}
	if strategy != "" && strategy != "ours" && strategy != "theirs" {
		return nil, mongoerr.New(mongoerr.BadValue, "%s.strategy must be \"ours\" or \"theirs\", not %q", r.name, strategy)
	}
	branch, err := r.branchOf(d)
	if err != nil {
		return nil, err
	}
	switch {
	case abort:
		if err := d.MergeAbort(r.ctx, branch); err != nil {
			return nil, err
		}
		return okReply(), nil
	case cont:
		c, err := d.MergeContinue(r.ctx, branch, opts.CommitOptions)
		if err != nil {
			return nil, err
		}
		d.EmitVersionEvent(branch, "dumboMerge", versionDesc("commitId", c.ID))
		return bsoncore.NewDocumentBuilder().AppendString("commitId", c.ID).AppendDouble("ok", 1).Build(), nil
	case mergeIn == "":
		return nil, mongoerr.New(mongoerr.Location40414, "BSON field '%s.mergeIn' is missing but a required field", r.name)
	}
	theirs, err := r.resolveArg(d, mergeIn)
	if err != nil {
		return nil, err
	}
	if opts.Message == "" {
		opts.Message = "Merge " + mergeIn + " into " + branch
	}
	if opts.DryRun {
		opts.ConflictIDs = maxConflictIDs
	}
	res, err := d.Merge(r.ctx, branch, theirs, opts)
	if opts.DryRun {
		return dryMergeReply(res, err)
	}
	if errors.Is(err, storage.ErrMergeConflicts) && strategy != "" {
		res, err = r.settleAll(d, branch, strategy, res, opts.CommitOptions)
	}
	if err == nil && !res.UpToDate {
		d.EmitVersionEvent(branch, "dumboMerge", versionDesc("mergeIn", mergeIn, "commitId", res.Commit.ID))
	}
	return r.mergeReply(res, err)
}

// mergeReply answers merge, cherry-pick and revert; conflicts are an
// error reply that carries per-collection counts.
func (r *request) mergeReply(res storage.MergeResult, err error) (bsoncore.Document, error) {
	if errors.Is(err, storage.ErrMergeConflicts) {
		counts := bsoncore.NewDocumentBuilder()
		total := 0
		for coll, n := range res.Conflicts {
			counts.AppendInt32(coll, int32(n))
			total += n
		}
		r.c.s.metrics.conflicts.Add(float64(total))
		me := mongoerr.New(mongoerr.MergeConflict,
			"merge stopped with %d conflicts; resolve them with dumboResolveConflict, then dumboMerge {continue: 1}, or {abort: 1}", total)
		me.Info = bsoncore.NewDocumentBuilder().AppendDocument("conflicts", counts.Build()).Build()
		return nil, me
	}
	if err != nil {
		return nil, err
	}
	return bsoncore.NewDocumentBuilder().
		AppendString("commitId", res.Commit.ID).
		AppendBoolean("fastForward", res.FastForward).
		AppendBoolean("upToDate", res.UpToDate).
		AppendDouble("ok", 1).Build(), nil
}

func cmdDumboConflicts(r *request) (bsoncore.Document, error) {
	var coll string
	d, branch, err := r.vcBranch(map[string]fieldHandler{"collection": r.stringArg("collection", &coll)})
	if err != nil {
		return nil, err
	}
	confs, err := d.Conflicts(r.ctx, branch, coll)
	if err != nil {
		return nil, err
	}
	arr := bsoncore.NewArrayBuilder()
	for _, c := range confs {
		b := bsoncore.NewDocumentBuilder().AppendString("collection", c.Collection).AppendValue("_id", c.ID)
		for _, side := range []struct {
			name string
			doc  bsoncore.Document
		}{{"base", c.Base}, {"ours", c.Ours}, {"theirs", c.Theirs}} {
			if side.doc != nil {
				b.AppendDocument(side.name, side.doc)
			} else {
				b.AppendNull(side.name)
			}
		}
		arr.AppendDocument(b.Build())
	}
	return bsoncore.NewDocumentBuilder().AppendArray("conflicts", arr.Build()).AppendDouble("ok", 1).Build(), nil
}

func cmdDumboResolveConflict(r *request) (bsoncore.Document, error) {
	var coll, resolution string
	var id bsoncore.Value
	var doc bsoncore.Document
	d, branch, err := r.vcBranch(map[string]fieldHandler{
		"collection": r.stringArg("collection", &coll),
		"_id":        func(v bsoncore.Value) error { id = v; return nil },
		"resolution": r.stringArg("resolution", &resolution),
		"document":   r.docArg("document", &doc),
	})
	if err != nil {
		return nil, err
	}
	if coll == "" || id.Type == 0 {
		return nil, mongoerr.New(mongoerr.Location40414, "%s needs collection and _id", r.name)
	}
	if doc, err = customResolution(resolution, id, doc); err != nil {
		return nil, err
	}
	if err := d.ResolveConflict(r.ctx, branch, coll, id, resolution, doc); err != nil {
		return nil, err
	}
	return okReply(), nil
}

// customResolution validates the resolution and a custom document, which
// must keep the conflicting document's _id.
func customResolution(resolution string, id bsoncore.Value, doc bsoncore.Document) (bsoncore.Document, error) {
	switch resolution {
	case storage.ResolveOurs, storage.ResolveTheirs:
		return nil, nil
	case storage.ResolveCustom:
	default:
		return nil, mongoerr.New(mongoerr.BadValue, "resolution must be \"ours\", \"theirs\" or \"custom\", not %q", resolution)
	}
	if doc == nil {
		return nil, mongoerr.New(mongoerr.BadValue, "a custom resolution needs a document")
	}
	if got, err := doc.LookupErr("_id"); err == nil && !got.Equal(id) {
		return nil, mongoerr.New(mongoerr.ImmutableField, "the custom document must keep _id %s", index.ShellValue(id))
	}
	withID := bsoncore.NewDocumentBuilder().AppendValue("_id", id)
	els, _ := doc.Elements()
	for _, el := range els {
		if el.Key() != "_id" {
			withID.AppendValue(el.Key(), el.Value())
		}
	}
	return withID.Build(), nil
}

func cmdDumboCherryPick(r *request) (bsoncore.Document, error) { return applyCommit(r, false) }

func cmdDumboRevert(r *request) (bsoncore.Document, error) { return applyCommit(r, true) }

func applyCommit(r *request, revert bool) (bsoncore.Document, error) {
	d, err := r.vcDatabase()
	if err != nil {
		return nil, err
	}
	commit := r.firstString()
	opts, err := r.commitOptions(map[string]fieldHandler{"commit": r.stringArg("commit", &commit)})
	if err != nil {
		return nil, err
	}
	if commit == "" {
		return nil, mongoerr.New(mongoerr.Location40414, "BSON field '%s.commit' is missing but a required field", r.name)
	}
	branch, err := r.branchOf(d)
	if err != nil {
		return nil, err
	}
	rev, err := r.resolveArg(d, commit)
	if err != nil {
		return nil, err
	}
	var res storage.MergeResult
	how := "cherryPick"
	if revert {
		how = "revert"
		res, err = d.Revert(r.ctx, branch, rev, opts)
	} else {
		res, err = d.CherryPick(r.ctx, branch, rev, opts)
	}
	if err == nil && !res.UpToDate {
		d.EmitVersionEvent(branch, "dumboCommit", versionDesc("commitId", res.Commit.ID, how, commit))
	}
	return r.mergeReply(res, err)
}

func cmdDumboRebase(r *request) (bsoncore.Document, error) {
	onto := r.firstString()
	var cont, abort bool
	d, branch, err := r.vcBranch(map[string]fieldHandler{
		"onto":     r.stringArg("onto", &onto),
		"continue": r.boolArg("continue", &cont),
		"abort":    r.boolArg("abort", &abort),
	})
	if err != nil {
		return nil, err
	}
	switch {
	case abort:
		return okReply(), d.MergeAbort(r.ctx, branch)
	case cont:
		c, err := d.MergeContinue(r.ctx, branch, storage.CommitOptions{})
		if err != nil {
			return nil, err
		}
		return bsoncore.NewDocumentBuilder().AppendString("commitId", c.ID).AppendDouble("ok", 1).Build(), nil
	case onto == "":
		return nil, mongoerr.New(mongoerr.Location40414, "BSON field '%s.onto' is missing but a required field", r.name)
	}
	rev, err := r.resolveArg(d, onto)
	if err != nil {
		return nil, err
	}
	res, err := d.Rebase(r.ctx, branch, rev)
	if err == nil {
		head, herr := d.Resolve(r.ctx, branch, branch)
		if herr == nil {
			log, lerr := d.Log(r.ctx, storage.LogOptions{From: head, Limit: 1})
			if lerr == nil && len(log) == 1 {
				res.Commit = log[0]
			}
		}
	}
	return r.mergeReply(res, err)
}

// settleAll resolves every conflict of a stopped merge one way (Git's
// -X ours / -X theirs) and commits the merge.
func (r *request) settleAll(d *storage.Database, branch, strategy string, res storage.MergeResult, opts storage.CommitOptions) (storage.MergeResult, error) {
	confs, err := d.Conflicts(r.ctx, branch, "")
	if err != nil {
		return res, err
	}
	for _, c := range confs {
		if err := d.ResolveConflict(r.ctx, branch, c.Collection, c.ID, strategy, nil); err != nil {
			return res, err
		}
	}
	c, err := d.MergeContinue(r.ctx, branch, opts)
	return storage.MergeResult{Commit: c}, err
}

// A dry run names the documents a merge would stop on, so that they can
// be looked at first, but a bounded number of them: the first
// maxConflictIDs of each collection, maxConflictIDBytes of _ids in all.
const (
	maxConflictIDs     = 100
	maxConflictIDBytes = 1 << 20
)

// dryMergeReply says what a merge would do: up to date, a fast-forward,
// or a merge with these conflicts per collection (none: it would commit),
// and the first _ids of each collection's conflicts.
func dryMergeReply(res storage.MergeResult, err error) (bsoncore.Document, error) {
	if err != nil {
		return nil, err
	}
	counts, named := bsoncore.NewDocumentBuilder(), bsoncore.NewDocumentBuilder()
	budget := maxConflictIDBytes
	for _, coll := range slices.Sorted(maps.Keys(res.Conflicts)) {
		counts.AppendInt32(coll, int32(res.Conflicts[coll]))
		list := bsoncore.NewArrayBuilder()
		for _, id := range res.ConflictIDs[coll] {
			if budget -= len(id.Data); budget < 0 {
				break
			}
			list.AppendValue(id)
		}
		named.AppendArray(coll, list.Build())
	}
	b := bsoncore.NewDocumentBuilder().AppendBoolean("dryRun", true).
		AppendBoolean("upToDate", res.UpToDate).AppendBoolean("fastForward", res.FastForward)
	if res.MergeBase != "" {
		b.AppendString("mergeBase", res.MergeBase)
	}
	return b.AppendDocument("conflicts", counts.Build()).AppendDocument("conflictIds", named.Build()).
		AppendDouble("ok", 1).Build(), nil
}
