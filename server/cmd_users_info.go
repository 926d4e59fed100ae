package server

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/auth"
	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/value"
)

// usersInfo and rolesInfo: what users and roles exist and what they grant.

func cmdUsersInfo(r *request) (bsoncore.Document, error) {
	var showCredentials, showPrivileges, showCustomData = false, false, true
	var filter bsoncore.Document
	err := r.parseArgs(map[string]fieldHandler{
		"showCredentials":                r.boolArg("showCredentials", &showCredentials),
		"showPrivileges":                 r.boolArg("showPrivileges", &showPrivileges),
		"showCustomData":                 r.boolArg("showCustomData", &showCustomData),
		"showAuthenticationRestrictions": r.ignoredArg("showAuthenticationRestrictions", "bool"),
		"filter":                         r.docArg("filter", &filter),
	})
	if err != nil {
		return nil, err
	}
	if filter != nil {
		return nil, mongoerr.New(mongoerr.NotImplemented, "usersInfo filter is not implemented")
	}
	users, err := r.usersNamed(r.cmd.Index(0).Value())
	if err != nil {
		return nil, err
	}
	arr := bsoncore.NewArrayBuilder()
	for _, u := range users {
		arr.AppendDocument(userInfo(r.c.s.users, u, showCredentials, showPrivileges, showCustomData))
	}
	return bsoncore.NewDocumentBuilder().AppendArray("users", arr.Build()).AppendDouble("ok", 1).Build(), nil
}

// usersNamed resolves usersInfo's argument: 1 (this database's users),
// {forAllDBs: true}, a name, {user, db}, or an array of names and those.
func (r *request) usersNamed(v bsoncore.Value) ([]*auth.User, error) {
	store := r.c.s.users
	if d, ok := v.DocumentOK(); ok {
		if all, _ := asBool(d.Lookup("forAllDBs")); all {
			return store.Users(""), nil
		}
	}
	if _, ok := v.AsInt64OK(); ok {
		return store.Users(r.db), nil
	}
	vals := []bsoncore.Value{v}
	if arr, ok := v.ArrayOK(); ok {
		vals, _ = arr.Values()
	}
	var out []*auth.User
	for _, v := range vals {
		db, name, err := r.userNameArg(v)
		if err != nil {
			return nil, err
		}
		if u, ok := store.User(db, name); ok {
			out = append(out, u)
		}
	}
	return out, nil
}

// userNameArg reads a user named as mongod's UserName parser reads one: a
// name (of the command's database) or {user, db}, both strings and
// nothing else.
func (r *request) userNameArg(v bsoncore.Value) (db, name string, err error) {
	if s, ok := v.StringValueOK(); ok {
		return r.db, s, nil
	}
	d, ok := v.DocumentOK()
	if !ok {
		return "", "", mongoerr.New(mongoerr.BadValue, "UserName must be either a string or an object")
	}
	els, _ := d.Elements()
	seen := map[string]string{}
	for _, el := range els {
		k := el.Key()
		if k != "user" && k != "db" {
			// mongod's message opens the quote and never closes it.
			return "", "", mongoerr.New(mongoerr.BadValue, "UserName contains an unknown field named: '%s", k)
		}
		s, ok := el.Value().StringValueOK()
		if !ok {
			return "", "", mongoerr.New(mongoerr.BadValue, "UserName must contain a string field named: %s. But, has type %s", k, value.TypeName(el.Value().Type))
		}
		seen[k] = s
	}
	for _, k := range []string{"user", "db"} {
		if _, ok := seen[k]; !ok {
			return "", "", mongoerr.New(mongoerr.BadValue, "UserName must contain a field named: %s", k)
		}
	}
	return seen["db"], seen["user"], nil
}

// userInfo is one user as usersInfo shows it.
func userInfo(store *auth.Store, u *auth.User, showCredentials, showPrivileges, showCustomData bool) bsoncore.Document {
	doc := auth.EncodeUser(u, showCredentials)
	els, _ := doc.Elements()
	b := bsoncore.NewDocumentBuilder()
	for _, el := range els {
		if el.Key() == "customData" && !showCustomData {
			continue
		}
		b.AppendValue(el.Key(), el.Value())
	}
	mechs := bsoncore.NewArrayBuilder()
	for _, m := range auth.Mechanisms {
		if _, ok := u.Creds[m]; ok {
			mechs.AppendString(m)
		}
	}
	b.AppendArray("mechanisms", mechs.Build())
	if showPrivileges {
		b.AppendArray("inheritedRoles", auth.EncodeRoles(u.Roles))
		privs, _ := store.Resolve(u.Roles)
		b.AppendArray("inheritedPrivileges", privilegesArray(privs))
	}
	return b.Build()
}

// privilegesArray is privileges as mongod lists them: {resource, actions}.
func privilegesArray(p *auth.Privileges) bsoncore.Array {
	arr := bsoncore.NewArrayBuilder()
	if p == nil {
		return arr.Build()
	}
	for _, rp := range p.Describe() {
		res := bsoncore.NewDocumentBuilder()
		if rp.Cluster {
			res.AppendBoolean("cluster", true)
		} else {
			res.AppendString("db", rp.DB).AppendString("collection", rp.Collection)
		}
		acts := bsoncore.NewArrayBuilder()
		for _, a := range rp.Actions {
			acts.AppendString(a)
		}
		arr.AppendDocument(bsoncore.NewDocumentBuilder().AppendDocument("resource", res.Build()).
			AppendArray("actions", acts.Build()).Build())
	}
	return arr.Build()
}

// cmdRolesInfo describes roles: {rolesInfo: 1} the database's
// user-defined roles (and its built-in ones with showBuiltinRoles), a
// name, {role, db}, or an array of those.
func cmdRolesInfo(r *request) (bsoncore.Document, error) {
	var showBuiltin, showPrivileges bool
	err := r.parseArgs(map[string]fieldHandler{
		"showBuiltinRoles": r.boolArg("showBuiltinRoles", &showBuiltin),
		"showPrivileges":   r.boolArg("showPrivileges", &showPrivileges),
	})
	if err != nil {
		return nil, err
	}
	refs, err := r.rolesNamed(r.cmd.Index(0).Value(), showBuiltin)
	if err != nil {
		return nil, err
	}
	out := bsoncore.NewArrayBuilder()
	for _, ref := range refs {
		out.AppendDocument(r.roleInfo(ref, showPrivileges))
	}
	return bsoncore.NewDocumentBuilder().AppendArray("roles", out.Build()).AppendDouble("ok", 1).Build(), nil
}

// rolesNamed resolves rolesInfo's argument to the roles it names.
func (r *request) rolesNamed(v bsoncore.Value, showBuiltin bool) ([]auth.RoleRef, error) {
	if _, ok := v.AsInt64OK(); !ok {
		arr, isArr := v.ArrayOK()
		if !isArr {
			arr = bsoncore.NewArrayBuilder().AppendValue(v).Build()
		}
		return r.roleList(arr)
	}
	var refs []auth.RoleRef
	if showBuiltin {
		for _, name := range auth.BuiltinRoleNames() {
			if ref := (auth.RoleRef{Role: name, DB: r.db}); auth.IsBuiltin(ref) {
				refs = append(refs, ref)
			}
		}
	}
	for _, role := range r.c.s.users.Roles(r.db) {
		refs = append(refs, auth.RoleRef{Role: role.Name, DB: role.DB})
	}
	return refs, nil
}

// roleInfo is one role as rolesInfo shows it.
func (r *request) roleInfo(ref auth.RoleRef, showPrivileges bool) bsoncore.Document {
	store := r.c.s.users
	role, custom := store.Role(ref)
	var direct []auth.RoleRef
	if custom {
		direct = role.Roles
	}
	b := bsoncore.NewDocumentBuilder().AppendString("_id", ref.DB+"."+ref.Role).AppendString("role", ref.Role).
		AppendString("db", ref.DB).AppendBoolean("isBuiltin", !custom).
		AppendArray("roles", auth.EncodeRoles(direct)).AppendArray("inheritedRoles", auth.EncodeRoles(store.InheritedRoles(direct)))
	if showPrivileges {
		own := []auth.Privilege(nil)
		if custom {
			own = role.Privileges
		}
		all, _ := store.Resolve([]auth.RoleRef{ref})
		if custom {
			b.AppendArray("privileges", auth.EncodePrivileges(own))
		} else {
			b.AppendArray("privileges", privilegesArray(all))
		}
		b.AppendArray("inheritedPrivileges", privilegesArray(all))
	}
	return b.Build()
}
