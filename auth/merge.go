package auth

import (
	"fmt"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Restoring users and roles as mongorestore does: it writes the dumped
// documents of admin.system.users and admin.system.roles into two
// collections of its own, then asks the server to merge them
// (_mergeAuthzCollections). The documents are in the shape mongod keeps
// them, which is the users file's too (EncodeUser, EncodeRole).

// DecodeUser reads a user document as admin.system.users holds it,
// credentials and userId included.
func DecodeUser(d bsoncore.Document) (*User, error) { return decodeUser(d) }

// DecodeRole reads a role document as admin.system.roles holds it.
func DecodeRole(d bsoncore.Document) (*Role, error) { return decodeRole(d) }

// Merge restores users and roles of database db ("": of every database),
// keeping their ids and credentials, in one change of the users file.
// Without drop, a user or role that exists is left as it is; with drop,
// the restored ones replace those of the same name and the others of db
// are removed. Users and roles of other databases are refused.
func (s *Store) Merge(db string, users []*User, roles []*Role, drop bool) error {
	defer s.holdWrites()()
	for _, u := range users {
		if db != "" && u.DB != db {
			return fmt.Errorf("%w: user %s@%s is not of database %s", ErrBadUserDocument, u.Name, u.DB, db)
		}
	}
	for _, r := range roles {
		if db != "" && r.DB != db {
			return fmt.Errorf("%w: role %s@%s is not of database %s", ErrBadUserDocument, r.Name, r.DB, db)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.commitAll(func(um map[string]*User, rm map[string]*Role) {
		if drop {
			for k, u := range um {
				if db == "" || u.DB == db {
					delete(um, k)
				}
			}
			for k, r := range rm {
				if db == "" || r.DB == db {
					delete(rm, k)
				}
			}
		}
		for _, r := range roles {
			if _, ok := rm[r.key()]; !ok {
				rm[r.key()] = r.clone()
			}
		}
		for _, u := range users {
			if _, ok := um[u.key()]; !ok {
				um[u.key()] = u.clone()
			}
		}
	})
}
