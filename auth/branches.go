package auth

import (
	"sort"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Protected branches: a rule per database branch naming the roles whose
// holders alone may write it or move it (docs/design/auth.md).

// Protection is one protected branch.
type Protection struct {
	DB, Branch string
	Roles      []RoleRef
}

func (p Protection) key() string { return p.DB + "@" + p.Branch }

// Protect sets (or replaces) the rule of a branch.
func (s *Store) Protect(p Protection) error {
	defer s.holdWrites()()
	s.mu.Lock()
	defer s.mu.Unlock()
	p.Roles = append([]RoleRef(nil), p.Roles...)
	return s.commitWith(func(f *fileState) { f.branches[p.key()] = p })
}

// Unprotect removes a branch's rule; it reports whether there was one.
func (s *Store) Unprotect(db, branch string) (bool, error) {
	defer s.holdWrites()()
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.branches[db+"@"+branch]; !ok {
		return false, nil
	}
	return true, s.commitWith(func(f *fileState) { delete(f.branches, db+"@"+branch) })
}

// Protection is a branch's rule, if it has one.
func (s *Store) Protection(db, branch string) (Protection, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	p, ok := s.branches[db+"@"+branch]
	return p, ok
}

// Protections lists a database's protected branches, sorted.
func (s *Store) Protections(db string) []Protection {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []Protection
	for _, p := range s.branches {
		if p.DB == db {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Branch < out[j].Branch })
	return out
}

// Holds reports whether a user holds one of the roles, directly or
// through the roles it inherits.
func (s *Store) Holds(u *User, roles []RoleRef) bool {
	for _, have := range s.InheritedRoles(u.Roles) {
		if hasRole(roles, have) {
			return true
		}
	}
	return false
}

// EncodeProtection is a protection as the users file and
// dumboProtectedBranches write it.
func EncodeProtection(p Protection) bsoncore.Document {
	return bsoncore.NewDocumentBuilder().AppendString("db", p.DB).AppendString("branch", p.Branch).
		AppendArray("roles", encodeRoles(p.Roles)).Build()
}

func decodeProtection(d bsoncore.Document) (Protection, error) {
	var p Protection
	p.DB, _ = d.Lookup("db").StringValueOK()
	p.Branch, _ = d.Lookup("branch").StringValueOK()
	p.Roles = decodeRoleRefs(d.Lookup("roles"))
	return p, nil
}
