package server

import (
	"cmp"

	"github.com/dumbodb/dumbodb/auth"
	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/storage"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// cmdDumboUndrop is {dumboUndrop: 1} (the list), {dumboUndrop: 1, name,
// toDatabase?} (a restore) or {dumboUndrop: 1, name, purge: true}, on
// admin (docs/format/undrop.md); with collection, the same for a dropped
// collection of database name (toCollection renames the copy). A restore
// or purge needs dropDatabase on the name, and a restore on toDatabase
// too.
func cmdDumboUndrop(r *request) (bsoncore.Document, error) {
	var name, to, collection, toColl string
	var purge bool
	err := r.parseArgs(map[string]fieldHandler{
		"name":         r.stringArg("name", &name),
		"toDatabase":   r.stringArg("toDatabase", &to),
		"collection":   r.stringArg("collection", &collection),
		"toCollection": r.stringArg("toCollection", &toColl),
		"purge":        r.boolArg("purge", &purge),
	})
	switch {
	case err != nil:
		return nil, err
	case name == "" && (collection != "" || to != "" || toColl != "" || purge):
		return nil, mongoerr.New(mongoerr.BadValue, "dumboUndrop: name the database (name) to restore or purge")
	case name == "":
		return droppedList(r)
	case toColl != "" && collection == "":
		return nil, mongoerr.New(mongoerr.BadValue, "dumboUndrop: toCollection goes with collection")
	}
	for _, db := range []string{name, to} {
		if db == "" {
			continue
		}
		if err := validateDBName(db); err != nil {
			return nil, err
		}
		if err := r.require(auth.DropDatabase, db); err != nil {
			return nil, err
		}
	}
	if to != "" {
		if err := validateCreatableDB(to, cmp.Or(toColl, collection)); err != nil {
			return nil, err
		}
	}
	if err := r.refuseOnReplica(auth.DropDatabase); err != nil {
		return nil, err
	}
	if collection != "" {
		return undropCollection(r, name, collection, to, toColl, purge)
	}
	if purge {
		n, err := r.c.s.engine.PurgeDropped(name)
		if err != nil {
			return nil, err
		}
		return bsoncore.NewDocumentBuilder().AppendString("purged", name).AppendInt32("drops", int32(n)).
			AppendDouble("ok", 1).Build(), nil
	}
	dd, err := r.c.s.engine.Undrop(name, to)
	if err != nil {
		return nil, err
	}
	if to == "" {
		to = name
	}
	return bsoncore.NewDocumentBuilder().AppendString("restored", name).AppendString("database", to).
		AppendDateTime("droppedAt", dd.DroppedAt.UnixMilli()).AppendDouble("ok", 1).Build(), nil
}

// droppedList lists the dropped databases, then the dropped collections
// of every database (which opens each).
func droppedList(r *request) (bsoncore.Document, error) {
	e := r.c.s.engine
	dropped, err := e.DroppedDatabases()
	if err != nil {
		return nil, err
	}
	arr := bsoncore.NewArrayBuilder()
	for _, dd := range dropped {
		arr.AppendDocument(bsoncore.NewDocumentBuilder().AppendString("name", dd.Name).
			AppendDateTime("droppedAt", dd.DroppedAt.UnixMilli()).AppendString("droppedBy", dd.By).
			AppendInt64("sizeOnDisk", dd.Bytes).Build())
	}
	names, err := e.DatabaseNames()
	if err != nil {
		return nil, err
	}
	for _, name := range names {
		d, err := e.Database(r.ctx, name, false)
		if err != nil || d == nil {
			continue // one that cannot open is listed by listDatabases' errors, not here
		}
		colls, err := d.DroppedCollections(r.ctx)
		if err != nil {
			return nil, err
		}
		for _, dc := range colls {
			arr.AppendDocument(bsoncore.NewDocumentBuilder().AppendString("name", dc.DB).
				AppendString("collection", dc.Name).AppendString("branch", dc.Branch).
				AppendDateTime("droppedAt", dc.DroppedAt.UnixMilli()).AppendString("droppedBy", dc.By).
				AppendInt64("documents", dc.Documents).Build())
		}
	}
	return bsoncore.NewDocumentBuilder().AppendArray("dropped", arr.Build()).AppendDouble("ok", 1).Build(), nil
}

// undropCollection restores or purges the newest kept drop of
// collection coll of database db.
func undropCollection(r *request, db, coll, toDB, toColl string, purge bool) (bsoncore.Document, error) {
	e := r.c.s.engine
	d, err := e.Database(r.ctx, db, false)
	if err != nil {
		return nil, err
	}
	if d == nil {
		return nil, mongoerr.New(mongoerr.NamespaceNotFound, "database %s does not exist: undrop it first", db)
	}
	if purge {
		n, err := d.PurgeDroppedCollection(r.ctx, coll)
		if err != nil {
			return nil, err
		}
		return bsoncore.NewDocumentBuilder().AppendString("purged", db+"."+coll).AppendInt32("drops", int32(n)).
			AppendDouble("ok", 1).Build(), nil
	}
	var target *storage.Database
	if toDB != "" && toDB != db {
		if target, err = e.Database(r.ctx, toDB, true); err != nil {
			return nil, err
		}
	}
	into := cmp.Or(toDB, db)
	dc, err := d.UndropCollection(r.ctx, coll, target, toColl, func(branch string) error {
		return r.checkBranchWrite(r.c.currentAuth(), into, branch)
	})
	if err != nil {
		return nil, err
	}
	return bsoncore.NewDocumentBuilder().AppendString("restored", db+"."+coll).
		AppendString("namespace", cmp.Or(toDB, db)+"."+cmp.Or(toColl, coll)).
		AppendDateTime("droppedAt", dc.DroppedAt.UnixMilli()).AppendInt64("documents", dc.Documents).
		AppendDouble("ok", 1).Build(), nil
}

// keepDropped keeps a collection that drop is about to remove, for
// dumboUndrop; not inside a transaction, whose drop is undone with it.
func (r *request) keepDropped(coll string) error {
	if r.txn != nil {
		return nil
	}
	d, err := r.database(false)
	if err != nil || d == nil {
		return err
	}
	rev, err := r.revision(d)
	if err != nil || rev.ReadOnly() {
		return err
	}
	return d.KeepDroppedCollection(r.ctx, rev.Branch, coll, r.loggedInUser())
}
