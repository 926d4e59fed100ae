package server

import (
	"errors"
	"time"

	"dumbodb/index"
	"dumbodb/query/mongoerr"
	"dumbodb/storage"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// vcDatabase is the existing database a version-control command acts on.
func (r *request) vcDatabase() (*storage.Database, error) {
	d, err := r.database(false)
	if err != nil {
		return nil, err
	}
	if d == nil {
		return nil, mongoerr.New(mongoerr.NamespaceNotFound, "database %s does not exist", r.db)
	}
	return d, nil
}

// firstString is the command's first value when it is a string, as in
// {dumboTag: "v1"}.
func (r *request) firstString() string {
	s, _ := r.cmd.Index(0).Value().StringValueOK()
	return s
}

// vcBranch opens the database, parses the command's arguments and
// resolves the branch the command acts on.
func (r *request) vcBranch(fields map[string]fieldHandler) (*storage.Database, string, error) {
	d, err := r.vcDatabase()
	if err != nil {
		return nil, "", err
	}
	if err := r.parseArgs(fields); err != nil {
		return nil, "", err
	}
	branch, err := r.branchOf(d)
	return d, branch, err
}

// resolveArg resolves a revision named in a command argument.
func (r *request) resolveArg(d *storage.Database, spec string) (storage.Revision, error) {
	return d.Resolve(r.ctx, spec, r.currentBranch())
}

func commitDoc(c storage.CommitInfo) bsoncore.Document {
	parents, refs := bsoncore.NewArrayBuilder(), bsoncore.NewArrayBuilder()
	for _, p := range c.Parents {
		parents.AppendString(p)
	}
	for _, ref := range c.Refs {
		refs.AppendString(ref)
	}
	return bsoncore.NewDocumentBuilder().
		AppendString("commitId", c.ID).
		AppendArray("parents", parents.Build()).
		AppendArray("refs", refs.Build()).
		AppendString("message", c.Message).
		AppendString("author", c.Author).
		AppendDateTime("timestamp", c.Timestamp.UnixMilli()).Build()
}

// commitOptions reads message, author and timestamp arguments.
func (r *request) commitOptions(extra map[string]fieldHandler) (storage.CommitOptions, error) {
	var o storage.CommitOptions
	fields := map[string]fieldHandler{
		"message": r.stringArg("message", &o.Message),
		"author":  r.stringArg("author", &o.Author),
		"timestamp": func(v bsoncore.Value) error {
			ms, ok := v.DateTimeOK()
			if !ok {
				return typeMismatch(r.name, "timestamp", v, "date")
			}
			o.Time = time.UnixMilli(ms)
			return nil
		},
	}
	for k, h := range extra {
		fields[k] = h
	}
	return o, r.parseArgs(fields)
}

func cmdDumboCommit(r *request) (bsoncore.Document, error) {
	d, err := r.vcDatabase()
	if err != nil {
		return nil, err
	}
	opts, err := r.commitOptions(nil)
	if err != nil {
		return nil, err
	}
	if opts.Message == "" {
		return nil, mongoerr.New(mongoerr.Code(40414), "BSON field '%s.message' is missing but a required field", r.name)
	}
	branch, err := r.branchOf(d)
	if err != nil {
		return nil, err
	}
	c, err := d.Commit(r.ctx, branch, opts)
	if err != nil {
		return nil, err
	}
	return bsoncore.NewDocumentBuilder().
		AppendString("commitId", c.ID).
		AppendString("branch", branch).
		AppendString("message", c.Message).
		AppendString("author", c.Author).
		AppendDateTime("timestamp", c.Timestamp.UnixMilli()).
		AppendDouble("ok", 1).Build(), nil
}

func cmdDumboBranch(r *request) (bsoncore.Document, error) {
	d, err := r.vcDatabase()
	if err != nil {
		return nil, err
	}
	var name string
	var del, force bool
	name = r.firstString()
	err = r.parseArgs(map[string]fieldHandler{
		"branch":      r.stringArg("branch", &name),
		"delete":      r.boolArg("delete", &del),
		"forceDelete": r.boolArg("forceDelete", &force),
	})
	if err != nil {
		return nil, err
	}
	switch {
	case name == "":
		return branchList(r, d)
	case del || force:
		if err := d.DeleteBranch(r.ctx, name, r.currentBranch(), force); err != nil {
			return nil, err
		}
		return bsoncore.NewDocumentBuilder().AppendString("deleted", name).AppendDouble("ok", 1).Build(), nil
	}
	at, err := r.revision(d)
	if err != nil {
		return nil, err
	}
	c, err := d.CreateBranch(r.ctx, name, at)
	if err != nil {
		return nil, err
	}
	return bsoncore.NewDocumentBuilder().AppendString("branch", name).AppendString("commitId", c.ID).
		AppendDouble("ok", 1).Build(), nil
}

func branchList(r *request, d *storage.Database) (bsoncore.Document, error) {
	branches, err := d.Branches(r.ctx)
	if err != nil {
		return nil, err
	}
	arr := bsoncore.NewArrayBuilder()
	for _, b := range branches {
		arr.AppendDocument(bsoncore.NewDocumentBuilder().
			AppendString("name", b.Name).
			AppendString("commitId", b.Head.ID).
			AppendDocument("head", commitDoc(b.Head)).Build())
	}
	return bsoncore.NewDocumentBuilder().AppendArray("branches", arr.Build()).AppendDouble("ok", 1).Build(), nil
}

func cmdDumboBranchStatus(r *request) (bsoncore.Document, error) {
	d, err := r.vcDatabase()
	if err != nil {
		return nil, err
	}
	var base string
	var targets bsoncore.Array
	err = r.parseArgs(map[string]fieldHandler{
		"base":    r.stringArg("base", &base),
		"targets": r.arrayArg("targets", &targets),
	})
	if err != nil {
		return nil, err
	}
	if base == "" {
		base = r.currentBranch()
	}
	baseRev, err := r.resolveArg(d, base)
	if err != nil {
		return nil, err
	}
	vals, _ := targets.Values()
	arr := bsoncore.NewArrayBuilder()
	for _, v := range vals {
		name, ok := v.StringValueOK()
		if !ok {
			return nil, typeMismatch(r.name, "targets", v, "string")
		}
		rev, err := r.resolveArg(d, name)
		if err != nil {
			return nil, err
		}
		ahead, behind, err := d.AheadBehind(r.ctx, baseRev, rev)
		if err != nil {
			return nil, err
		}
		arr.AppendDocument(bsoncore.NewDocumentBuilder().AppendString("target", name).
			AppendInt32("ahead", int32(ahead)).AppendInt32("behind", int32(behind)).Build())
	}
	return bsoncore.NewDocumentBuilder().AppendString("base", base).AppendArray("statuses", arr.Build()).
		AppendDouble("ok", 1).Build(), nil
}

func cmdDumboLog(r *request) (bsoncore.Document, error) {
	d, err := r.vcDatabase()
	if err != nil {
		return nil, err
	}
	var opts storage.LogOptions
	var limit int64
	var from string
	err = r.parseArgs(map[string]fieldHandler{
		"limit":      r.nonNegativeArg("limit", &limit),
		"from":       r.stringArg("from", &from),
		"collection": r.stringArg("collection", &opts.Collection),
		"_id":        func(v bsoncore.Value) error { opts.ID = v; return nil },
	})
	if err != nil {
		return nil, err
	}
	if opts.ID.Type != 0 && opts.Collection == "" {
		return nil, mongoerr.New(mongoerr.BadValue, "%s with _id needs a collection", r.name)
	}
	opts.Limit = int(limit)
	if from != "" {
		opts.From, err = r.resolveArg(d, from)
	} else {
		opts.From, err = r.revision(d)
	}
	if err != nil {
		return nil, err
	}
	commits, err := d.Log(r.ctx, opts)
	if err != nil {
		return nil, err
	}
	arr := bsoncore.NewArrayBuilder()
	for _, c := range commits {
		arr.AppendDocument(commitDoc(c))
	}
	return bsoncore.NewDocumentBuilder().AppendArray("commits", arr.Build()).AppendDouble("ok", 1).Build(), nil
}

func cmdDumboStatus(r *request) (bsoncore.Document, error) {
	d, branch, err := r.vcBranch(nil)
	if err != nil {
		return nil, err
	}
	st, err := d.Status(r.ctx, branch)
	if err != nil {
		return nil, err
	}
	colls := bsoncore.NewArrayBuilder()
	for _, c := range st.Changes {
		colls.AppendDocument(bsoncore.NewDocumentBuilder().
			AppendString("name", c.Name).AppendString("status", c.Status).
			AppendInt32("added", int32(len(c.Added))).
			AppendInt32("modified", int32(len(c.Modified))).
			AppendInt32("deleted", int32(len(c.Removed))).Build())
	}
	b := bsoncore.NewDocumentBuilder().
		AppendString("branch", st.Branch).
		AppendString("head", st.Head).
		AppendBoolean("dirty", st.Dirty).
		AppendArray("collections", colls.Build())
	if st.Merge != nil {
		b.AppendDocument("merge", st.Merge)
	} else {
		b.AppendNull("merge")
	}
	return b.AppendDouble("ok", 1).Build(), nil
}

// workingSide is the name a diff uses for a branch's uncommitted state.
const workingSide = "WORKING"

func (r *request) diffSide(d *storage.Database, spec string, defaultWorking bool) (storage.DiffSide, error) {
	if spec == "" || spec == workingSide {
		rev, err := r.revision(d)
		if err != nil {
			return storage.DiffSide{}, err
		}
		return storage.DiffSide{Rev: rev, Working: (spec == workingSide || defaultWorking) && !rev.ReadOnly()}, nil
	}
	rev, err := r.resolveArg(d, spec)
	return storage.DiffSide{Rev: rev}, err
}

func cmdDumboDiff(r *request) (bsoncore.Document, error) {
	d, err := r.vcDatabase()
	if err != nil {
		return nil, err
	}
	var from, to, coll string
	err = r.parseArgs(map[string]fieldHandler{
		"from":       r.stringArg("from", &from),
		"to":         r.stringArg("to", &to),
		"collection": r.stringArg("collection", &coll),
	})
	if err != nil {
		return nil, err
	}
	fromSide, err := r.diffSide(d, from, false)
	if err != nil {
		return nil, err
	}
	toSide, err := r.diffSide(d, to, true)
	if err != nil {
		return nil, err
	}
	diffs, err := d.Diff(r.ctx, fromSide, toSide, coll)
	if err != nil {
		return nil, err
	}
	arr := bsoncore.NewArrayBuilder()
	for _, cd := range diffs {
		arr.AppendDocument(collectionDiffDoc(cd))
	}
	return bsoncore.NewDocumentBuilder().AppendArray("collections", arr.Build()).AppendDouble("ok", 1).Build(), nil
}

func collectionDiffDoc(cd storage.CollectionDiff) bsoncore.Document {
	added, removed, modified := bsoncore.NewArrayBuilder(), bsoncore.NewArrayBuilder(), bsoncore.NewArrayBuilder()
	for _, c := range cd.Added {
		added.AppendDocument(c.To)
	}
	for _, c := range cd.Removed {
		removed.AppendDocument(c.From)
	}
	for _, c := range cd.Modified {
		changes := bsoncore.NewArrayBuilder()
		for _, f := range c.Fields {
			fb := bsoncore.NewDocumentBuilder().AppendString("path", f.Path)
			if f.From.Type != 0 {
				fb.AppendValue("from", f.From)
			}
			if f.To.Type != 0 {
				fb.AppendValue("to", f.To)
			}
			changes.AppendDocument(fb.Build())
		}
		modified.AppendDocument(bsoncore.NewDocumentBuilder().AppendValue("_id", c.ID).
			AppendArray("changes", changes.Build()).Build())
	}
	return bsoncore.NewDocumentBuilder().
		AppendString("name", cd.Name).
		AppendString("status", cd.Status).
		AppendBoolean("optionsChanged", cd.OptionsChanged).
		AppendBoolean("indexesChanged", cd.IndexesChanged).
		AppendArray("added", added.Build()).
		AppendArray("removed", removed.Build()).
		AppendArray("modified", modified.Build()).Build()
}

func cmdDumboMerge(r *request) (bsoncore.Document, error) {
	d, err := r.vcDatabase()
	if err != nil {
		return nil, err
	}
	var mergeIn string
	var opts storage.MergeOptions
	var cont, abort bool
	opts.CommitOptions, err = r.commitOptions(map[string]fieldHandler{
		"mergeIn":  r.stringArg("mergeIn", &mergeIn),
		"noFF":     r.boolArg("noFF", &opts.NoFF),
		"ffOnly":   r.boolArg("ffOnly", &opts.FFOnly),
		"continue": r.boolArg("continue", &cont),
		"abort":    r.boolArg("abort", &abort),
	})
	if err != nil {
		return nil, err
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
		return bsoncore.NewDocumentBuilder().AppendString("commitId", c.ID).AppendDouble("ok", 1).Build(), nil
	case mergeIn == "":
		return nil, mongoerr.New(mongoerr.Code(40414), "BSON field '%s.mergeIn' is missing but a required field", r.name)
	}
	theirs, err := r.resolveArg(d, mergeIn)
	if err != nil {
		return nil, err
	}
	if opts.Message == "" {
		opts.Message = "Merge " + mergeIn + " into " + branch
	}
	res, err := d.Merge(r.ctx, branch, theirs, opts)
	return mergeReply(res, err)
}

// mergeReply answers merge, cherry-pick and revert; conflicts are an
// error reply that carries per-collection counts.
func mergeReply(res storage.MergeResult, err error) (bsoncore.Document, error) {
	if errors.Is(err, storage.ErrMergeConflicts) {
		counts := bsoncore.NewDocumentBuilder()
		total := 0
		for coll, n := range res.Conflicts {
			counts.AppendInt32(coll, int32(n))
			total += n
		}
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
		return nil, mongoerr.New(mongoerr.Code(40414), "%s needs collection and _id", r.name)
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
	var commit string
	commit = r.firstString()
	opts, err := r.commitOptions(map[string]fieldHandler{"commit": r.stringArg("commit", &commit)})
	if err != nil {
		return nil, err
	}
	if commit == "" {
		return nil, mongoerr.New(mongoerr.Code(40414), "BSON field '%s.commit' is missing but a required field", r.name)
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
	if revert {
		res, err = d.Revert(r.ctx, branch, rev, opts)
	} else {
		res, err = d.CherryPick(r.ctx, branch, rev, opts)
	}
	return mergeReply(res, err)
}

func cmdDumboReset(r *request) (bsoncore.Document, error) {
	var to string
	var hard bool
	d, branch, err := r.vcBranch(map[string]fieldHandler{
		"to":   r.stringArg("to", &to),
		"hard": r.boolArg("hard", &hard),
		"soft": r.ignoreArg(),
	})
	if err != nil {
		return nil, err
	}
	if to == "" {
		to = "HEAD"
	}
	target, err := r.resolveArg(d, to)
	if err != nil {
		return nil, err
	}
	c, err := d.Reset(r.ctx, branch, target, hard)
	if err != nil {
		return nil, err
	}
	return bsoncore.NewDocumentBuilder().AppendString("commitId", c.ID).AppendBoolean("hard", hard).
		AppendDouble("ok", 1).Build(), nil
}

func cmdDumboTag(r *request) (bsoncore.Document, error) {
	d, err := r.vcDatabase()
	if err != nil {
		return nil, err
	}
	var name, commit, message string
	var del bool
	name = r.firstString()
	err = r.parseArgs(map[string]fieldHandler{
		"name":    r.stringArg("name", &name),
		"commit":  r.stringArg("commit", &commit),
		"message": r.stringArg("message", &message),
		"delete":  r.boolArg("delete", &del),
	})
	if err != nil {
		return nil, err
	}
	switch {
	case name == "":
		return tagList(r, d)
	case del:
		if err := d.DeleteTag(r.ctx, name); err != nil {
			return nil, err
		}
		return bsoncore.NewDocumentBuilder().AppendString("deleted", name).AppendDouble("ok", 1).Build(), nil
	}
	at, err := r.revision(d)
	if commit != "" {
		at, err = r.resolveArg(d, commit)
	}
	if err != nil {
		return nil, err
	}
	tag, err := d.CreateTag(r.ctx, name, at, message)
	if err != nil {
		return nil, err
	}
	return bsoncore.NewDocumentBuilder().AppendString("name", tag.Name).AppendString("commitId", tag.Commit).
		AppendDouble("ok", 1).Build(), nil
}

func tagList(r *request, d *storage.Database) (bsoncore.Document, error) {
	tags, err := d.Tags(r.ctx)
	if err != nil {
		return nil, err
	}
	arr := bsoncore.NewArrayBuilder()
	for _, t := range tags {
		arr.AppendDocument(bsoncore.NewDocumentBuilder().AppendString("name", t.Name).
			AppendString("commitId", t.Commit).AppendString("message", t.Message).Build())
	}
	return bsoncore.NewDocumentBuilder().AppendArray("tags", arr.Build()).AppendDouble("ok", 1).Build(), nil
}

// cmdDumboCheckout sets the branch this connection's writes and reads go
// to when the database name has no "@", for applications that cannot
// change database names.
func cmdDumboCheckout(r *request) (bsoncore.Document, error) {
	d, err := r.vcDatabase()
	if err != nil {
		return nil, err
	}
	var name string
	name = r.firstString()
	if err := r.parseArgs(map[string]fieldHandler{"branch": r.stringArg("branch", &name)}); err != nil {
		return nil, err
	}
	rev, err := d.Resolve(r.ctx, name, storage.DefaultBranch)
	if err != nil {
		return nil, err
	}
	if rev.ReadOnly() {
		return nil, mongoerr.New(mongoerr.BadValue, "%q is not a branch", name)
	}
	r.c.mu.Lock()
	if r.c.branches == nil {
		r.c.branches = map[string]string{}
	}
	r.c.branches[r.db] = rev.Branch
	r.c.mu.Unlock()
	return bsoncore.NewDocumentBuilder().AppendString("branch", rev.Branch).AppendDouble("ok", 1).Build(), nil
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
		return nil, mongoerr.New(mongoerr.Code(40414), "BSON field '%s.onto' is missing but a required field", r.name)
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
	return mergeReply(res, err)
}

// cmdDumboGC collects unreachable chunks of the database and reports its
// size before and after.
func cmdDumboGC(r *request) (bsoncore.Document, error) {
	d, err := r.vcDatabase()
	if err != nil {
		return nil, err
	}
	if err := r.parseArgs(nil); err != nil {
		return nil, err
	}
	before, after, err := d.GC(r.ctx)
	if err != nil {
		return nil, err
	}
	return bsoncore.NewDocumentBuilder().AppendInt64("bytesBefore", before).AppendInt64("bytesAfter", after).
		AppendDouble("ok", 1).Build(), nil
}
