package server

import (
	"github.com/dumbodb/dumbodb/auth"
	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/storage"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Remotes: dumboRemote, dumboFetch, dumboPush, dumboPull and dumboClone
// (docs/design/remotes.md).

// cmdDumboRemote is {dumboRemote: "add", name, url},
// {dumboRemote: "remove", name} or {dumboRemote: 1} (the list).
func cmdDumboRemote(r *request) (bsoncore.Document, error) {
	d, err := r.vcDatabase()
	if err != nil {
		return nil, err
	}
	var name, url string
	err = r.parseArgs(map[string]fieldHandler{
		"name": r.stringArg("name", &name),
		"url":  r.stringArg("url", &url),
	})
	if err != nil {
		return nil, err
	}
	switch op := r.firstString(); op {
	case "":
		return remoteList(r, d)
	case "add", "remove":
		if name == "" || (op == "add" && url == "") {
			return nil, mongoerr.New(mongoerr.FailedToParse, "dumboRemote: %q needs a name%s", op, map[bool]string{true: " and a url"}[op == "add"])
		}
		if op == "add" {
			err = d.AddRemote(r.ctx, name, url)
		} else {
			err = d.RemoveRemote(r.ctx, name)
		}
		if err != nil {
			return nil, err
		}
		return okReply(), nil
	default:
		return nil, mongoerr.New(mongoerr.BadValue, "dumboRemote: unknown operation %q: use \"add\", \"remove\" or 1 to list", op)
	}
}

func remoteList(r *request, d *storage.Database) (bsoncore.Document, error) {
	remotes, err := d.Remotes(r.ctx)
	if err != nil {
		return nil, err
	}
	arr := bsoncore.NewArrayBuilder()
	for _, rm := range remotes {
		arr.AppendDocument(bsoncore.NewDocumentBuilder().AppendString("name", rm.Name).AppendString("url", rm.URL).Build())
	}
	return bsoncore.NewDocumentBuilder().AppendArray("remotes", arr.Build()).AppendDouble("ok", 1).Build(), nil
}

// cmdDumboFetch is {dumboFetch: 1, remote?, branch?, prune?}.
func cmdDumboFetch(r *request) (bsoncore.Document, error) {
	d, err := r.vcDatabase()
	if err != nil {
		return nil, err
	}
	remote, branch, prune := "origin", "", false
	err = r.parseArgs(map[string]fieldHandler{
		"remote": r.stringArg("remote", &remote),
		"branch": r.stringArg("branch", &branch),
		"prune":  r.boolArg("prune", &prune),
	})
	if err != nil {
		return nil, err
	}
	res, err := d.Fetch(r.ctx, remote, branch, prune)
	if err != nil {
		return nil, err
	}
	return transferReply(bsoncore.NewDocumentBuilder().AppendString("remote", remote), res.Updated, res.Transferred), nil
}

// cmdDumboPush is {dumboPush: 1, remote?, branch?, remoteBranch?,
// setUpstream?, force?, delete?, tags?}.
func cmdDumboPush(r *request) (bsoncore.Document, error) {
	d, err := r.vcDatabase()
	if err != nil {
		return nil, err
	}
	o := storage.PushOptions{Branch: r.currentBranch()}
	err = r.parseArgs(map[string]fieldHandler{
		"remote":       r.stringArg("remote", &o.Remote),
		"branch":       r.stringArg("branch", &o.Branch),
		"remoteBranch": r.stringArg("remoteBranch", &o.RemoteBranch),
		"setUpstream":  r.boolArg("setUpstream", &o.SetUpstream),
		"force":        r.boolArg("force", &o.Force),
		"delete":       r.boolArg("delete", &o.Delete),
		"tags":         r.boolArg("tags", &o.Tags),
	})
	if err != nil {
		return nil, err
	}
	if o.Force || o.Delete {
		if err := r.require(auth.VCAdmin, r.db); err != nil {
			return nil, err
		}
	}
	res, err := d.Push(r.ctx, o)
	if err != nil {
		return nil, err
	}
	b := bsoncore.NewDocumentBuilder().AppendString("remote", res.Remote).AppendBoolean("upToDate", res.UpToDate)
	return transferReply(b, res.Updated, res.Transferred), nil
}

// cmdDumboPull is {dumboPull: 1, remote?, branch?, ffOnly?, noFF?,
// rebase?, message?, author?}: branch is the remote's branch; the pull
// goes into the connection's branch.
func cmdDumboPull(r *request) (bsoncore.Document, error) {
	d, err := r.vcDatabase()
	if err != nil {
		return nil, err
	}
	var o storage.PullOptions
	o.Commit, err = r.commitOptions(map[string]fieldHandler{
		"remote": r.stringArg("remote", &o.Remote),
		"branch": r.stringArg("branch", &o.RemoteBranch),
		"ffOnly": r.boolArg("ffOnly", &o.FFOnly),
		"noFF":   r.boolArg("noFF", &o.NoFF),
		"rebase": r.boolArg("rebase", &o.Rebase),
	})
	if err != nil {
		return nil, err
	}
	if o.Branch, err = r.branchOf(d); err != nil {
		return nil, err
	}
	res, err := d.Pull(r.ctx, o)
	if err != nil {
		if _, merr := r.mergeReply(res.Merge, err); merr != nil {
			return nil, merr
		}
	}
	if !res.Merge.UpToDate {
		d.EmitVersionEvent(o.Branch, "dumboMerge", versionDesc("mergeIn", o.Remote+"/"+o.RemoteBranch, "commitId", res.Merge.Commit.ID))
	}
	b := bsoncore.NewDocumentBuilder().AppendBoolean("upToDate", res.Merge.UpToDate).
		AppendBoolean("fastForward", res.Merge.FastForward).AppendString("commitId", res.Merge.Commit.ID)
	return transferReply(b, res.Fetch.Updated, res.Fetch.Transferred), nil
}

// cmdDumboClone is {dumboClone: 1, url, branch?}, sent to the database
// the clone makes.
func cmdDumboClone(r *request) (bsoncore.Document, error) {
	var url, branch string
	err := r.parseArgs(map[string]fieldHandler{
		"url":    r.stringArg("url", &url),
		"branch": r.stringArg("branch", &branch),
	})
	if err != nil {
		return nil, err
	}
	if url == "" {
		return nil, mongoerr.New(mongoerr.Location40414, "BSON field 'dumboClone.url' is missing but a required field")
	}
	if err := validateCreatableDB(r.db, ""); err != nil {
		return nil, err
	}
	res, err := r.c.s.engine.Clone(r.ctx, r.db, url, branch)
	if err != nil {
		return nil, err
	}
	return transferReply(bsoncore.NewDocumentBuilder().AppendString("database", r.db), res.Updated, res.Transferred), nil
}

// transferReply ends a fetch's, push's, pull's or clone's reply: the refs
// it moved and what it copied.
func transferReply(b *bsoncore.DocumentBuilder, updated []storage.RefUpdate, moved storage.TransferStats) bsoncore.Document {
	arr := bsoncore.NewArrayBuilder()
	for _, u := range updated {
		ref := bsoncore.NewDocumentBuilder().AppendString("ref", u.Name)
		if u.Old != "" {
			ref.AppendString("from", u.Old)
		}
		if u.New != "" {
			ref.AppendString("to", u.New)
		}
		arr.AppendDocument(ref.Build())
	}
	return b.AppendArray("updated", arr.Build()).
		AppendInt64("chunks", int64(moved.Chunks)).AppendInt64("bytes", int64(moved.Bytes)).
		AppendInt64("resumedBytes", int64(moved.Resumed)).
		AppendDouble("ok", 1).Build()
}
