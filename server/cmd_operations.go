package server

import (
	"time"

	"github.com/dumbodb/dumbodb/auth"
	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/query"
	"github.com/dumbodb/dumbodb/value"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// cmdCurrentOp lists the operations in progress, as mongod's currentOp
// command: fields other than its own are a filter on the listed documents.
// Idle connections are listed only with $all.
func cmdCurrentOp(r *request) (bsoncore.Document, error) {
	var all bool
	filter := bsoncore.NewDocumentBuilder()
	els, _ := r.cmd.Elements()
	for _, el := range els[1:] {
		switch key := el.Key(); {
		case key == "$all":
			var ok bool
			if all, ok = asBool(el.Value()); !ok {
				return nil, typeMismatch(r.name, key, el.Value(), "bool")
			}
		case key == "$ownOps":
			// Without authentication every operation is the client's own.
		case genericFields[key]:
		default:
			filter.AppendValue(key, el.Value())
		}
	}
	match, err := query.CompileFilter(filter.Build())
	if err != nil {
		return nil, err
	}
	inprog := bsoncore.NewArrayBuilder()
	now := time.Now()
	for _, c := range r.c.s.connList() {
		doc := c.describeOp(now, all)
		if doc != nil && match.Match(doc) {
			inprog.AppendDocument(doc)
		}
	}
	reply := bsoncore.NewDocumentBuilder().AppendArray("inprog", inprog.Build())
	if r.c.s.engine.FreezeCount() > 0 { // as mongod says while fsync-locked
		reply.AppendBoolean("fsyncLock", true)
	}
	return reply.AppendDouble("ok", 1).Build(), nil
}

// currentOps is what $currentOp reports: the operations in progress (of
// every user with allUsers, which needs the inprog action under --auth;
// else of the connection's user), idle connections, and idle cursors
// and sessions when asked.
func (r *request) currentOps(f query.CurrentOpFilter) ([]bsoncore.Document, error) {
	if f.AllUsers {
		if err := r.require(auth.InProg, "admin"); err != nil {
			return nil, err
		}
	}
	own := r.cursorUser()
	mine := func(user string) bool { return f.AllUsers || !r.c.s.cfg.Auth || user == own }
	var docs []bsoncore.Document
	now := time.Now()
	for _, c := range r.c.s.connList() {
		if !mine(c.userName()) {
			continue
		}
		if doc := c.describeOp(now, f.IdleConnections); doc != nil {
			docs = append(docs, doc)
		}
	}
	if f.IdleCursors {
		docs = append(docs, r.c.s.cursors.describeIdle(mine)...)
	}
	if f.IdleSessions {
		sf := query.SessionFilter{AllUsers: f.AllUsers || !r.c.s.cfg.Auth}
		for _, s := range r.c.s.listSessions(sf, r.sessionUID()) {
			docs = append(docs, bsoncore.NewDocumentBuilder().AppendString("type", "idleSession").
				AppendBoolean("active", false).AppendDocument("lsid", s.Lookup("_id").Document()).Build())
		}
	}
	return docs, nil
}

// describeOp is a connection's currentOp entry; nil when it is idle and
// idle ones are not wanted. The reply of currentOp itself is listed too, as
// on mongod.
func (c *conn) describeOp(now time.Time, idle bool) bsoncore.Document {
	o := &c.op
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.id == 0 && !idle {
		return nil
	}
	b := bsoncore.NewDocumentBuilder().
		AppendString("type", "op").
		AppendString("desc", connName(c.id)).
		AppendValue("connectionId", value.Count(c.id)).
		AppendString("client", c.nc.RemoteAddr().String()).
		AppendBoolean("active", o.id != 0)
	if name := c.appName(); name != "" {
		b.AppendString("appName", name)
	}
	if o.id == 0 {
		return b.Build()
	}
	running := now.Sub(o.start)
	return b.AppendValue("opid", value.Count(o.id)).
		AppendInt64("secs_running", int64(running/time.Second)).
		AppendInt64("microsecs_running", running.Microseconds()).
		AppendString("op", "command").
		AppendString("ns", o.ns).
		AppendDocument("command", o.command).
		AppendBoolean("killPending", o.ctx.Err() != nil).
		Build()
}

// cmdKillOp stops an operation by opid. Like mongod it answers ok whether
// or not the operation still runs.
func cmdKillOp(r *request) (bsoncore.Document, error) {
	var opid int64
	found := false
	err := r.parseArgs(map[string]fieldHandler{
		"op": func(v bsoncore.Value) error {
			n, ok := value.AsInt64(v)
			if !ok {
				return typeMismatch(r.name, "op", v, "long")
			}
			opid, found = n, true
			return nil
		},
	})
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, mongoerr.New(mongoerr.Location40414, "BSON field 'killOp.op' is missing but a required field")
	}
	for _, c := range r.c.s.connList() {
		if c.kill(opid, errKilled) {
			r.c.log.Info().Str("c", "COMMAND").Int64("opid", opid).Msg("killing operation")
			break
		}
	}
	return bsoncore.NewDocumentBuilder().AppendString("info", "attempting to kill op").AppendDouble("ok", 1).Build(), nil
}
