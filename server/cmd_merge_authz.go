package server

import (
	"errors"
	"io"
	"strings"

	"github.com/dumbodb/dumbodb/auth"
	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/storage"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// cmdMergeAuthzCollections is how mongorestore restores users and roles
// (auth_collections.go): {_mergeAuthzCollections: 1, tempUsersCollection,
// tempRolesCollection, db, drop}. The two collections, which mongorestore
// filled with the dumped documents of admin.system.users and
// admin.system.roles, are merged into the users file: the users and
// roles of db ("": every database), keeping their ids and credentials.
// Without drop an existing user or role stays as it is; with drop the
// restored ones replace the database's.
func cmdMergeAuthzCollections(r *request) (bsoncore.Document, error) {
	var usersNS, rolesNS, db string
	var drop bool
	err := r.parseArgs(map[string]fieldHandler{
		"tempUsersCollection": r.stringArg("tempUsersCollection", &usersNS),
		"tempRolesCollection": r.stringArg("tempRolesCollection", &rolesNS),
		"db":                  r.stringArg("db", &db),
		"drop":                r.boolArg("drop", &drop),
	})
	if err != nil {
		return nil, err
	}
	if err := r.requireMerge(db, drop); err != nil {
		return nil, err
	}
	var users []*auth.User
	var roles []*auth.Role
	err = r.eachTempDocument(usersNS, func(d bsoncore.Document) error {
		u, err := auth.DecodeUser(d)
		users = append(users, u)
		return err
	})
	if err == nil {
		err = r.eachTempDocument(rolesNS, func(d bsoncore.Document) error {
			role, err := auth.DecodeRole(d)
			roles = append(roles, role)
			return err
		})
	}
	if err != nil {
		return nil, mongoerr.New(mongoerr.BadValue, "_mergeAuthzCollections: %v", err)
	}
	if err := r.c.s.users.Merge(db, users, roles, drop); err != nil {
		if errors.Is(err, auth.ErrBadUserDocument) {
			return nil, mongoerr.New(mongoerr.BadValue, "%v", err)
		}
		return nil, err
	}
	r.c.s.log.Info().Str("c", "ACCESS").Str("db", db).Int("users", len(users)).Int("roles", len(roles)).
		Bool("drop", drop).Msg("users and roles restored")
	return okReply(), nil
}

// requireMerge checks the rights a merge into db needs: to create users
// and roles and grant roles there (every database: on admin's cluster
// scope), and to drop them with drop.
func (r *request) requireMerge(db string, drop bool) error {
	on := db
	if on == "" {
		on = "admin"
	}
	needs := []auth.Action{auth.CreateUser, auth.CreateRole, auth.GrantRole}
	if drop {
		needs = append(needs, auth.DropUser, auth.DropRole)
	}
	for _, a := range needs {
		if err := r.require(a, on); err != nil {
			return err
		}
	}
	return nil
}

// eachTempDocument calls fn with each document of the collection ns
// ("db.coll"; "" names none) on its database's main branch.
func (r *request) eachTempDocument(ns string, fn func(bsoncore.Document) error) error {
	if ns == "" {
		return nil
	}
	dbName, coll, ok := strings.Cut(ns, ".")
	if !ok {
		return mongoerr.New(mongoerr.InvalidNamespace, "_mergeAuthzCollections: invalid namespace %q", ns)
	}
	d, err := r.c.s.engine.Database(r.ctx, dbName, false)
	if err != nil || d == nil {
		return err
	}
	snap, err := d.SnapshotAt(r.ctx, storage.Revision{Branch: storage.DefaultBranch})
	if err != nil {
		return err
	}
	it, err := snap.Scan(r.ctx, coll)
	if err != nil {
		return err
	}
	for {
		doc, err := it.Next(r.ctx)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := fn(doc); err != nil {
			return err
		}
	}
}
