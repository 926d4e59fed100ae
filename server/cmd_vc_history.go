package server

import (
	"errors"

	"github.com/dumbodb/dumbodb/storage"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

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
	up, err := upstreamStatus(r, d, branch)
	if err != nil {
		return nil, err
	}
	if up != nil {
		b.AppendDocument("upstream", up)
	}
	return b.AppendDouble("ok", 1).Build(), nil
}

// upstreamStatus is how far a branch is ahead of and behind its
// upstream's tracking ref as last fetched (nil: no upstream).
func upstreamStatus(r *request, d *storage.Database, branch string) (bsoncore.Document, error) {
	u, ok, err := d.Upstream(r.ctx, branch)
	if err != nil || !ok {
		return nil, err
	}
	b := bsoncore.NewDocumentBuilder().AppendString("remote", u.Remote).AppendString("branch", u.Branch)
	tracking, err := d.Resolve(r.ctx, u.Remote+"/"+u.Branch, branch)
	if errors.Is(err, storage.ErrRevisionNotFound) {
		return b.AppendBoolean("fetched", false).Build(), nil // not fetched or pushed yet
	}
	if err != nil {
		return nil, err
	}
	ahead, behind, err := d.AheadBehind(r.ctx, tracking, storage.Revision{Branch: branch})
	if err != nil {
		return nil, err
	}
	return b.AppendBoolean("fetched", true).AppendInt32("ahead", int32(ahead)).AppendInt32("behind", int32(behind)).Build(), nil
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
