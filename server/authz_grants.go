package server

import (
	"slices"

	"github.com/dumbodb/dumbodb/auth"
	"github.com/dumbodb/dumbodb/mongoerr"
)

// Who may give what (docs/design/auth.md, "Granting roles and
// privileges"), as on mongod: giving a role needs the grantRole action on
// the role's database, taking one away revokeRole there; a privilege on a
// database or a collection needs grantRole (revokeRole) on that database,
// one on every database or on the cluster needs it on every database.
// So a user administrator of one database cannot hand itself, or anyone,
// a role of another (root@admin among them).

// grantRights is what the user may give and take, resolved before a
// change of the users file so that the change's callback, which runs
// under the file's lock, checks it without reading the file again.
type grantRights struct {
	r    *request
	all  bool // no access control, or the localhost exception
	priv *auth.Privileges
}

func (r *request) grantRights() grantRights {
	if !r.c.s.cfg.Auth {
		return grantRights{r: r, all: true}
	}
	a := r.c.currentAuth()
	return grantRights{r: r, all: a.user == nil && r.localhostException(), priv: a.privs}
}

// allow checks action on database db ("": on every database).
func (g grantRights) allow(action auth.Action, db string) error {
	switch {
	case g.all:
		return nil
	case db == "" && g.priv.AllowsEverywhere(action):
		return nil
	case db == "":
		return mongoerr.New(mongoerr.Unauthorized, "not authorized to execute command %s: it needs %v on every database",
			commandSummary(g.r.cmd), action.Names())
	case g.priv.Allows(action, db):
		return nil
	}
	return mongoerr.New(mongoerr.Unauthorized, "not authorized on %s to execute command %s (it needs %v)",
		db, commandSummary(g.r.cmd), action.Names())
}

// roles checks that the user may give (action GrantRole) or take away
// (RevokeRole) each role.
func (g grantRights) roles(action auth.Action, roles []auth.RoleRef) error {
	for _, ref := range roles {
		if err := g.allow(action, ref.DB); err != nil {
			return err
		}
	}
	return nil
}

// privileges checks that the user may give (GrantRole) or take away
// (RevokeRole) each privilege.
func (g grantRights) privileges(action auth.Action, ps []auth.Privilege) error {
	for _, p := range ps {
		db := p.Resource.DB
		if p.Resource.Cluster {
			db = ""
		}
		if err := g.allow(action, db); err != nil {
			return err
		}
	}
	return nil
}

// rolesReplaced checks a change of a role list from old to next: the
// roles it drops need revokeRole, those it adds grantRole.
func (g grantRights) rolesReplaced(old, next []auth.RoleRef) error {
	var gone, added []auth.RoleRef
	for _, ref := range old {
		if !slices.Contains(next, ref) {
			gone = append(gone, ref)
		}
	}
	for _, ref := range next {
		if !slices.Contains(old, ref) {
			added = append(added, ref)
		}
	}
	if err := g.roles(auth.RevokeRole, gone); err != nil {
		return err
	}
	return g.roles(auth.GrantRole, added)
}

// privilegesReplaced is rolesReplaced for a role's privileges: whatever a
// resource loses needs revokeRole, whatever it gains grantRole.
func (g grantRights) privilegesReplaced(old, next []auth.Privilege) error {
	if err := g.privileges(auth.RevokeRole, privilegesLost(old, next)); err != nil {
		return err
	}
	return g.privileges(auth.GrantRole, privilegesLost(next, old))
}

// privilegesLost is what from holds that to does not, resource by resource.
func privilegesLost(from, to []auth.Privilege) []auth.Privilege {
	var out []auth.Privilege
	for _, p := range from {
		kept := auth.Action(0)
		for _, q := range to {
			if q.Resource == p.Resource {
				kept |= q.Actions
			}
		}
		if lost := p.Actions &^ kept; lost != 0 {
			out = append(out, auth.Privilege{Resource: p.Resource, Actions: lost})
		}
	}
	return out
}

// checkRoleScope: a role of a database other than admin may inherit roles
// of its own database only, as on mongod.
func (r *request) checkRoleScope(roles []auth.RoleRef) error {
	if r.db == "admin" {
		return nil
	}
	for _, ref := range roles {
		if ref.DB != r.db {
			return mongoerr.New(mongoerr.BadValue, "Roles on the '%s' database cannot be granted roles from other databases (%s)", r.db, ref)
		}
	}
	return nil
}

// grantOrRevoke is the action a grant (true) or a revoke needs.
func grantOrRevoke(grant bool) auth.Action {
	if grant {
		return auth.GrantRole
	}
	return auth.RevokeRole
}

// userUpdate checks updateUser's fields against the user u as it is: a
// password needs changePassword and custom data changeCustomData on the
// user's database, new roles grantRole and dropped ones revokeRole on
// theirs.
func (g grantRights) userUpdate(u *auth.User, a userArgs) error {
	if a.pwd != nil {
		if err := g.allow(auth.ChangePassword, u.DB); err != nil {
			return err
		}
	}
	if a.customData != nil {
		if err := g.allow(auth.ChangeCustomData, u.DB); err != nil {
			return err
		}
	}
	if a.roles != nil {
		return g.rolesReplaced(u.Roles, *a.roles)
	}
	return nil
}
