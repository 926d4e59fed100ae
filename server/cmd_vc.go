package server

import (
	"fmt"
	"time"

	"github.com/dumbodb/dumbodb/auth"
	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/storage"

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
	if err := r.parseArgs(fields); err != nil {
		return o, err
	}
	return o, r.authorAs(&o)
}

// authorAs makes the authenticated user a commit's author (with --auth):
// by default, and a client-given author other than the user only with the
// dumboVersionAdmin action, so that history says who made a change.
func (r *request) authorAs(o *storage.CommitOptions) error {
	a := r.c.authState()
	if !r.c.s.cfg.Auth || a.user == nil {
		return nil
	}
	self := fmt.Sprintf("%s <%s@%s>", a.user.Name, a.user.Name, a.user.DB)
	switch {
	case o.Author == "":
		o.Author = self
	case o.Author != self && !a.privs.Allows(auth.VCAdmin, r.db):
		return mongoerr.New(mongoerr.Unauthorized, "recording %q as the author needs the dumboVersionAdmin action on %s; omit author to record %q", o.Author, r.db, self)
	}
	return nil
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
		return nil, mongoerr.New(mongoerr.Location40414, "BSON field '%s.message' is missing but a required field", r.name)
	}
	branch, err := r.branchOf(d)
	if err != nil {
		return nil, err
	}
	c, err := d.Commit(r.ctx, branch, opts)
	if err != nil {
		return nil, err
	}
	d.EmitVersionEvent(branch, "dumboCommit", versionDesc("commitId", c.ID, "message", c.Message, "author", c.Author))
	return bsoncore.NewDocumentBuilder().
		AppendString("commitId", c.ID).
		AppendString("branch", branch).
		AppendString("message", c.Message).
		AppendString("author", c.Author).
		AppendDateTime("timestamp", c.Timestamp.UnixMilli()).
		AppendDouble("ok", 1).Build(), nil
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

// versionDesc is a version-control change event's operationDescription,
// from key, value pairs of strings.
func versionDesc(kv ...string) bsoncore.Document {
	b := bsoncore.NewDocumentBuilder()
	for i := 0; i+1 < len(kv); i += 2 {
		b.AppendString(kv[i], kv[i+1])
	}
	return b.Build()
}
