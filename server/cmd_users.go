package server

import (
	"errors"
	"slices"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/auth"
	"github.com/dumbodb/dumbodb/mongoerr"
)

// The user commands (docs/design/auth.md): users belong to the database
// the command runs on and live in the server's users file, outside every
// database's versioned data.

// userArgs are createUser's and updateUser's fields.
type userArgs struct {
	pwd        *string
	roles      *[]auth.RoleRef
	customData bsoncore.Document
	mechanisms []string
}

// parseUserArgs reads the fields of createUser or updateUser.
func (r *request) parseUserArgs() (userArgs, error) {
	var a userArgs
	var rolesArr, mechs bsoncore.Array
	err := r.parseArgs(map[string]fieldHandler{
		"pwd": func(v bsoncore.Value) error {
			s, ok := v.StringValueOK()
			if !ok {
				return typeMismatch(r.name, "pwd", v, "string")
			}
			a.pwd = &s
			return nil
		},
		"roles":      r.arrayArg("roles", &rolesArr),
		"customData": r.docArg("customData", &a.customData),
		"mechanisms": r.arrayArg("mechanisms", &mechs),
		"authenticationRestrictions": func(bsoncore.Value) error {
			return mongoerr.New(mongoerr.NotImplemented, "authenticationRestrictions is not implemented")
		},
		"digestPassword": func(v bsoncore.Value) error {
			if b, ok := asBool(v); ok && !b {
				return mongoerr.New(mongoerr.BadValue, "Use of SCRAM-SHA-256 requires undigested passwords")
			}
			return nil
		},
	})
	if err != nil {
		return a, err
	}
	if rolesArr != nil {
		roles, err := r.roleList(rolesArr)
		if err != nil {
			return a, err
		}
		a.roles = &roles
	}
	if mechs != nil {
		if a.mechanisms, err = r.mechanismList(mechs); err != nil {
			return a, err
		}
	}
	return a, nil
}

// mechanismList reads createUser's or updateUser's mechanisms: names, at
// least one, each a SCRAM mechanism (mongod names the first it does not
// know).
func (r *request) mechanismList(mechs bsoncore.Array) ([]string, error) {
	vals, _ := mechs.Values()
	if len(vals) == 0 {
		return nil, mongoerr.New(mongoerr.BadValue, "mechanisms field must not be empty")
	}
	out := make([]string, 0, len(vals))
	for i, v := range vals {
		m, ok := v.StringValueOK()
		if !ok {
			return nil, typeMismatch(r.name, "mechanisms."+itoa(int64(i)), v, "string")
		}
		if m != auth.MechSHA1 && m != auth.MechSHA256 {
			return nil, mongoerr.New(mongoerr.BadValue, "Unknown auth mechanism '%s'", m)
		}
		out = append(out, m)
	}
	return out, nil
}

// roleList reads roles given as names (of the command's database) or as
// {role, db}, each of which must exist.
func (r *request) roleList(arr bsoncore.Array) ([]auth.RoleRef, error) {
	vals, _ := arr.Values()
	out := make([]auth.RoleRef, 0, len(vals))
	for _, v := range vals {
		ref := auth.RoleRef{DB: r.db}
		if s, ok := v.StringValueOK(); ok {
			ref.Role = s
		} else if d, ok := v.DocumentOK(); ok {
			ref.Role, _ = d.Lookup("role").StringValueOK()
			ref.DB, _ = d.Lookup("db").StringValueOK()
		}
		if ref.Role == "" || ref.DB == "" {
			return nil, mongoerr.New(mongoerr.BadValue, "role names must be strings or {role: <name>, db: <db>} documents")
		}
		if err := r.c.s.users.CheckRoleRef(ref); err != nil {
			return nil, mongoerr.New(mongoerr.RoleNotFound, "Could not find role: %s", ref)
		}
		out = append(out, ref)
	}
	return out, nil
}

// credentials derives the user's keys for each mechanism (both when none
// is named).
func credentials(user, pwd string, mechs []string) (map[string]auth.Credential, error) {
	if len(mechs) == 0 {
		mechs = auth.Mechanisms
	}
	if pwd == "" && slices.Contains(mechs, auth.MechSHA256) {
		// mongod SASLprep's a SCRAM-SHA-256 password with ICU, which
		// refuses an empty string with this warning.
		return nil, mongoerr.New(mongoerr.Location50687, "Error preflighting UTF-8 conversion: U_STRING_NOT_TERMINATED_WARNING")
	}
	if pwd == "" {
		return nil, mongoerr.New(mongoerr.BadValue, "Password cannot be empty")
	}
	if slices.Contains(mechs, auth.MechSHA256) {
		// The same ICU preparation refuses a NUL or another character
		// SASLprep prohibits, before any mechanism's keys are made.
		if name := auth.PasswordPrepError(pwd); name != "" {
			return nil, mongoerr.New(mongoerr.Location50692, "Error preflighting normalization: %s", name)
		}
	}
	out := map[string]auth.Credential{}
	for _, m := range mechs {
		c, err := auth.NewCredential(m, user, pwd)
		if err != nil {
			return nil, mongoerr.New(mongoerr.BadValue, "%v", err)
		}
		out[m] = c
	}
	return out, nil
}

// newUserCredentials are a new user's keys: from its password, or none for
// a $external user (x.509), which may not have one.
func (r *request) newUserCredentials(name string, a userArgs) (map[string]auth.Credential, error) {
	switch {
	case r.db == externalDB && (a.pwd != nil || a.mechanisms != nil):
		return nil, mongoerr.New(mongoerr.BadValue, "Cannot set a password or mechanisms for users in $external: they authenticate with x.509")
	case r.db == externalDB:
		return map[string]auth.Credential{}, nil
	case a.pwd == nil:
		return nil, mongoerr.New(mongoerr.BadValue, "Must provide a 'pwd' field for all user documents, except those with '$external' as the user's source db")
	}
	return credentials(name, *a.pwd, a.mechanisms)
}

// userAndArgs reads createUser's and updateUser's user and fields.
func (r *request) userAndArgs() (string, userArgs, error) {
	name, err := r.userName()
	if err != nil {
		return "", userArgs{}, err
	}
	a, err := r.parseUserArgs()
	return name, a, err
}

// userName is the command's first field: the user it acts on, a string
// (an empty one names no user there is: createUser refuses it).
func (r *request) userName() (string, error) {
	v := r.cmd.Index(0).Value()
	name, ok := v.StringValueOK()
	if !ok {
		return "", typeMismatch(r.name, r.name, v, "string")
	}
	return name, nil
}

func cmdCreateUser(r *request) (bsoncore.Document, error) {
	name, a, err := r.userAndArgs()
	if err != nil {
		return nil, err
	}
	if a.roles == nil {
		return nil, mongoerr.New(mongoerr.Location40414, "BSON field 'createUser.roles' is missing but a required field")
	}
	if name == "" {
		return nil, mongoerr.New(mongoerr.BadValue, "User document needs 'user' field to be non-empty")
	}
	if err := r.grantRights().roles(auth.GrantRole, *a.roles); err != nil {
		return nil, err
	}
	creds, err := r.newUserCredentials(name, a)
	if err != nil {
		return nil, err
	}
	u := &auth.User{DB: r.db, Name: name, Creds: creds, Roles: *a.roles, CustomData: a.customData}
	return userReply(r.c.s.users.Create(u))
}

func cmdUpdateUser(r *request) (bsoncore.Document, error) {
	name, a, err := r.userAndArgs()
	if err != nil {
		return nil, err
	}
	if a.pwd == nil && a.roles == nil && a.customData == nil {
		return nil, mongoerr.New(mongoerr.BadValue, "Must specify at least one field to update in updateUser")
	}
	rights := r.grantRights()
	return userReply(r.c.s.users.Update(r.db, name, func(u *auth.User) error {
		if err := rights.userUpdate(u, a); err != nil {
			return err
		}
		if a.pwd != nil {
			creds, err := credentials(name, *a.pwd, a.mechanisms)
			if err != nil {
				return err
			}
			u.Creds = creds
		}
		if a.roles != nil {
			u.Roles = *a.roles
		}
		if a.customData != nil {
			u.CustomData = a.customData
		}
		return nil
	}))
}

func cmdDropUser(r *request) (bsoncore.Document, error) {
	name, err := r.userName()
	if err != nil {
		return nil, err
	}
	if err := r.parseArgs(nil); err != nil {
		return nil, err
	}
	return userReply(r.c.s.users.Drop(r.db, name))
}

func cmdDropAllUsersFromDatabase(r *request) (bsoncore.Document, error) {
	if err := r.parseArgs(nil); err != nil {
		return nil, err
	}
	n, err := r.c.s.users.DropAll(r.db)
	if err != nil {
		return nil, err
	}
	return bsoncore.NewDocumentBuilder().AppendInt32("n", int32(n)).AppendDouble("ok", 1).Build(), nil
}

func cmdGrantRolesToUser(r *request) (bsoncore.Document, error) { return r.changeRoles(true) }

func cmdRevokeRolesFromUser(r *request) (bsoncore.Document, error) { return r.changeRoles(false) }

// changeRoles adds roles to a user (grant) or takes them away.
func (r *request) changeRoles(grant bool) (bsoncore.Document, error) {
	name, err := r.userName()
	if err != nil {
		return nil, err
	}
	var arr bsoncore.Array
	if err := r.parseArgs(map[string]fieldHandler{"roles": r.arrayArg("roles", &arr)}); err != nil {
		return nil, err
	}
	roles, err := r.roleList(arr)
	if err != nil {
		return nil, err
	}
	if err := r.grantRights().roles(grantOrRevoke(grant), roles); err != nil {
		return nil, err
	}
	return userReply(r.c.s.users.Update(r.db, name, func(u *auth.User) error {
		for _, ref := range roles {
			u.Roles = without(u.Roles, ref)
			if grant {
				u.Roles = append(u.Roles, ref)
			}
		}
		return nil
	}))
}

func without(roles []auth.RoleRef, ref auth.RoleRef) []auth.RoleRef {
	out := roles[:0]
	for _, r := range roles {
		if r != ref {
			out = append(out, r)
		}
	}
	return out
}

// userReply is ok, or the user error as mongod answers it.
func userReply(err error) (bsoncore.Document, error) {
	switch {
	case err == nil:
		return okReply(), nil
	case errors.Is(err, auth.ErrUserExists):
		return nil, mongoerr.New(mongoerr.Location51003, "%s", trimSentinel(err, auth.ErrUserExists))
	case errors.Is(err, auth.ErrUserNotFound):
		return nil, mongoerr.New(mongoerr.UserNotFound, "%s", trimSentinel(err, auth.ErrUserNotFound))
	}
	return nil, err
}

// trimSentinel is an error's message without its sentinel's prefix.
func trimSentinel(err, sentinel error) string {
	msg := err.Error()
	if p := sentinel.Error() + ": "; len(msg) > len(p) && msg[:len(p)] == p {
		return msg[len(p):]
	}
	return msg
}

// CreateInitialUser makes name a root user of admin when no user exists
// (the container's first user, from its environment); it reports whether
// it did.
func (s *Server) CreateInitialUser(name, pwd string) (bool, error) {
	if s.users.HasUsers() {
		return false, nil
	}
	creds, err := credentials(name, pwd, nil)
	if err != nil {
		return false, err
	}
	u := &auth.User{DB: "admin", Name: name, Creds: creds, Roles: []auth.RoleRef{{Role: "root", DB: "admin"}}}
	return true, s.users.Create(u)
}
