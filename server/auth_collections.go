package server

import (
	"crypto/sha256"
	"strings"

	"github.com/dumbodb/dumbodb/auth"
	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/storage"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// The authorization collections of admin (docs/design/auth.md,
// "Authorization collections"): system.users, system.roles and
// system.version, as mongod keeps them and as MongoDB's Database Tools
// read them. DumboDB keeps users and roles in its users file; these
// collections are built from it for each read. find, count, aggregate
// and listIndexes on them read those documents, listCollections and
// listDatabases show them, and writes to them stay refused: users and
// roles change through the user and role commands and through
// _mergeAuthzCollections, which is how mongorestore restores them.

// authSchemaVersion is the version of the users' documents' shape,
// mongod's current one (SCRAM credentials).
const authSchemaVersion = 5

var authCollections = []string{"system.roles", "system.users", "system.version"}

// authCollection is the virtual collection admin.<coll> is, when coll
// is an authorization collection the user may read (ok false: it is
// none; err: the user may not read it).
func (r *request) authCollection(coll string) (*virtualColl, bool, error) {
	if r.db != "admin" || !isAuthCollection(coll) {
		return nil, false, nil
	}
	if err := r.requireAuthCollection(coll); err != nil {
		return nil, true, err
	}
	vc := &virtualColl{ns: "admin." + coll, docs: func() []bsoncore.Document { return r.authDocuments(coll) },
		indexes: []bsoncore.Document{idIndexSpec()}}
	if field := strings.TrimSuffix(strings.TrimPrefix(coll, "system."), "s"); field == "user" || field == "role" {
		key := bsoncore.NewDocumentBuilder().AppendInt32(field, 1).AppendInt32("db", 1).Build()
		vc.indexes = append(vc.indexes, bsoncore.NewDocumentBuilder().AppendInt32("v", 2).AppendDocument("key", key).
			AppendString("name", field+"_1_db_1").AppendBoolean("unique", true).Build())
	}
	return vc, true, nil
}

// requireAuthCollection checks, beyond the command's own action, the
// right to see every user (system.users) or role (system.roles): held
// by userAdminAnyDatabase, backup and root, as on mongod, and not by a
// role that only reads databases (readAnyDatabase, read on admin).
func (r *request) requireAuthCollection(coll string) error {
	need := map[string]auth.Action{"system.users": auth.ViewUser, "system.roles": auth.ViewRole}[coll]
	if need == 0 || !r.c.s.cfg.Auth {
		return nil
	}
	if st := r.c.currentAuth(); st.user != nil && st.privs.AllowsEverywhere(need) {
		return nil
	}
	return mongoerr.New(mongoerr.Unauthorized, "not authorized on admin to execute command %s (reading admin.%s needs %v on every database)", commandSummary(r.cmd), coll, need.Names())
}

func isAuthCollection(coll string) bool {
	for _, c := range authCollections {
		if c == coll {
			return true
		}
	}
	return false
}

// authDocuments are an authorization collection's documents, as mongod
// holds them.
func (r *request) authDocuments(coll string) []bsoncore.Document {
	store := r.c.s.users
	var docs []bsoncore.Document
	switch coll {
	case "system.users":
		for _, u := range store.Users("") {
			docs = append(docs, auth.EncodeUser(u, true))
		}
	case "system.roles":
		for _, role := range store.Roles("") {
			docs = append(docs, auth.EncodeRole(role))
		}
	case "system.version":
		docs = append(docs,
			bsoncore.NewDocumentBuilder().AppendString("_id", "featureCompatibilityVersion").AppendString("version", fcvVersion).Build(),
			bsoncore.NewDocumentBuilder().AppendString("_id", "authSchema").AppendInt32("currentVersion", authSchemaVersion).Build())
	}
	return docs
}

// authCollectionEntries are listCollections' entries for admin's
// authorization collections that hold documents.
func (r *request) authCollectionEntries() []func(nameOnly bool) bsoncore.Document {
	var out []func(bool) bsoncore.Document
	for _, coll := range authCollections {
		if len(r.authDocuments(coll)) == 0 {
			continue
		}
		ci := storage.CollectionInfo{Name: coll, Options: bsoncore.NewDocumentBuilder().Build()}
		sum := sha256.Sum256([]byte("admin." + coll))
		copy(ci.UUID[:], sum[:16]) // stable: the collection is the users file's
		ci.UUID[6] = ci.UUID[6]&0x0f | 0x40
		ci.UUID[8] = ci.UUID[8]&0x3f | 0x80
		out = append(out, func(n bool) bsoncore.Document { return collectionEntry(ci, n) })
	}
	return out
}
