package server

import (
	"github.com/dumbodb/dumbodb/auth"
	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/storage"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

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
		if err := r.require(auth.VCAdmin, r.db); err != nil {
			return nil, err
		}
		if err := r.checkBranchWrite(r.c.currentAuth(), r.db, name); err != nil {
			return nil, err
		}
		// Merged into the branch the command is sent to (db@branch),
		// else into the current branch.
		into, err := r.branchOf(d)
		if err != nil {
			into = r.currentBranch()
		}
		if err := d.DeleteBranch(r.ctx, name, into, force); err != nil {
			return nil, err
		}
		d.EmitVersionEvent("", "dumboBranchDelete", versionDesc("branch", name))
		return bsoncore.NewDocumentBuilder().AppendString("deleted", name).AppendDouble("ok", 1).Build(), nil
	}
	if err := r.require(auth.VCWrite, r.db); err != nil {
		return nil, err
	}
	at, err := r.revision(d)
	if err != nil {
		return nil, err
	}
	c, err := d.CreateBranch(r.ctx, name, at)
	if err != nil {
		return nil, err
	}
	d.EmitVersionEvent("", "dumboBranch", versionDesc("branch", name, "commitId", c.ID))
	return bsoncore.NewDocumentBuilder().AppendString("branch", name).AppendString("commitId", c.ID).
		AppendDouble("ok", 1).Build(), nil
}

func branchList(r *request, d *storage.Database) (bsoncore.Document, error) {
	branches, err := d.Branches(r.ctx)
	if err != nil {
		return nil, err
	}
	remotes, err := d.RemoteBranches(r.ctx)
	if err != nil {
		return nil, err
	}
	arr := bsoncore.NewArrayBuilder()
	for i, b := range append(branches, remotes...) {
		doc := bsoncore.NewDocumentBuilder().
			AppendString("name", b.Name).
			AppendString("commitId", b.Head.ID).
			AppendDocument("head", commitDoc(b.Head))
		if i >= len(branches) {
			doc.AppendBoolean("remote", true) // a remote-tracking ref: read-only
		}
		arr.AppendDocument(doc.Build())
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

func cmdDumboReset(r *request) (bsoncore.Document, error) {
	var to string
	var hard, soft, hardGiven, softGiven bool
	d, branch, err := r.vcBranch(map[string]fieldHandler{
		"to":   r.stringArg("to", &to),
		"hard": given(&hardGiven, r.boolArg("hard", &hard)),
		"soft": given(&softGiven, r.boolArg("soft", &soft)),
	})
	if err != nil {
		return nil, err
	}
	switch { // soft is the default; soft: false asks for hard
	case softGiven && hardGiven && soft == hard:
		return nil, mongoerr.New(mongoerr.BadValue, "dumboReset takes one of soft and hard, not both set to %t", soft)
	case softGiven:
		hard = !soft
	}
	if hard {
		if err := r.require(auth.VCAdmin, r.db); err != nil {
			return nil, err
		}
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
	mode := "soft"
	if hard {
		mode = "hard"
	}
	d.EmitVersionEvent(branch, "dumboReset", versionDesc("commitId", c.ID, "mode", mode))
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
		if err := r.require(auth.VCAdmin, r.db); err != nil {
			return nil, err
		}
		if err := d.DeleteTag(r.ctx, name); err != nil {
			return nil, err
		}
		d.EmitVersionEvent("", "dumboTagDelete", versionDesc("tag", name))
		return bsoncore.NewDocumentBuilder().AppendString("deleted", name).AppendDouble("ok", 1).Build(), nil
	}
	if err := r.require(auth.VCWrite, r.db); err != nil {
		return nil, err
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
	d.EmitVersionEvent("", "dumboTag", versionDesc("tag", tag.Name, "commitId", tag.Commit))
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
	name := r.firstString()
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
