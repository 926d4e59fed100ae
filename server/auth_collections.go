package server

import (
	"crypto/sha256"
	"strings"

	"github.com/dumbodb/dumbodb/auth"
	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/storage"
	"github.com/dumbodb/dumbodb/value"

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

// authCollectionHandler routes a read of an authorization collection
// (ok false: the request is no such read).
func (r *request) authCollectionHandler() (func(*request) (bsoncore.Document, error), bool) {
	if r.db != "admin" || r.rev != "" || r.txn != nil {
		return nil, false
	}
	coll, ok := r.cmd.Index(0).Value().StringValueOK()
	if !ok || !isAuthCollection(coll) {
		return nil, false
	}
	if err := r.requireAuthCollection(coll); err != nil {
		return func(*request) (bsoncore.Document, error) { return nil, err }, true
	}
	switch r.name {
	case "find":
		return func(r *request) (bsoncore.Document, error) { return r.authFind(coll) }, true
	case "count":
		return func(r *request) (bsoncore.Document, error) { return r.authCount(coll) }, true
	case "aggregate":
		return func(r *request) (bsoncore.Document, error) { return r.authAggregate(coll) }, true
	case "listIndexes":
		return func(r *request) (bsoncore.Document, error) { return r.authListIndexes(coll) }, true
	}
	return nil, false
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

// authPipeline runs pipeline over coll's documents, as an aggregate of
// admin whose first stage is $documents, answering for the command
// itself (a getMore goes on with the cursor it made).
func (r *request) authPipeline(coll string, stages []bsoncore.Document, cursor bsoncore.Document) (bsoncore.Document, error) {
	docs := bsoncore.NewArrayBuilder()
	for _, d := range r.authDocuments(coll) {
		docs.AppendDocument(d)
	}
	pipeline := bsoncore.NewArrayBuilder().AppendDocument(bsoncore.NewDocumentBuilder().AppendArray("$documents", docs.Build()).Build())
	for _, st := range stages {
		pipeline.AppendDocument(st)
	}
	if cursor == nil {
		cursor = bsoncore.NewDocumentBuilder().Build()
	}
	cmd := bsoncore.NewDocumentBuilder().AppendInt32("aggregate", 1).AppendArray("pipeline", pipeline.Build()).
		AppendDocument("cursor", cursor).Build()
	sub := &request{c: r.c, ctx: r.ctx, cmd: cmd, name: "aggregate", db: "admin", spec: commandsByName["aggregate"], session: r.session}
	reply, err := cmdAggregate(sub)
	if err != nil {
		return nil, err
	}
	return r.renameCursor(reply, "admin."+coll), nil
}

// renameCursor gives a cursor reply, and the cursor it opened, the
// namespace ns, so that its getMores name the collection read.
func (r *request) renameCursor(reply bsoncore.Document, ns string) bsoncore.Document {
	cur, ok := reply.Lookup("cursor").DocumentOK()
	if !ok {
		return reply
	}
	if id, ok := cur.Lookup("id").Int64OK(); ok && id != 0 {
		if c := r.c.s.cursors.get(id); c != nil {
			c.ns = ns
		}
	}
	rewrite := func(d bsoncore.Document, fn func(b *bsoncore.DocumentBuilder, el bsoncore.Element)) bsoncore.Document {
		b := bsoncore.NewDocumentBuilder()
		els, _ := d.Elements()
		for _, el := range els {
			fn(b, el)
		}
		return b.Build()
	}
	cur = rewrite(cur, func(b *bsoncore.DocumentBuilder, el bsoncore.Element) {
		if el.Key() == "ns" {
			b.AppendString("ns", ns)
		} else {
			b.AppendValue(el.Key(), el.Value())
		}
	})
	return rewrite(reply, func(b *bsoncore.DocumentBuilder, el bsoncore.Element) {
		if el.Key() == "cursor" {
			b.AppendDocument("cursor", cur)
		} else {
			b.AppendValue(el.Key(), el.Value())
		}
	})
}

// authFind is find on an authorization collection: its filter, sort,
// skip, limit, projection and batchSize; a hint of $natural, as
// mongodump sends, reads them in their order.
func (r *request) authFind(coll string) (bsoncore.Document, error) {
	var stages []bsoncore.Document
	stage := func(name string, v bsoncore.Value) {
		stages = append(stages, bsoncore.NewDocumentBuilder().AppendValue(name, v).Build())
	}
	cursor := bsoncore.NewDocumentBuilder()
	var refused string
	err := value.EachField(r.cmd, func(k string, v bsoncore.Value) error {
		switch k {
		case "find", "hint", "$db", "lsid", "$clusterTime", "$readPreference", "readConcern", "maxTimeMS", "comment", "noCursorTimeout", "singleBatch", "txnNumber", "apiVersion", "apiStrict", "apiDeprecationErrors":
		case "filter":
			stage("$match", v)
		case "sort":
			stage("$sort", v)
		case "skip":
			stage("$skip", v)
		case "limit":
			if n, ok := value.WholeInt64(v); ok && n != 0 {
				stage("$limit", value.Count(max(n, -n)))
			}
		case "projection":
			if d, ok := v.DocumentOK(); ok && len(d) > 5 {
				stage("$project", v)
			}
		case "batchSize":
			cursor.AppendValue("batchSize", v)
		default:
			refused = k
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if refused != "" {
		return nil, mongoerr.New(mongoerr.NotImplemented, "find on admin.%s with '%s' is not supported by DumboDB", coll, refused)
	}
	return r.authPipeline(coll, stages, cursor.Build())
}

// authCount is count on an authorization collection.
func (r *request) authCount(coll string) (bsoncore.Document, error) {
	var stages []bsoncore.Document
	for _, f := range []struct{ arg, stage string }{{"query", "$match"}, {"skip", "$skip"}, {"limit", "$limit"}} {
		if v := r.cmd.Lookup(f.arg); v.Type != 0 && v.Type != bsoncore.TypeNull {
			if n, ok := value.WholeInt64(v); ok && f.arg == "limit" {
				if n == 0 {
					continue
				}
				v = value.Count(max(n, -n))
			}
			stages = append(stages, bsoncore.NewDocumentBuilder().AppendValue(f.stage, v).Build())
		}
	}
	stages = append(stages, bsoncore.NewDocumentBuilder().AppendString("$count", "n").Build())
	reply, err := r.authPipeline(coll, stages, nil)
	if err != nil {
		return nil, err
	}
	n := int32(0)
	if batch, ok := reply.Lookup("cursor", "firstBatch").ArrayOK(); ok {
		if first, err := batch.IndexErr(0); err == nil {
			n = first.Document().Lookup("n").Int32()
		}
	}
	return bsoncore.NewDocumentBuilder().AppendInt32("n", n).AppendDouble("ok", 1).Build(), nil
}

// authAggregate is aggregate on an authorization collection: its
// pipeline after the collection's documents.
func (r *request) authAggregate(coll string) (bsoncore.Document, error) {
	arr, ok := r.cmd.Lookup("pipeline").ArrayOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "'pipeline' option must be specified as an array")
	}
	vals, _ := arr.Values()
	stages := make([]bsoncore.Document, 0, len(vals))
	for _, v := range vals {
		d, ok := v.DocumentOK()
		if !ok {
			return nil, mongoerr.New(mongoerr.TypeMismatch, "Each element of the 'pipeline' array must be an object")
		}
		if first, err := d.IndexErr(0); err == nil && (first.Key() == "$out" || first.Key() == "$merge") {
			return nil, mongoerr.New(mongoerr.NotImplemented, "%s from admin.%s is not supported by DumboDB", first.Key(), coll)
		}
		stages = append(stages, d)
	}
	cursor, _ := r.cmd.Lookup("cursor").DocumentOK()
	return r.authPipeline(coll, stages, cursor)
}

// authListIndexes lists an authorization collection's indexes as mongod
// has them: _id, and a unique one on the name and database.
func (r *request) authListIndexes(coll string) (bsoncore.Document, error) {
	specs := []bsoncore.Document{idIndexSpec()}
	if field := strings.TrimSuffix(strings.TrimPrefix(coll, "system."), "s"); field == "user" || field == "role" {
		key := bsoncore.NewDocumentBuilder().AppendInt32(field, 1).AppendInt32("db", 1).Build()
		specs = append(specs, bsoncore.NewDocumentBuilder().AppendInt32("v", 2).AppendDocument("key", key).
			AppendString("name", field+"_1_db_1").AppendBoolean("unique", true).Build())
	}
	return r.startCursor("admin."+coll, &sliceSource{docs: specs}, batchSizeAbsent, false, false)
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
