package server

import (
	"context"
	"slices"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/query"
	"github.com/dumbodb/dumbodb/storage"
)

// dumboLog: the history, filtered by collections, documents, a query on
// the documents a commit changed, time and author, every branch's with
// all; per commit its changes counted (stat) or listed (patch); paged by
// the token in next.

// dumboBlame: for each field path of a document at a revision, the commit
// that last set it (storage.Blame).
func cmdDumboBlame(r *request) (bsoncore.Document, error) {
	d, err := r.vcDatabase()
	if err != nil {
		return nil, err
	}
	var coll, rev string
	var id bsoncore.Value
	err = r.parseArgs(map[string]fieldHandler{
		"collection": r.stringArg("collection", &coll),
		"rev":        r.stringArg("rev", &rev),
		"_id":        func(v bsoncore.Value) error { id = v; return nil },
	})
	if err != nil {
		return nil, err
	}
	if coll == "" || id.Type == 0 {
		return nil, mongoerr.New(mongoerr.BadValue, "%s needs a collection and an _id", r.name)
	}
	at, err := r.logFrom(d, rev)
	if err != nil {
		return nil, err
	}
	doc, lines, err := d.Blame(r.ctx, at, coll, id)
	if err != nil {
		return nil, err
	}
	fields := bsoncore.NewArrayBuilder()
	for _, l := range lines {
		fields.AppendDocument(bsoncore.NewDocumentBuilder().AppendString("path", l.Path).
			AppendString("commitId", l.Commit.ID).AppendString("author", l.Commit.Author).
			AppendDateTime("timestamp", l.Commit.Timestamp.UnixMilli()).AppendString("message", l.Commit.Message).Build())
	}
	return bsoncore.NewDocumentBuilder().AppendDocument("document", doc).AppendArray("fields", fields.Build()).
		AppendDouble("ok", 1).Build(), nil
}

// maxPatchChanges bounds the documents a commit's patch lists.
const maxPatchChanges = 100

type logArgs struct {
	opts        storage.LogOptions
	limit       int64
	from        string
	filter      bsoncore.Document
	stat, patch bool
}

func cmdDumboLog(r *request) (bsoncore.Document, error) {
	d, err := r.vcDatabase()
	if err != nil {
		return nil, err
	}
	a, err := r.parseLogArgs()
	if err != nil {
		return nil, err
	}
	if a.opts.From, err = r.logFrom(d, a.from); err != nil {
		return nil, err
	}
	if a.filter != nil {
		if a.opts.Keep, err = r.changedDocsMatch(d, a.filter, a.opts.Collections); err != nil {
			return nil, err
		}
	}
	commits, more, err := d.LogPage(r.ctx, a.opts)
	if err != nil {
		return nil, err
	}
	arr := bsoncore.NewArrayBuilder()
	for _, c := range commits {
		doc, err := r.logEntry(d, c, a)
		if err != nil {
			return nil, err
		}
		arr.AppendDocument(doc)
	}
	b := bsoncore.NewDocumentBuilder().AppendArray("commits", arr.Build())
	if more {
		b.AppendString("next", commits[len(commits)-1].ID)
	}
	return b.AppendDouble("ok", 1).Build(), nil
}

func (r *request) parseLogArgs() (*logArgs, error) {
	a := &logArgs{}
	o := &a.opts
	err := r.parseArgs(map[string]fieldHandler{
		"limit":      r.nonNegativeArg("limit", &a.limit),
		"from":       r.stringArg("from", &a.from),
		"after":      r.stringArg("after", &o.After),
		"all":        r.boolArg("all", &o.All),
		"author":     r.stringArg("author", &o.Author),
		"filter":     r.optDocArg("filter", &a.filter),
		"stat":       r.boolArg("stat", &a.stat),
		"patch":      r.boolArg("patch", &a.patch),
		"since":      r.timeArg("since", &o.Since),
		"until":      r.timeArg("until", &o.Until),
		"collection": func(v bsoncore.Value) error { return r.logCollections(v, &o.Collections) },
		"_id":        func(v bsoncore.Value) error { o.IDs = logIDs(v); return nil },
	})
	if err != nil {
		return nil, err
	}
	if len(o.IDs) > 0 && len(o.Collections) == 0 {
		return nil, mongoerr.New(mongoerr.BadValue, "%s with _id needs a collection", r.name)
	}
	if o.All && a.from != "" {
		return nil, mongoerr.New(mongoerr.BadValue, "%s takes from or all, not both", r.name)
	}
	o.Limit = int(a.limit)
	return a, nil
}

// logFrom is where the history starts: from, else the addressed revision.
func (r *request) logFrom(d *storage.Database, from string) (storage.Revision, error) {
	if from != "" {
		return r.resolveArg(d, from)
	}
	return r.revision(d)
}

// logCollections reads collection: a name or an array of names.
func (r *request) logCollections(v bsoncore.Value, dst *[]string) error {
	if s, ok := v.StringValueOK(); ok {
		*dst = []string{s}
		return nil
	}
	arr, ok := v.ArrayOK()
	if !ok {
		return typesMismatch(r.name, "collection", v, "string, array")
	}
	vals, _ := arr.Values()
	for _, e := range vals {
		s, ok := e.StringValueOK()
		if !ok {
			return typeMismatch(r.name, "collection", e, "string")
		}
		*dst = append(*dst, s)
	}
	return nil
}

// logIDs reads _id: one value, or an array of several (an _id is never an
// array).
func logIDs(v bsoncore.Value) []bsoncore.Value {
	arr, ok := v.ArrayOK()
	if !ok {
		return []bsoncore.Value{v}
	}
	vals, _ := arr.Values()
	return vals
}

// timeArg reads a date (or an RFC 3339 string).
func (r *request) timeArg(field string, dst *time.Time) fieldHandler {
	return func(v bsoncore.Value) error {
		if ms, ok := v.DateTimeOK(); ok {
			*dst = time.UnixMilli(ms)
			return nil
		}
		if s, ok := v.StringValueOK(); ok {
			t, err := time.Parse(time.RFC3339Nano, s)
			if err == nil {
				*dst = t
				return nil
			}
		}
		return typesMismatch(r.name, field, v, "date, string")
	}
}

// changedDocsMatch keeps a commit when a document it added, removed or
// modified (before or after) matches the filter.
func (r *request) changedDocsMatch(d *storage.Database, filter bsoncore.Document, colls []string) (func(storage.CommitInfo) (bool, error), error) {
	f, err := query.CompileFilter(filter)
	if err != nil {
		return nil, err
	}
	return func(c storage.CommitInfo) (bool, error) {
		ch, err := r.commitChanges(d, c, colls)
		if err != nil {
			return false, err
		}
		docs, err := ch.docs(r.ctx)
		if err != nil {
			return false, err
		}
		for _, doc := range docs {
			if f.Match(doc) {
				return true, nil
			}
		}
		return false, nil
	}, nil
}

// commitChanges is what a commit changed against its first parent, in
// colls (empty: all); a root commit changed nothing.
type commitChanges struct {
	diffs         []storage.CollectionDiff
	before, after *storage.Snapshot
}

func (r *request) commitChanges(d *storage.Database, c storage.CommitInfo, colls []string) (*commitChanges, error) {
	ch := &commitChanges{}
	if len(c.Parents) == 0 {
		return ch, nil
	}
	to, err := d.Resolve(r.ctx, c.ID, r.currentBranch())
	if err != nil {
		return nil, err
	}
	from, err := d.Resolve(r.ctx, c.Parents[0], r.currentBranch())
	if err != nil {
		return nil, err
	}
	diffs, err := d.Diff(r.ctx, storage.DiffSide{Rev: from}, storage.DiffSide{Rev: to}, "")
	if err != nil {
		return nil, err
	}
	for _, cd := range diffs {
		if len(colls) == 0 || slices.Contains(colls, cd.Name) {
			ch.diffs = append(ch.diffs, cd)
		}
	}
	if ch.before, err = d.SnapshotAt(r.ctx, from); err != nil {
		return nil, err
	}
	ch.after, err = d.SnapshotAt(r.ctx, to)
	return ch, err
}

// docs are the changed documents: added and removed ones, and a modified
// one as it was and as it became.
func (ch *commitChanges) docs(ctx context.Context) ([]bsoncore.Document, error) {
	var out []bsoncore.Document
	for _, cd := range ch.diffs {
		for _, c := range cd.Added {
			out = append(out, c.To)
		}
		for _, c := range cd.Removed {
			out = append(out, c.From)
		}
		for _, c := range cd.Modified {
			for _, snap := range []*storage.Snapshot{ch.before, ch.after} {
				doc, ok, err := snap.Get(ctx, cd.Name, c.ID)
				if err != nil {
					return nil, err
				}
				if ok {
					out = append(out, doc)
				}
			}
		}
	}
	return out, nil
}

// logEntry is one commit of the reply, with its stat or patch if asked.
func (r *request) logEntry(d *storage.Database, c storage.CommitInfo, a *logArgs) (bsoncore.Document, error) {
	doc := commitDoc(c)
	if !a.stat && !a.patch {
		return doc, nil
	}
	ch, err := r.commitChanges(d, c, a.opts.Collections)
	if err != nil {
		return nil, err
	}
	return appendFields(doc, func(b *bsoncore.DocumentBuilder) {
		if a.stat {
			b.AppendArray("stat", ch.stat())
		}
		if a.patch {
			patch, truncated := ch.patch()
			b.AppendArray("patch", patch)
			if truncated {
				b.AppendBoolean("patchTruncated", true)
			}
		}
	}), nil
}

// stat counts each collection's changes.
func (ch *commitChanges) stat() bsoncore.Array {
	arr := bsoncore.NewArrayBuilder()
	for _, cd := range ch.diffs {
		arr.AppendDocument(bsoncore.NewDocumentBuilder().AppendString("collection", cd.Name).
			AppendInt32("added", int32(len(cd.Added))).AppendInt32("modified", int32(len(cd.Modified))).
			AppendInt32("removed", int32(len(cd.Removed))).Build())
	}
	return arr.Build()
}

// patch is the commit's diff as dumboDiff shows it, at most
// maxPatchChanges documents in all (truncated: some were left out).
func (ch *commitChanges) patch() (bsoncore.Array, bool) {
	arr := bsoncore.NewArrayBuilder()
	budget, truncated := maxPatchChanges, false
	for _, cd := range ch.diffs {
		cd.Added, budget, truncated = keepFirst(cd.Added, budget, truncated)
		cd.Removed, budget, truncated = keepFirst(cd.Removed, budget, truncated)
		cd.Modified, budget, truncated = keepFirst(cd.Modified, budget, truncated)
		arr.AppendDocument(collectionDiffDoc(cd))
	}
	return arr.Build(), truncated
}

func keepFirst(list []storage.DocChange, budget int, truncated bool) ([]storage.DocChange, int, bool) {
	if len(list) <= budget {
		return list, budget - len(list), truncated
	}
	return list[:budget], 0, true
}
