package server

import (
	"github.com/dumbodb/dumbodb/auth"
	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/value"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// MongoDB 8's client-level bulkWrite (on admin): ops over several
// namespaces (nsInfo), each run as a one-statement insert, update or
// delete on its database, so that every rule of those commands applies
// (validation, views, transactions, retryable writes with stmtId = the
// op's index). The reply is a cursor of per-op results, all in its first
// batch.

// bulkWriteArgs are bulkWrite's fields.
type bulkWriteArgs struct {
	ops, nsInfo         bsoncore.Array
	ordered, errorsOnly bool
	bypass              bool
	keepEmptyTs         bool // bypassEmptyTsReplacement
	let, cursorOpts     bsoncore.Document
}

func (r *request) parseBulkWrite() (*bulkWriteArgs, error) {
	a := &bulkWriteArgs{ordered: true}
	err := r.parseArgs(map[string]fieldHandler{
		"ops":                      r.arrayArg("ops", &a.ops),
		"nsInfo":                   r.arrayArg("nsInfo", &a.nsInfo),
		"ordered":                  r.boolArg("ordered", &a.ordered),
		"errorsOnly":               r.boolArg("errorsOnly", &a.errorsOnly),
		"bypassDocumentValidation": r.boolArg("bypassDocumentValidation", &a.bypass),
		"bypassEmptyTsReplacement": r.boolArg("bypassEmptyTsReplacement", &a.keepEmptyTs),
		"let":                      r.optDocArg("let", &a.let),
		"cursor":                   r.docArg("cursor", &a.cursorOpts),
	})
	switch {
	case err != nil:
		return nil, err
	case a.ops == nil:
		return nil, mongoerr.New(mongoerr.Location40414, "BSON field 'bulkWrite.ops' is missing but a required field")
	case a.nsInfo == nil:
		return nil, mongoerr.New(mongoerr.Location40414, "BSON field 'bulkWrite.nsInfo' is missing but a required field")
	}
	return a, nil
}

// bulkNamespaces reads nsInfo: the namespaces the ops name by index.
func bulkNamespaces(nsInfo bsoncore.Array) ([][2]string, error) {
	vals, _ := nsInfo.Values()
	out := make([][2]string, 0, len(vals))
	for i, v := range vals {
		d, ok := v.DocumentOK()
		if !ok {
			return nil, typeMismatch("bulkWrite", "nsInfo."+itoa(int64(i)), v, "object")
		}
		els, _ := d.Elements()
		ns := ""
		for _, el := range els {
			switch el.Key() {
			case "ns":
				if ns, ok = el.Value().StringValueOK(); !ok {
					return nil, typeMismatch("bulkWrite", "nsInfo."+itoa(int64(i))+".ns", el.Value(), "string")
				}
			default:
				return nil, mongoerr.New(mongoerr.NotImplemented, "bulkWrite nsInfo option '%s' is not supported by DumboDB", el.Key())
			}
		}
		db, coll, ok := splitNamespace(ns)
		if !ok {
			return nil, mongoerr.New(mongoerr.InvalidNamespace, "Invalid namespace specified '%s'", ns)
		}
		out = append(out, [2]string{db, coll})
	}
	return out, nil
}

// bulkTotals are the reply's counters.
type bulkTotals struct {
	nErrors, nInserted, nMatched, nModified, nUpserted, nDeleted int64
}

func cmdBulkWrite(r *request) (bsoncore.Document, error) {
	a, err := r.parseBulkWrite()
	if err != nil {
		return nil, err
	}
	namespaces, err := bulkNamespaces(a.nsInfo)
	if err != nil {
		return nil, err
	}
	ops, _ := a.ops.Values()
	if err := checkWriteBatchSize(len(ops)); err != nil {
		return nil, err
	}
	subs, err := bulkSubCommands(a, namespaces, ops)
	if err != nil {
		return nil, err // a malformed op: nothing ran, as on mongod
	}
	if err := r.authorizeBulk(subs); err != nil {
		return nil, err // a namespace the user may not write: nothing ran, as on mongod
	}
	var results []bsoncore.Document
	var tot bulkTotals
	for i, sub := range subs {
		res, failed := r.runBulkOp(i, sub, &tot)
		if failed || !a.errorsOnly {
			results = append(results, res)
		}
		if failed && a.ordered {
			break
		}
	}
	batchSize, err := cursorBatchSize(r, a.cursorOpts)
	if err != nil {
		return nil, err
	}
	reply, err := r.startCursor("admin.$cmd.bulkWrite", &sliceSource{docs: results}, batchSize, false, false)
	if err != nil {
		return nil, err
	}
	return withTotals(reply, tot), nil
}

// bulkSub is one op ready to run: its database, the one-statement
// command it stands for, what that needs, and its kind.
type bulkSub struct {
	db, kind string
	cmd      bsoncore.Document
	action   auth.Action
}

// bulkSubCommands parses every op before any runs.
func bulkSubCommands(a *bulkWriteArgs, namespaces [][2]string, ops []bsoncore.Value) ([]bulkSub, error) {
	subs := make([]bulkSub, 0, len(ops))
	for i, v := range ops {
		op, ok := v.DocumentOK()
		if !ok {
			return nil, typeMismatch("bulkWrite", "ops."+itoa(int64(i)), v, "object")
		}
		kind := value.FirstKey(op)
		nsIdx, ok := value.AsInt64(op.Lookup(kind))
		if !ok || nsIdx < 0 || int(nsIdx) >= len(namespaces) {
			return nil, mongoerr.New(mongoerr.BadValue, "BulkWrite ops entry %d has an invalid nsInfo index: %s", i, value.Format(op.Lookup(kind)))
		}
		ns := namespaces[nsIdx]
		cmd, action, err := bulkSubCommand(kind, ns[1], op, a)
		if err != nil {
			return nil, err
		}
		subs = append(subs, bulkSub{db: ns[0], kind: kind, cmd: cmd, action: action})
	}
	return subs, nil
}

// authorizeBulk checks every op's action on its database, and the
// branch it writes, before any op runs.
func (r *request) authorizeBulk(subs []bulkSub) error {
	if !r.c.s.cfg.Auth {
		return nil
	}
	a := r.c.currentAuth()
	for _, sub := range subs {
		name, rev := splitDBName(sub.db)
		if validateDBName(name) != nil {
			continue // the op fails on its own
		}
		if err := r.require(sub.action, name); err != nil {
			return err
		}
		if err := r.checkRevisionWrite(a, name, rev); err != nil {
			return err
		}
	}
	return nil
}

// runBulkOp runs op i and returns its result and whether it failed.
func (r *request) runBulkOp(i int, sub bulkSub, tot *bulkTotals) (bsoncore.Document, bool) {
	reply, err := r.runBulkSub(sub.db, sub.cmd, i)
	if err != nil {
		tot.nErrors++
		return bulkError(i, err), true
	}
	return tot.add(sub.kind, i, reply), false
}

// bulkSubCommand is the one-statement insert, update or delete an op
// stands for, and the action it needs.
func bulkSubCommand(kind, coll string, op bsoncore.Document, a *bulkWriteArgs) (bsoncore.Document, auth.Action, error) {
	b := bsoncore.NewDocumentBuilder()
	stmt := bsoncore.NewDocumentBuilder()
	var action auth.Action
	els, _ := op.Elements()
	switch kind {
	case "insert":
		b.AppendString("insert", coll)
		doc, ok := op.Lookup("document").DocumentOK()
		if !ok || len(els) != 2 {
			return nil, 0, mongoerr.New(mongoerr.FailedToParse, "BulkWrite insert ops take exactly 'insert' and 'document'")
		}
		b.AppendArray("documents", bsoncore.NewArrayBuilder().AppendDocument(doc).Build())
		action = auth.Insert
	case "update":
		b.AppendString("update", coll)
		if err := bulkStatement(stmt, els[1:], map[string]string{"filter": "q", "updateMods": "u", "upsert": "upsert",
			"multi": "multi", "arrayFilters": "arrayFilters", "hint": "hint", "collation": "collation", "sort": "sort"}); err != nil {
			return nil, 0, err
		}
		b.AppendArray("updates", bsoncore.NewArrayBuilder().AppendDocument(stmt.Build()).Build())
		action = auth.Update
		if up, _ := asBool(op.Lookup("upsert")); up {
			action |= auth.Insert
		}
	case "delete":
		b.AppendString("delete", coll)
		multi, _ := asBool(op.Lookup("multi"))
		limit := int32(1)
		if multi {
			limit = 0
		}
		var rest []bsoncore.Element
		for _, el := range els[1:] {
			if el.Key() != "multi" {
				rest = append(rest, el)
			}
		}
		if err := bulkStatement(stmt, rest, map[string]string{"filter": "q", "hint": "hint", "collation": "collation"}); err != nil {
			return nil, 0, err
		}
		stmt.AppendInt32("limit", limit)
		b.AppendArray("deletes", bsoncore.NewArrayBuilder().AppendDocument(stmt.Build()).Build())
		action = auth.Remove
	default:
		return nil, 0, mongoerr.New(mongoerr.FailedToParse, "Unrecognized bulkWrite op '%s'", kind)
	}
	if a.bypass && kind != "delete" {
		b.AppendBoolean("bypassDocumentValidation", true)
	}
	if a.keepEmptyTs && kind != "delete" {
		b.AppendBoolean("bypassEmptyTsReplacement", true)
	}
	if a.let != nil && kind != "insert" {
		b.AppendDocument("let", a.let)
	}
	return b.Build(), action, nil
}

// bulkStatement renames an op's fields to the statement's (filter -> q).
func bulkStatement(stmt *bsoncore.DocumentBuilder, els []bsoncore.Element, names map[string]string) error {
	for _, el := range els {
		name, ok := names[el.Key()]
		if !ok {
			return mongoerr.New(mongoerr.Location40415, "BSON field 'bulkWrite.ops.%s' is an unknown field.", el.Key())
		}
		stmt.AppendValue(name, el.Value())
	}
	return nil
}

// runBulkSub runs a sub-command on db as this request: its session,
// transaction, write concern and deadline; a retryable write's statement
// is the op's index.
func (r *request) runBulkSub(db string, cmd bsoncore.Document, op int) (bsoncore.Document, error) {
	name, rev := splitDBName(db)
	if err := validateDBName(name); err != nil {
		return nil, err
	}
	sub := *r
	sub.cmd, sub.db, sub.rev = cmd, name, rev
	sub.name = value.FirstKey(cmd)
	sub.spec = lookupCommand(sub.name)
	if r.retry != nil {
		sub.retry = &retryableWrite{session: r.retry.session, txn: r.retry.txn, first: int32(op)}
	}
	reply, err := sub.spec.handler(&sub)
	if err == nil {
		err = writeErrorOf(reply)
	}
	r.opTime = max2(r.opTime, sub.opTime)
	return reply, err
}

func max2(a, b clusterTime) clusterTime {
	if a.less(b) {
		return b
	}
	return a
}

// writeErrorOf is the first write error of a write command's reply, as
// an error (nil: none).
func writeErrorOf(reply bsoncore.Document) error {
	errs, ok := reply.Lookup("writeErrors").ArrayOK()
	if !ok {
		return nil
	}
	vals, _ := errs.Values()
	if len(vals) == 0 {
		return nil
	}
	d := vals[0].Document()
	code, _ := value.AsInt64(d.Lookup("code"))
	e := mongoerr.New(mongoerr.Code(code), "%s", d.Lookup("errmsg").StringValue())
	if info, ok := d.Lookup("errInfo").DocumentOK(); ok {
		e.Info = bsoncore.NewDocumentBuilder().AppendDocument("errInfo", info).Build()
	}
	if kp, ok := d.Lookup("keyPattern").DocumentOK(); ok {
		e.Info = appendFields(value.OrEmpty(e.Info), func(b *bsoncore.DocumentBuilder) {
			b.AppendDocument("keyPattern", kp).AppendValue("keyValue", d.Lookup("keyValue"))
		})
	}
	return e
}

// add counts a successful op and returns its result.
func (t *bulkTotals) add(kind string, i int, reply bsoncore.Document) bsoncore.Document {
	n, _ := value.AsInt64(reply.Lookup("n"))
	b := bsoncore.NewDocumentBuilder().AppendDouble("ok", 1).AppendInt32("idx", int32(i)).AppendInt32("n", int32(n))
	switch kind {
	case "insert":
		t.nInserted += n
	case "delete":
		t.nDeleted += n
	case "update":
		modified, _ := value.AsInt64(reply.Lookup("nModified"))
		b.AppendInt32("nModified", int32(modified))
		if up, ok := reply.Lookup("upserted").ArrayOK(); ok {
			vals, _ := up.Values()
			if len(vals) > 0 {
				t.nUpserted++
				n--
				b.AppendDocument("upserted", bsoncore.NewDocumentBuilder().AppendValue("_id", vals[0].Document().Lookup("_id")).Build())
			}
		}
		t.nMatched += n
		t.nModified += modified
	}
	return b.Build()
}

// bulkError is a failed op's result: ok 0, idx, and the error's fields.
func bulkError(i int, err error) bsoncore.Document {
	me := toMongoErr(err)
	b := bsoncore.NewDocumentBuilder().AppendDouble("ok", 0).AppendInt32("idx", int32(i)).
		AppendInt32("code", int32(me.Code)).AppendString("codeName", me.Code.Name()).AppendString("errmsg", me.Msg)
	els, _ := me.Info.Elements()
	for _, el := range els {
		b.AppendValue(el.Key(), el.Value())
	}
	return b.Build()
}

// withTotals is the cursor reply with bulkWrite's counters before ok.
func withTotals(reply bsoncore.Document, t bulkTotals) bsoncore.Document {
	b := bsoncore.NewDocumentBuilder()
	els, _ := reply.Elements()
	for _, el := range els {
		if el.Key() != "ok" {
			b.AppendValue(el.Key(), el.Value())
		}
	}
	return b.AppendInt32("nErrors", int32(t.nErrors)).
		AppendInt32("nInserted", int32(t.nInserted)).
		AppendInt32("nMatched", int32(t.nMatched)).
		AppendInt32("nModified", int32(t.nModified)).
		AppendInt32("nUpserted", int32(t.nUpserted)).
		AppendInt32("nDeleted", int32(t.nDeleted)).
		AppendDouble("ok", 1).Build()
}
