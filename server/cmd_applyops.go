package server

import (
	"strings"

	"github.com/dumbodb/dumbodb/auth"
	"github.com/dumbodb/dumbodb/mongoerr"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// cmdApplyOps applies oplog entries, as mongorestore --preserveUUID
// sends them: DumboDB has no oplog, and applies only the entry that
// creates a collection ({op: "c", ns: "<db>.$cmd", o: {create, ...},
// ui?}), keeping its UUID; any other entry is refused before anything
// is applied.
func cmdApplyOps(r *request) (bsoncore.Document, error) {
	var ops bsoncore.Array
	var bypass bool
	err := r.parseArgs(map[string]fieldHandler{
		"bypassDocumentValidation": r.boolArg("bypassDocumentValidation", &bypass), // creates validate nothing
	})
	if err != nil {
		return nil, err
	}
	if v := r.cmd.Index(0).Value(); v.Type != bsoncore.TypeArray {
		return nil, typeMismatch("applyOps", "applyOps", v, "array")
	} else {
		ops = v.Array()
	}
	vals, _ := ops.Values()
	subs := make([]*request, 0, len(vals))
	for i, v := range vals {
		sub, err := r.applyOpsCreate(i, v)
		if err != nil {
			return nil, err
		}
		subs = append(subs, sub)
	}
	results := bsoncore.NewArrayBuilder()
	for _, sub := range subs {
		if _, err := cmdCreate(sub); err != nil {
			return nil, err
		}
		results.AppendBoolean(true)
	}
	return bsoncore.NewDocumentBuilder().AppendInt32("applied", int32(len(subs))).
		AppendArray("results", results.Build()).AppendDouble("ok", 1).Build(), nil
}

// applyOpsCreate checks entry i of applyOps and returns the create it
// runs, on the entry's database, with the user's right to create there
// and to write the branch it creates on checked.
func (r *request) applyOpsCreate(i int, v bsoncore.Value) (*request, error) {
	entry, ok := v.DocumentOK()
	if !ok {
		return nil, typeMismatch("applyOps", "applyOps."+itoa(int64(i)), v, "object")
	}
	op, _ := entry.Lookup("op").StringValueOK()
	ns, _ := entry.Lookup("ns").StringValueOK()
	o, hasO := entry.Lookup("o").DocumentOK()
	db, rest, _ := strings.Cut(ns, ".")
	first, err := o.IndexErr(0)
	if op != "c" || rest != "$cmd" || !hasO || err != nil || first.Key() != "create" {
		return nil, mongoerr.New(mongoerr.NotImplemented, "applyOps entry %d: DumboDB applies only the entry that creates a collection ({op: \"c\", ns: \"<db>.$cmd\", o: {create: ...}}), not op %q on %q", i, op, ns)
	}
	if err := r.require(auth.CreateCollection, db); err != nil {
		return nil, err
	}
	if err := r.checkRevisionWrite(r.c.currentAuth(), db, ""); err != nil { // the branch the create writes
		return nil, err
	}
	sub := &request{c: r.c, ctx: r.ctx, cmd: o, name: "create", db: db, spec: commandsByName["create"], session: r.session}
	if ui := entry.Lookup("ui"); ui.Type != 0 {
		subtype, data, ok := ui.BinaryOK()
		if !ok || subtype != 4 || len(data) != 16 {
			return nil, mongoerr.New(mongoerr.InvalidUUID, "applyOps entry %d: ui must be a UUID (binData of subtype 4)", i)
		}
		if o.Lookup("viewOn").Type != 0 || o.Lookup("timeseries").Type != 0 {
			return nil, mongoerr.New(mongoerr.NotImplemented, "applyOps entry %d: a view or a time-series collection made with a given UUID is not supported by DumboDB", i)
		}
		var uuid [16]byte
		copy(uuid[:], data)
		sub.createUUID = &uuid
	}
	return sub, nil
}
