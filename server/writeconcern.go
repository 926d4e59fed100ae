package server

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/storage"
	"github.com/dumbodb/dumbodb/value"
)

// dataBearingMembers is how many members the replica set DumboDB presents
// has: itself. A write concern asking for more is never satisfied.
const dataBearingMembers = 1

// writeConcernCommands are the commands that take a write concern, by
// canonical name, as mongod's supportsWriteConcern lists them (aggregate
// and mapReduce when they write: writesOutput). Only they answer a write
// concern the deployment cannot satisfy.
var writeConcernCommands = map[string]bool{
	"insert": true, "update": true, "delete": true, "findAndModify": true, "bulkWrite": true,
	"create": true, "drop": true, "dropDatabase": true, "createIndexes": true, "dropIndexes": true,
	"deleteIndexes": true, "collMod": true, "renameCollection": true, "convertToCapped": true,
	"cloneCollectionAsCapped": true, "applyOps": true, "commitTransaction": true, "abortTransaction": true,
	"createUser": true, "updateUser": true, "dropUser": true, "dropAllUsersFromDatabase": true,
	"grantRolesToUser": true, "revokeRolesFromUser": true, "createRole": true, "updateRole": true,
	"dropRole": true, "dropAllRolesFromDatabase": true, "grantPrivilegesToRole": true,
	"revokePrivilegesFromRole": true, "grantRolesToRole": true, "revokeRolesFromRole": true,
	"setDefaultRWConcern": true,
}

// applyWriteConcern lets writes return before their log record is synced
// when the client asked for no acknowledgement (w: 0) or no journal
// (j: false), as mongod does; every other write waits for the sync. A
// command without a writeConcern runs with the default one
// (setDefaultRWConcern).
func (r *request) applyWriteConcern() error {
	v, err := r.argErr("writeConcern")
	if err != nil {
		if wc := r.c.s.currentRWDefaults().writeConcern(); wc != nil {
			if j, ok := asBool(wc.Lookup("j")); ok && !j {
				r.ctx = storage.NoSync(r.ctx)
			}
		}
		return nil
	}
	wc, ok := v.DocumentOK()
	if !ok {
		return typeMismatch(r.name, "writeConcern", v, "object")
	}
	w, hasW := value.AsInt64(wc.Lookup("w"))
	j, hasJ := asBool(wc.Lookup("j"))
	if (hasW && w < 0) || (hasW && w == 0 && hasJ && j) {
		return mongoerr.New(mongoerr.FailedToParse, "Invalid write concern: w: %d, j: %t", w, j)
	}
	if (hasW && w == 0) || (hasJ && !j) {
		r.ctx = storage.NoSync(r.ctx)
	}
	return r.checkSatisfiable(wc)
}

// checkSatisfiable compares a write concern's w with the deployment, as
// mongod does: a standalone refuses more than one member or a tag before
// writing; a replica set writes, then reports the write concern it
// could not satisfy in writeConcernError (the write stays applied).
func (r *request) checkSatisfiable(wc bsoncore.Document) error {
	if !r.takesWriteConcern() {
		return nil
	}
	wv := wc.Lookup("w")
	n, isNumber := value.AsInt64(wv)
	mode, isMode := wv.StringValueOK()
	var unsatisfied *mongoerr.Error
	switch {
	case isNumber && n > dataBearingMembers:
		if !r.c.s.topo.replicaSet() {
			return mongoerr.New(mongoerr.BadValue, "cannot use 'w' > 1 when a host is not replicated")
		}
		unsatisfied = mongoerr.New(mongoerr.UnsatisfiableWriteConcern, "Not enough data-bearing nodes")
	case isMode && mode != "majority":
		if !r.c.s.topo.replicaSet() {
			return mongoerr.New(mongoerr.BadValue, "cannot use non-majority 'w' mode \"%s\" when a host is not a member of a replica set", mode)
		}
		// The set has no members' tags, so no custom mode.
		unsatisfied = mongoerr.New(mongoerr.UnknownReplWriteConcern, "No write concern mode named '%s' found in replica set configuration", mode)
	default:
		return nil
	}
	r.wcError = bsoncore.NewDocumentBuilder().
		AppendInt32("code", int32(unsatisfied.Code)).
		AppendString("codeName", unsatisfied.Code.Name()).
		AppendString("errmsg", unsatisfied.Msg).
		AppendDocument("errInfo", bsoncore.NewDocumentBuilder().AppendDocument("writeConcern", usedWriteConcern(wc)).Build()).
		Build()
	return nil
}

// takesWriteConcern reports whether the command is one that waits for a
// write concern: aggregate only with $out or $merge, mapReduce only when
// it writes its output to a collection.
func (r *request) takesWriteConcern() bool {
	switch name := canonicalCommand(r.name); name {
	case "aggregate":
		arr, _ := r.cmd.Lookup("pipeline").ArrayOK()
		stages := pipelineStages(arr)
		if len(stages) == 0 {
			return false
		}
		last := value.FirstKey(stages[len(stages)-1])
		return last == "$out" || last == "$merge"
	case "mapReduce", "mapreduce":
		out, ok := r.cmd.Lookup("out").DocumentOK()
		return !ok || out.Lookup("inline").Type == 0
	default:
		return writeConcernCommands[name]
	}
}

// usedWriteConcern is the write concern as mongod reports the one it
// used in a writeConcernError's errInfo: w, j, wtimeout, and who chose it.
func usedWriteConcern(wc bsoncore.Document) bsoncore.Document {
	b := bsoncore.NewDocumentBuilder()
	switch wv := wc.Lookup("w"); {
	case wv.Type == bsoncore.TypeString || wv.Type == bsoncore.TypeEmbeddedDocument:
		b.AppendValue("w", wv)
	default:
		n, _ := value.AsInt64(wv)
		b.AppendValue("w", value.Count(n))
	}
	if j, ok := asBool(wc.Lookup("j")); ok {
		b.AppendBoolean("j", j)
	}
	timeout, _ := value.AsInt64(wc.Lookup("wtimeout"))
	return b.AppendInt32("wtimeout", int32(timeout)).AppendString("provenance", "clientSupplied").Build()
}

// failedWithWriteConcernError adds a writeConcernError to a failed
// command's error: mongod waits for the write concern whether the
// command succeeded or not, and reports both.
func failedWithWriteConcernError(err error, wcError bsoncore.Document) error {
	me := *toMongoErr(err)
	me.Info = withField(me.Info, "writeConcernError", bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: wcError})
	return &me
}

// withWriteConcernError adds a writeConcernError to a successful reply
// that has none, before ok, where mongod places it.
func withWriteConcernError(reply, wcError bsoncore.Document) bsoncore.Document {
	if _, err := reply.LookupErr("writeConcernError"); err == nil {
		return reply
	}
	els, _ := reply.Elements()
	b := bsoncore.NewDocumentBuilder()
	added := false
	for _, el := range els {
		if el.Key() == "ok" && !added {
			b.AppendDocument("writeConcernError", wcError)
			added = true
		}
		b.AppendValue(el.Key(), el.Value())
	}
	if !added {
		b.AppendDocument("writeConcernError", wcError)
	}
	return b.Build()
}
