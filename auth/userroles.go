package auth

import (
	"errors"
	"fmt"
	"sort"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// User-defined roles (mongod's createRole): privileges on resources and
// inherited roles, kept with the users (docs/format/auth.md).

// Resource is what a privilege applies to: a collection of a database,
// every collection of one (Collection ""), a collection name in every
// database (DB ""), every database (both ""), or the cluster.
type Resource struct {
	DB, Collection string
	Cluster        bool
}

// Privilege is actions on a resource.
type Privilege struct {
	Resource Resource
	Actions  Action
}

// Role is a user-defined role of a database.
type Role struct {
	DB, Name   string
	Privileges []Privilege
	Roles      []RoleRef
}

func (r *Role) key() string { return r.DB + "." + r.Name }

func (r *Role) clone() *Role {
	c := *r
	c.Privileges = append([]Privilege(nil), r.Privileges...)
	c.Roles = append([]RoleRef(nil), r.Roles...)
	return &c
}

// ErrRoleExists: createRole of a role the database already has.
var ErrRoleExists = errors.New("role already exists")

// Role returns a user-defined role; the caller must not change it.
func (s *Store) Role(ref RoleRef) (*Role, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	r, ok := s.roles[ref.DB+"."+ref.Role]
	return r, ok
}

// Roles lists a database's user-defined roles ("": every database's),
// sorted.
func (s *Store) Roles(db string) []*Role {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []*Role
	for _, r := range s.roles {
		if db == "" || r.DB == db {
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key() < out[j].key() })
	return out
}

// CheckRoleRef reports ErrRoleNotFound for a role neither built in nor
// defined.
func (s *Store) CheckRoleRef(ref RoleRef) error {
	if IsBuiltin(ref) {
		return nil
	}
	if _, ok := s.Role(ref); ok {
		return nil
	}
	return fmt.Errorf("%w: No role named %s", ErrRoleNotFound, ref)
}

// Resolve is the privileges a list of roles grants, user-defined ones and
// what they inherit included.
func (s *Store) Resolve(roles []RoleRef) (*Privileges, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return resolve(roles, func(ref RoleRef) (*Role, bool) {
		r, ok := s.roles[ref.DB+"."+ref.Role]
		return r, ok
	})
}

// InheritedRoles is every role refs lead to, refs included, each once.
func (s *Store) InheritedRoles(refs []RoleRef) []RoleRef {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []RoleRef
	seen := map[RoleRef]bool{}
	var walk func([]RoleRef)
	walk = func(refs []RoleRef) {
		for _, r := range refs {
			if seen[r] {
				continue
			}
			seen[r] = true
			out = append(out, r)
			if role, ok := s.roles[r.DB+"."+r.Role]; ok {
				walk(role.Roles)
			}
		}
	}
	walk(refs)
	return out
}

// CreateRole adds a role; a name of a built-in role is refused.
func (s *Store) CreateRole(r *Role) error {
	defer s.holdWrites()()
	if IsBuiltin(RoleRef{Role: r.Name, DB: r.DB}) {
		return fmt.Errorf("%w: Cannot create a role with the name of a built-in role: %s@%s", ErrRoleExists, r.Name, r.DB)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.roles[r.key()]; ok {
		return fmt.Errorf("%w: Role \"%s@%s\" already exists", ErrRoleExists, r.Name, r.DB)
	}
	r = r.clone()
	return s.commitRoles(func(m map[string]*Role) { m[r.key()] = r })
}

// UpdateRole changes a role through fn, refusing a change that would
// make it inherit itself.
func (s *Store) UpdateRole(ref RoleRef, fn func(*Role) error) error {
	defer s.holdWrites()()
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.roles[ref.DB+"."+ref.Role]
	if !ok {
		return fmt.Errorf("%w: Role %s not found", ErrRoleNotFound, ref)
	}
	r := old.clone()
	if err := fn(r); err != nil {
		return err
	}
	next := make(map[string]*Role, len(s.roles))
	for k, v := range s.roles {
		next[k] = v
	}
	next[r.key()] = r
	if inherits(next, r.Roles, ref, map[RoleRef]bool{}) {
		return fmt.Errorf("%w: role %s would inherit itself", ErrRoleCycle, ref)
	}
	return s.commitRoles(func(m map[string]*Role) { m[r.key()] = r })
}

// ErrRoleCycle: a role that would inherit itself.
var ErrRoleCycle = errors.New("role cycle")

func inherits(roles map[string]*Role, refs []RoleRef, target RoleRef, seen map[RoleRef]bool) bool {
	for _, r := range refs {
		if r == target {
			return true
		}
		if seen[r] {
			continue
		}
		seen[r] = true
		if role, ok := roles[r.DB+"."+r.Role]; ok && inherits(roles, role.Roles, target, seen) {
			return true
		}
	}
	return false
}

// DropRole removes a role, and every user's and role's grant of it.
func (s *Store) DropRole(ref RoleRef) error {
	defer s.holdWrites()()
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.roles[ref.DB+"."+ref.Role]; !ok {
		return fmt.Errorf("%w: Role %s not found", ErrRoleNotFound, ref)
	}
	return s.commitAll(func(users map[string]*User, roles map[string]*Role) {
		delete(roles, ref.DB+"."+ref.Role)
		for k, u := range users {
			if hasRole(u.Roles, ref) {
				c := u.clone()
				c.Roles = dropRef(c.Roles, ref)
				users[k] = c
			}
		}
		for k, r := range roles {
			if hasRole(r.Roles, ref) {
				c := r.clone()
				c.Roles = dropRef(c.Roles, ref)
				roles[k] = c
			}
		}
	})
}

func hasRole(refs []RoleRef, ref RoleRef) bool {
	for _, r := range refs {
		if r == ref {
			return true
		}
	}
	return false
}

func dropRef(refs []RoleRef, ref RoleRef) []RoleRef {
	out := refs[:0]
	for _, r := range refs {
		if r != ref {
			out = append(out, r)
		}
	}
	return out
}

// EncodeRole is a role as mongod keeps it in admin.system.roles.
func EncodeRole(r *Role) bsoncore.Document {
	return bsoncore.NewDocumentBuilder().AppendString("_id", r.key()).AppendString("role", r.Name).
		AppendString("db", r.DB).AppendArray("privileges", EncodePrivileges(r.Privileges)).
		AppendArray("roles", encodeRoles(r.Roles)).Build()
}

// EncodePrivileges is privileges as mongod lists them: {resource, actions}.
func EncodePrivileges(ps []Privilege) bsoncore.Array {
	arr := bsoncore.NewArrayBuilder()
	for _, p := range ps {
		res := bsoncore.NewDocumentBuilder()
		if p.Resource.Cluster {
			res.AppendBoolean("cluster", true)
		} else {
			res.AppendString("db", p.Resource.DB).AppendString("collection", p.Resource.Collection)
		}
		acts := bsoncore.NewArrayBuilder()
		for _, a := range p.Actions.Names() {
			acts.AppendString(a)
		}
		arr.AppendDocument(bsoncore.NewDocumentBuilder().AppendDocument("resource", res.Build()).
			AppendArray("actions", acts.Build()).Build())
	}
	return arr.Build()
}

// DecodePrivileges reads privileges as createRole takes them.
func DecodePrivileges(arr bsoncore.Array) ([]Privilege, error) {
	vals, _ := arr.Values()
	out := make([]Privilege, 0, len(vals))
	for _, v := range vals {
		d, ok := v.DocumentOK()
		if !ok {
			return nil, errors.New("a privilege must be a document {resource, actions}")
		}
		res, ok := d.Lookup("resource").DocumentOK()
		if !ok {
			return nil, errors.New("a privilege needs a resource document")
		}
		var p Privilege
		if c, _ := res.Lookup("cluster").BooleanOK(); c {
			p.Resource.Cluster = true
		} else {
			db, ok1 := res.Lookup("db").StringValueOK()
			coll, ok2 := res.Lookup("collection").StringValueOK()
			if !ok1 || !ok2 {
				return nil, errors.New("a resource is {cluster: true} or {db: <string>, collection: <string>}")
			}
			p.Resource.DB, p.Resource.Collection = db, coll
		}
		acts, _ := d.Lookup("actions").ArrayOK()
		names, _ := acts.Values()
		for _, n := range names {
			name, _ := n.StringValueOK()
			a, ok := ActionNamed(name)
			if !ok {
				//lint:ignore ST1005 mongod's message, which createRole's client sees
				return nil, fmt.Errorf("Unrecognized action privilege string: %s", name)
			}
			if a.IsCluster() != p.Resource.Cluster {
				return nil, fmt.Errorf("action %s does not apply to that resource", name)
			}
			p.Actions |= a
		}
		if p.Actions == 0 {
			return nil, errors.New("a privilege needs at least one action")
		}
		out = append(out, p)
	}
	return out, nil
}

func decodeRole(d bsoncore.Document) (*Role, error) {
	r := &Role{}
	r.Name, _ = d.Lookup("role").StringValueOK()
	r.DB, _ = d.Lookup("db").StringValueOK()
	if r.Name == "" || r.DB == "" {
		return nil, errors.New("a role without role or db")
	}
	privs, _ := d.Lookup("privileges").ArrayOK()
	var err error
	if r.Privileges, err = DecodePrivileges(privs); err != nil {
		return nil, fmt.Errorf("role %s@%s: %w", r.Name, r.DB, err)
	}
	r.Roles = decodeRoleRefs(d.Lookup("roles"))
	return r, nil
}

func decodeRoleRefs(v bsoncore.Value) []RoleRef {
	arr, _ := v.ArrayOK()
	vals, _ := arr.Values()
	var out []RoleRef
	for _, v := range vals {
		rd, _ := v.DocumentOK()
		role, _ := rd.Lookup("role").StringValueOK()
		db, _ := rd.Lookup("db").StringValueOK()
		out = append(out, RoleRef{Role: role, DB: db})
	}
	return out
}
