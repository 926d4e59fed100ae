package server

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/auth"
	"github.com/dumbodb/dumbodb/mongoerr"
)

// Protected branches (docs/design/auth.md): with --auth, only holders of
// a branch's roles may write it or move it; others work on branches of
// their own and a holder merges them.

// branchWrites are the actions of commands that write or move the branch
// they run on.
const branchWrites = auth.Insert | auth.Update | auth.Remove | auth.CreateCollection | auth.DropCollection |
	auth.CreateIndex | auth.DropIndex | auth.CollMod | auth.RenameCollectionSameDB | auth.DropDatabase | auth.VCWrite

// notOnItsBranch are the commands with write actions that do not write
// the connection's branch: dumboBranch and dumboTag check in their
// handlers (only deleting a branch touches one); fetch, push and remote
// configuration move remote-tracking refs, tags and remotes, never a
// branch here.
var notOnItsBranch = map[string]bool{"dumboBranch": true, "dumboTag": true, "dumboFetch": true,
	"dumboPush": true, "dumboRemote": true, "dumboClone": true}

// checkProtectedWrite refuses a command that writes a protected branch
// for a user without one of its roles.
func (r *request) checkProtectedWrite(a connAuth) error {
	if r.spec.need.action&branchWrites == 0 || notOnItsBranch[canonicalCommand(r.name)] {
		return nil
	}
	db := r.authzDB()
	if r.name == "dropDatabase" {
		for _, p := range r.c.s.users.Protections(db) {
			if err := r.checkBranchWrite(a, db, p.Branch); err != nil {
				return err
			}
		}
		return nil
	}
	rev := r.rev
	if db != r.db {
		rev = "" // renameCollection's source database: its checked-out branch
	}
	return r.checkRevisionWrite(a, db, rev)
}

// checkRevisionWrite is checkBranchWrite for a write of db@rev (rev "":
// the connection's branch of db): the rule is that of the branch the
// spelling resolves to (HEAD, HEAD~0, a full ref, a branch's name), never
// of the spelling itself. A revision that resolves to no branch (a tag, a
// commit) is read-only, and its write is refused by the write itself.
func (r *request) checkRevisionWrite(a connAuth, db, rev string) error {
	branch := r.branchWritten(db, rev)
	if branch == "" {
		return nil
	}
	return r.checkBranchWrite(a, db, branch)
}

// branchWritten is the branch a write of db@rev goes to ("": none, the
// revision is read-only). Where the database does not exist yet or the
// revision does not resolve, the spelling is taken as the branch's name
// (HEAD: the checked-out branch), which is what the write will create or
// fail on.
func (r *request) branchWritten(db, rev string) string {
	current := r.currentBranchOf(db)
	if rev == "" || rev == "HEAD" {
		return current
	}
	d, err := r.c.s.engine.Database(r.ctx, db, false)
	if err != nil || d == nil {
		return rev
	}
	res, err := d.Resolve(r.ctx, rev, current)
	switch {
	case err != nil:
		return rev
	case res.ReadOnly():
		return ""
	}
	return res.Branch
}

// checkBranchWrite refuses a write of db@branch when the branch is
// protected and the user holds none of its roles.
func (r *request) checkBranchWrite(a connAuth, db, branch string) error {
	return r.c.s.checkBranchWrite(a.user, db, branch)
}

// checkBranchWrite refuses user a write of a protected branch whose roles
// it does not hold (with --auth).
func (s *Server) checkBranchWrite(user *auth.User, db, branch string) error {
	if !s.cfg.Auth {
		return nil
	}
	p, ok := s.users.Protection(db, branch)
	if !ok || (user != nil && s.users.Holds(user, p.Roles)) {
		return nil
	}
	return mongoerr.New(mongoerr.Unauthorized,
		"branch %s of %s is protected: writing or moving it needs one of the roles %v; work on a branch of your own and have a holder merge it",
		branch, db, p.Roles)
}

// cmdDumboProtectBranch sets the roles that may write a branch
// ({dumboProtectBranch: "main", roles: [...]}) or lifts the rule
// ({dumboProtectBranch: "main", unprotect: true}).
func cmdDumboProtectBranch(r *request) (bsoncore.Document, error) {
	branch, ok := r.cmd.Index(0).Value().StringValueOK()
	if !ok || branch == "" {
		return nil, mongoerr.New(mongoerr.BadValue, "dumboProtectBranch must name a branch (a non-empty string)")
	}
	var rolesArr bsoncore.Array
	var unprotect bool
	err := r.parseArgs(map[string]fieldHandler{
		"roles":     r.arrayArg("roles", &rolesArr),
		"unprotect": r.boolArg("unprotect", &unprotect),
	})
	if err != nil {
		return nil, err
	}
	if err := r.checkRuleChange(branch); err != nil {
		return nil, err
	}
	switch {
	case unprotect && rolesArr != nil:
		return nil, mongoerr.New(mongoerr.BadValue, "dumboProtectBranch takes roles or unprotect, not both")
	case unprotect:
		was, err := r.c.s.users.Unprotect(r.db, branch)
		if err != nil {
			return nil, err
		}
		return bsoncore.NewDocumentBuilder().AppendBoolean("wasProtected", was).AppendDouble("ok", 1).Build(), nil
	}
	roles, err := r.roleList(rolesArr)
	if err != nil {
		return nil, err
	}
	if len(roles) == 0 {
		return nil, mongoerr.New(mongoerr.BadValue, "dumboProtectBranch needs a non-empty roles array (or unprotect: true)")
	}
	if err := r.c.s.users.Protect(auth.Protection{DB: r.db, Branch: branch, Roles: roles}); err != nil {
		return nil, err
	}
	return okReply(), nil
}

// checkRuleChange refuses changing or lifting a branch's rule to a user
// who neither holds one of its roles nor may grant them all: otherwise any
// version administrator could lift the rule and write the branch.
func (r *request) checkRuleChange(branch string) error {
	err := r.checkBranchWrite(r.c.currentAuth(), r.db, branch)
	if err == nil {
		return nil
	}
	p, _ := r.c.s.users.Protection(r.db, branch)
	if r.grantRights().roles(auth.GrantRole, p.Roles) == nil {
		return nil
	}
	return err
}

// cmdDumboProtectedBranches lists the database's protected branches and
// whether the caller may write each: a client that offers writes (the web
// console) hides those the server would refuse, which it cannot tell from
// the caller's roles alone, as roles inherit roles.
func cmdDumboProtectedBranches(r *request) (bsoncore.Document, error) {
	if err := r.parseArgs(nil); err != nil {
		return nil, err
	}
	arr := bsoncore.NewArrayBuilder()
	for _, p := range r.c.s.users.Protections(r.db) {
		writable := r.checkBranchWrite(r.c.currentAuth(), r.db, p.Branch) == nil
		arr.AppendDocument(bsoncore.NewDocumentBuilder().AppendString("branch", p.Branch).
			AppendArray("roles", auth.EncodeRoles(p.Roles)).AppendBoolean("writable", writable).Build())
	}
	return bsoncore.NewDocumentBuilder().AppendArray("branches", arr.Build()).AppendDouble("ok", 1).Build(), nil
}
