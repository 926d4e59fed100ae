package server

import (
	"errors"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/auth"
	"github.com/dumbodb/dumbodb/mongoerr"
)

// The role commands: user-defined roles of the database the command runs
// on, kept with the users, outside every database's versioned data.

// roleArgs reads a role command's privileges and roles fields.
func (r *request) roleArgs() (privs *[]auth.Privilege, roles *[]auth.RoleRef, err error) {
	var privArr, roleArr bsoncore.Array
	err = r.parseArgs(map[string]fieldHandler{
		"privileges": r.arrayArg("privileges", &privArr),
		"roles":      r.arrayArg("roles", &roleArr),
		"authenticationRestrictions": func(bsoncore.Value) error {
			return mongoerr.New(mongoerr.NotImplemented, "authenticationRestrictions is not implemented")
		},
	})
	if err != nil {
		return nil, nil, err
	}
	if privArr != nil {
		ps, err := auth.DecodePrivileges(privArr)
		if err != nil {
			return nil, nil, mongoerr.New(mongoerr.BadValue, "%v", err)
		}
		if err := r.checkPrivilegeScope(ps); err != nil {
			return nil, nil, err
		}
		privs = &ps
	}
	if roleArr != nil {
		refs, err := r.roleList(roleArr)
		if err != nil {
			return nil, nil, err
		}
		if err := r.checkRoleScope(refs); err != nil {
			return nil, nil, err
		}
		roles = &refs
	}
	return privs, roles, nil
}

// checkPrivilegeScope: a role of a database other than admin may hold
// privileges on that database only, as on mongod.
func (r *request) checkPrivilegeScope(ps []auth.Privilege) error {
	if r.db == "admin" {
		return nil
	}
	for _, p := range ps {
		if p.Resource.Cluster || p.Resource.DB != r.db {
			return mongoerr.New(mongoerr.BadValue, "Roles on the '%s' database cannot be granted privileges that target other databases or the cluster", r.db)
		}
	}
	return nil
}

// roleAndArgs reads a role command's role and its privileges and roles.
func (r *request) roleAndArgs() (auth.RoleRef, *[]auth.Privilege, *[]auth.RoleRef, error) {
	ref, err := r.roleRef()
	if err != nil {
		return ref, nil, nil, err
	}
	privs, roles, err := r.roleArgs()
	return ref, privs, roles, err
}

func (r *request) roleRef() (auth.RoleRef, error) {
	name, ok := r.cmd.Index(0).Value().StringValueOK()
	if !ok || name == "" {
		return auth.RoleRef{}, mongoerr.New(mongoerr.BadValue, "%s must name a role (a non-empty string)", r.name)
	}
	return auth.RoleRef{Role: name, DB: r.db}, nil
}

func cmdCreateRole(r *request) (bsoncore.Document, error) {
	ref, privs, roles, err := r.roleAndArgs()
	if err != nil {
		return nil, err
	}
	if privs == nil || roles == nil {
		return nil, mongoerr.New(mongoerr.BadValue, "\"createRole\" command requires a \"privileges\" array and a \"roles\" array")
	}
	rights := r.grantRights()
	if err := rights.roles(auth.GrantRole, *roles); err != nil {
		return nil, err
	}
	if err := rights.privileges(auth.GrantRole, *privs); err != nil {
		return nil, err
	}
	return roleReply(r.c.s.users.CreateRole(&auth.Role{DB: ref.DB, Name: ref.Role, Privileges: *privs, Roles: *roles}))
}

func cmdUpdateRole(r *request) (bsoncore.Document, error) {
	ref, privs, roles, err := r.roleAndArgs()
	if err != nil {
		return nil, err
	}
	if privs == nil && roles == nil {
		return nil, mongoerr.New(mongoerr.BadValue, "Must specify at least one field to update in updateRole")
	}
	rights := r.grantRights()
	return roleReply(r.c.s.users.UpdateRole(ref, func(role *auth.Role) error {
		if privs != nil {
			if err := rights.privilegesReplaced(role.Privileges, *privs); err != nil {
				return err
			}
			role.Privileges = *privs
		}
		if roles != nil {
			if err := rights.rolesReplaced(role.Roles, *roles); err != nil {
				return err
			}
			role.Roles = *roles
		}
		return nil
	}))
}

func cmdDropRole(r *request) (bsoncore.Document, error) {
	ref, err := r.roleRef()
	if err != nil {
		return nil, err
	}
	if err := r.parseArgs(nil); err != nil {
		return nil, err
	}
	return roleReply(r.c.s.users.DropRole(ref))
}

func cmdDropAllRolesFromDatabase(r *request) (bsoncore.Document, error) {
	if err := r.parseArgs(nil); err != nil {
		return nil, err
	}
	roles := r.c.s.users.Roles(r.db)
	for _, role := range roles {
		if err := r.c.s.users.DropRole(auth.RoleRef{Role: role.Name, DB: role.DB}); err != nil {
			return nil, err
		}
	}
	return bsoncore.NewDocumentBuilder().AppendInt32("n", int32(len(roles))).AppendDouble("ok", 1).Build(), nil
}

func cmdGrantPrivilegesToRole(r *request) (bsoncore.Document, error) {
	return r.changeRolePrivileges(true)
}

func cmdRevokePrivilegesFromRole(r *request) (bsoncore.Document, error) {
	return r.changeRolePrivileges(false)
}

// changeRolePrivileges adds actions to a role's privileges (grant) or
// takes them away, resource by resource.
func (r *request) changeRolePrivileges(grant bool) (bsoncore.Document, error) {
	ref, privs, _, err := r.roleChange("privileges")
	if err != nil {
		return nil, err
	}
	if err := r.grantRights().privileges(grantOrRevoke(grant), privs); err != nil {
		return nil, err
	}
	return roleReply(r.c.s.users.UpdateRole(ref, func(role *auth.Role) error {
		for _, p := range privs {
			role.Privileges = mergePrivilege(role.Privileges, p, grant)
		}
		return nil
	}))
}

// roleChange reads the role and the one field (privileges or roles) of
// the grant and revoke commands.
func (r *request) roleChange(field string) (auth.RoleRef, []auth.Privilege, []auth.RoleRef, error) {
	ref, privs, roles, err := r.roleAndArgs()
	if err != nil {
		return ref, nil, nil, err
	}
	if (field == "privileges") != (privs != nil) || (field == "roles") != (roles != nil) {
		return ref, nil, nil, mongoerr.New(mongoerr.BadValue, "%s takes a \"%s\" array (only)", r.name, field)
	}
	if privs != nil {
		return ref, *privs, nil, nil
	}
	return ref, nil, *roles, nil
}

// mergePrivilege adds p's actions to the privilege on the same resource,
// or removes them (a privilege left with no action goes).
func mergePrivilege(ps []auth.Privilege, p auth.Privilege, grant bool) []auth.Privilege {
	for i := range ps {
		if ps[i].Resource != p.Resource {
			continue
		}
		if grant {
			ps[i].Actions |= p.Actions
		} else {
			ps[i].Actions &^= p.Actions
		}
		if ps[i].Actions == 0 {
			return append(ps[:i], ps[i+1:]...)
		}
		return ps
	}
	if grant {
		return append(ps, p)
	}
	return ps
}

func cmdGrantRolesToRole(r *request) (bsoncore.Document, error) { return r.changeRoleRoles(true) }

func cmdRevokeRolesFromRole(r *request) (bsoncore.Document, error) { return r.changeRoleRoles(false) }

// changeRoleRoles adds inherited roles to a role, or takes them away.
func (r *request) changeRoleRoles(grant bool) (bsoncore.Document, error) {
	ref, _, roles, err := r.roleChange("roles")
	if err != nil {
		return nil, err
	}
	if err := r.grantRights().roles(grantOrRevoke(grant), roles); err != nil {
		return nil, err
	}
	return roleReply(r.c.s.users.UpdateRole(ref, func(role *auth.Role) error {
		for _, add := range roles {
			role.Roles = without(role.Roles, add)
			if grant {
				role.Roles = append(role.Roles, add)
			}
		}
		return nil
	}))
}

// roleReply is ok, or the role error as mongod answers it.
func roleReply(err error) (bsoncore.Document, error) {
	switch {
	case err == nil:
		return okReply(), nil
	case errors.Is(err, auth.ErrRoleExists):
		return nil, mongoerr.New(mongoerr.Location51002, "%s", trimSentinel(err, auth.ErrRoleExists))
	case errors.Is(err, auth.ErrRoleNotFound):
		return nil, mongoerr.New(mongoerr.RoleNotFound, "%s", trimSentinel(err, auth.ErrRoleNotFound))
	case errors.Is(err, auth.ErrRoleCycle):
		return nil, mongoerr.New(mongoerr.InvalidRoleModification, "%s", trimSentinel(err, auth.ErrRoleCycle))
	}
	return nil, err
}
