package server

import (
	"github.com/dumbodb/dumbodb/auth"
	"github.com/dumbodb/dumbodb/mongoerr"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// cmdDumboUndrop is {dumboUndrop: 1} (the list), {dumboUndrop: 1, name,
// toDatabase?} (a restore) or {dumboUndrop: 1, name, purge: true}, on
// admin (docs/format/undrop.md). A restore or purge needs dropDatabase
// on the name, and a restore on toDatabase too.
func cmdDumboUndrop(r *request) (bsoncore.Document, error) {
	var name, to, collection string
	var purge bool
	err := r.parseArgs(map[string]fieldHandler{
		"name":       r.stringArg("name", &name),
		"toDatabase": r.stringArg("toDatabase", &to),
		"collection": r.stringArg("collection", &collection),
		"purge":      r.boolArg("purge", &purge),
	})
	switch {
	case err != nil:
		return nil, err
	case collection != "":
		return nil, mongoerr.New(mongoerr.NotImplemented, "dumboUndrop of a dropped collection ('collection') is not supported by DumboDB yet: databases only")
	case name == "":
		return droppedList(r)
	}
	for _, db := range []string{name, to} {
		if db == "" {
			continue
		}
		if err := r.require(auth.DropDatabase, db); err != nil {
			return nil, err
		}
	}
	if err := r.refuseOnReplica(auth.DropDatabase); err != nil {
		return nil, err
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

func droppedList(r *request) (bsoncore.Document, error) {
	dropped, err := r.c.s.engine.DroppedDatabases()
	if err != nil {
		return nil, err
	}
	arr := bsoncore.NewArrayBuilder()
	for _, dd := range dropped {
		arr.AppendDocument(bsoncore.NewDocumentBuilder().AppendString("name", dd.Name).
			AppendDateTime("droppedAt", dd.DroppedAt.UnixMilli()).AppendString("droppedBy", dd.By).
			AppendInt64("sizeOnDisk", dd.Bytes).Build())
	}
	return bsoncore.NewDocumentBuilder().AppendArray("dropped", arr.Build()).AppendDouble("ok", 1).Build(), nil
}
