package console

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// conflictCount is one collection's conflicts in a merge's preview: how
// many, and the first of them by _id (the rest counted in More).
type conflictCount struct {
	Collection string
	Count      int
	IDs        []docID
	More       int
}

// docID is a document's _id as relaxed Extended JSON to read and as
// canonical Extended JSON for links.
type docID struct {
	Text, Canonical string
}

type mergeView struct {
	DB, From, Into string
	UpToDate       bool
	FastForward    bool
	MergeBase      string
	Conflicts      []conflictCount
	Collections    []collectionDiff
	DiffFrom       string // the revision the shown changes start from
	FromRev, ToRev string // the diff's sides, for links to documents
	Message        string
	CanVersion     bool
}

func (v mergeView) layout() view {
	return view{Title: "Merge " + v.From + " into " + v.Into, DB: v.DB, Crumbs: []crumb{{v.DB, Prefix + "db/" + url.PathEscape(v.DB)}, {"merge", ""}}}
}

// mergePage previews a merge of ?from= into ?into= (default the
// checked-out branch): up to date, a fast-forward or a three-way merge,
// the changes it brings and the conflicts it would stop on.
func (c *Console) mergePage(w http.ResponseWriter, r *http.Request, s *session) error {
	db, err := pathDB(r)
	if err != nil {
		return err
	}
	v := mergeView{DB: db, From: trimmed(r, "from"), Into: cmpOr(trimmed(r, "into"), currentBranch(s, db)), CanVersion: s.can(db, "dumboVersionWrite")}
	if v.From == "" {
		return badRequest("name the revision to merge in with ?from=")
	}
	ctx := r.Context()
	if merging, err := mergeInProgress(ctx, s, db, v.Into); err != nil || merging {
		if err == nil {
			http.Redirect(w, r, conflictsHref(db, v.Into), http.StatusSeeOther)
		}
		return err
	}
	var dry struct {
		UpToDate    bool                       `bson:"upToDate"`
		FastForward bool                       `bson:"fastForward"`
		MergeBase   string                     `bson:"mergeBase"`
		Conflicts   map[string]int             `bson:"conflicts"`
		IDs         map[string][]bson.RawValue `bson:"conflictIds"`
	}
	cmd := bson.D{{Key: "dumboMerge", Value: 1}, {Key: "mergeIn", Value: v.From}, {Key: "dryRun", Value: true}}
	if err := run(ctx, s, target(db, v.Into), cmd, &dry); err != nil {
		return err
	}
	v.UpToDate, v.FastForward, v.MergeBase = dry.UpToDate, dry.FastForward, dry.MergeBase
	for _, coll := range slices.Sorted(maps.Keys(dry.Conflicts)) {
		cc := conflictCount{Collection: coll, Count: dry.Conflicts[coll]}
		for _, id := range dry.IDs[coll] {
			cc.IDs = append(cc.IDs, docID{Text: extValue(id, false), Canonical: extValue(id, true)})
		}
		cc.More = max(cc.Count-len(cc.IDs), 0)
		v.Conflicts = append(v.Conflicts, cc)
	}
	v.Message = fmt.Sprintf("Merge %s into %s", v.From, v.Into)
	if !v.UpToDate {
		v.DiffFrom = cmpOr(v.MergeBase, v.Into+"~0")
		v.FromRev, v.ToRev = v.DiffFrom, v.From
		if v.Collections, err = revisionDiff(ctx, s, db, v.Into, v.DiffFrom, v.From); err != nil {
			return err
		}
	}
	c.render(w, r, http.StatusOK, "merge", s, v)
	return nil
}

// revisionDiff is dumboDiff between two revisions, as the diff page
// shows it.
func revisionDiff(ctx context.Context, s *session, db, branch, from, to string) ([]collectionDiff, error) {
	var reply struct {
		Collections []collectionDiff `bson:"collections"`
	}
	cmd := bson.D{{Key: "dumboDiff", Value: 1}, {Key: "from", Value: from}, {Key: "to", Value: to}}
	if err := run(ctx, s, target(db, branch), cmd, &reply); err != nil {
		return nil, err
	}
	for i := range reply.Collections {
		if err := describeCollectionDiff(ctx, s, db, from, to, &reply.Collections[i]); err != nil {
			return nil, err
		}
	}
	return reply.Collections, nil
}

// mergeInProgress reports whether a branch holds a merge stopped by
// conflicts.
func mergeInProgress(ctx context.Context, s *session, db, branch string) (bool, error) {
	var st struct {
		Merge bson.Raw `bson:"merge"`
	}
	err := run(ctx, s, target(db, branch), bson.D{{Key: "dumboStatus", Value: 1}}, &st)
	return len(st.Merge) > 0, err
}

func conflictsHref(db, branch string) string {
	return Prefix + "db/" + url.PathEscape(db) + "/conflicts?branch=" + url.QueryEscape(branch)
}

func logHref(db, rev string) string {
	return Prefix + "db/" + url.PathEscape(db) + "/log?rev=" + url.QueryEscape(rev)
}

// merge merges; a merge stopped by conflicts goes on in the conflicts
// page.
func (c *Console) merge(w http.ResponseWriter, r *http.Request, s *session) error {
	db, f, err := form(r, "from", "into")
	if err != nil {
		return err
	}
	from, into := f[0], f[1]
	cmd := bson.D{{Key: "dumboMerge", Value: 1}, {Key: "mergeIn", Value: from}}
	if msg := trimmed(r, "message"); msg != "" {
		cmd = append(cmd, bson.E{Key: "message", Value: msg})
	}
	var reply struct {
		FastForward bool   `bson:"fastForward"`
		UpToDate    bool   `bson:"upToDate"`
		CommitID    string `bson:"commitId"`
	}
	err = run(r.Context(), s, target(db, into), cmd, &reply)
	var ce mongo.CommandError
	if errors.As(err, &ce) && ce.Name == "MergeConflict" {
		s.say("The merge stopped on conflicts: settle each below, then continue (or abort).")
		http.Redirect(w, r, conflictsHref(db, into), http.StatusSeeOther)
		return nil
	}
	if err != nil {
		return err
	}
	switch {
	case reply.UpToDate:
		s.say(into + " already has " + from + ".")
	case reply.FastForward:
		s.say(fmt.Sprintf("Fast-forwarded %s to %s.", into, shortID(reply.CommitID)))
	default:
		s.say(fmt.Sprintf("Merged %s into %s: %s.", from, into, shortID(reply.CommitID)))
	}
	http.Redirect(w, r, logHref(db, into), http.StatusSeeOther)
	return nil
}

// conflictInfo is one conflict of dumboConflicts.
type conflictInfo struct {
	Collection string        `bson:"collection"`
	ID         bson.RawValue `bson:"_id"`
	Base       bson.Raw      `bson:"base"`
	Ours       bson.Raw      `bson:"ours"`
	Theirs     bson.Raw      `bson:"theirs"`
}

type conflictRow struct {
	Collection, ID, IDText   string
	Base, Ours, Theirs, Edit string
}

type conflictsView struct {
	DB, Branch string
	Merging    bool
	Conflicts  []conflictRow
	CanVersion bool
	Locked     *protectedBranch // the rule that keeps Branch from the user's writes
}

func (v conflictsView) layout() view {
	return view{Title: "Conflicts on " + v.Branch, DB: v.DB, Crumbs: []crumb{{v.DB, Prefix + "db/" + url.PathEscape(v.DB)}, {"conflicts", ""}}}
}

// conflictsPage lists a stopped merge's conflicts, each with base, ours
// and theirs and the forms that settle it.
func (c *Console) conflictsPage(w http.ResponseWriter, r *http.Request, s *session) error {
	db, err := pathDB(r)
	if err != nil {
		return err
	}
	v := conflictsView{DB: db, Branch: cmpOr(trimmed(r, "branch"), currentBranch(s, db)), CanVersion: s.can(db, "dumboVersionWrite")}
	ctx := r.Context()
	if v.Merging, err = mergeInProgress(ctx, s, db, v.Branch); err != nil {
		return err
	}
	if v.Locked, err = c.lockedBranch(ctx, s, db, v.Branch); err != nil {
		return err
	}
	var reply struct {
		Conflicts []conflictInfo `bson:"conflicts"`
	}
	if err := run(ctx, s, target(db, v.Branch), bson.D{{Key: "dumboConflicts", Value: 1}}, &reply); err != nil {
		return err
	}
	for _, cf := range reply.Conflicts {
		edit := cf.Ours
		if len(edit) == 0 {
			edit = cf.Theirs
		}
		v.Conflicts = append(v.Conflicts, conflictRow{Collection: cf.Collection, ID: extValue(cf.ID, true), IDText: extValue(cf.ID, false),
			Base: docJSON(cf.Base), Ours: docJSON(cf.Ours), Theirs: docJSON(cf.Theirs), Edit: docJSON(edit)})
	}
	c.render(w, r, http.StatusOK, "conflicts", s, v)
	return nil
}

// resolve settles one conflict: ours, theirs or an edited document.
func (c *Console) resolve(w http.ResponseWriter, r *http.Request, s *session) error {
	db, f, err := form(r, "branch", "collection", "id")
	if err != nil {
		return err
	}
	branch, coll := f[0], f[1]
	id, err := parseValue(f[2])
	if err != nil {
		return err
	}
	resolution := r.PostFormValue("resolution")
	cmd := bson.D{{Key: "dumboResolveConflict", Value: 1}, {Key: "collection", Value: coll}, {Key: "_id", Value: id}, {Key: "resolution", Value: resolution}}
	if resolution == "custom" {
		doc, err := parseDocument("edited document", r.PostFormValue("document"))
		if err != nil {
			return err
		}
		if doc == nil {
			return badRequest("the edited document is empty")
		}
		cmd = append(cmd, bson.E{Key: "document", Value: doc})
	}
	if err := run(r.Context(), s, target(db, branch), cmd, nil); err != nil {
		return err
	}
	s.say(fmt.Sprintf("Settled the conflict on %s %s with %s.", coll, extValue(id, false), resolution))
	http.Redirect(w, r, conflictsHref(db, branch), http.StatusSeeOther)
	return nil
}

// mergeContinue commits a merge whose conflicts are all settled.
func (c *Console) mergeContinue(w http.ResponseWriter, r *http.Request, s *session) error {
	return c.finishMerge(w, r, s, "continue")
}

// mergeAbort abandons a stopped merge.
func (c *Console) mergeAbort(w http.ResponseWriter, r *http.Request, s *session) error {
	return c.finishMerge(w, r, s, "abort")
}

func (c *Console) finishMerge(w http.ResponseWriter, r *http.Request, s *session, how string) error {
	db, f, err := form(r, "branch")
	if err != nil {
		return err
	}
	branch := f[0]
	var reply struct {
		CommitID string `bson:"commitId"`
	}
	if err := run(r.Context(), s, target(db, branch), bson.D{{Key: "dumboMerge", Value: 1}, {Key: how, Value: 1}}, &reply); err != nil {
		return err
	}
	if how == "abort" {
		s.say("Aborted the merge into " + branch + ".")
		back(w, r, db)
		return nil
	}
	s.say(fmt.Sprintf("Merged into %s: %s.", branch, shortID(reply.CommitID)))
	http.Redirect(w, r, logHref(db, branch), http.StatusSeeOther)
	return nil
}
