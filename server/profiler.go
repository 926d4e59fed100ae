package server

import (
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/query"
	"github.com/dumbodb/dumbodb/value"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// The database profiler (docs/operations.md, "Profiler"): the profile
// command sets a database's level (0 off, 1 operations slower than
// slowms or matching a filter, 2 all), and each profiled operation
// leaves an entry in <db>.system.profile, a virtual collection
// (virtual_collections.go) of the newest entries up to 1 MiB, mongod's
// default size of that capped collection. The entries are kept in
// memory: they are the server's record of its work, not the database's
// data, so they are neither versioned nor kept across a restart.

// profileBytes bounds one database's entries, as mongod's system.profile.
const profileBytes = 1 << 20

type profiler struct {
	active atomic.Int32 // databases with a level above 0 (and the default's): none, and no command pays more
	mu     sync.Mutex
	dbs    map[string]*dbProfile
	// defaults are the level and filter a database starts with
	// (--profile, operationProfiling.mode and .filter).
	defaults dbProfile
}

type dbProfile struct {
	level   int
	filter  *query.Filter
	filterD bsoncore.Document
	entries []bsoncore.Document
	bytes   int
	// exists: system.profile is there, as on mongod from when a level
	// above 0 is set or an entry is written, until it is dropped.
	exists bool
}

// profile reads a database's profile, made if make is set.
func (p *profiler) profile(db string, make bool) *dbProfile {
	if p.dbs == nil {
		p.dbs = map[string]*dbProfile{}
	}
	d := p.dbs[db]
	if d == nil && (make || p.defaults.level > 0) {
		d = &dbProfile{level: p.defaults.level, filter: p.defaults.filter, filterD: p.defaults.filterD}
		if d.level > 0 {
			p.active.Add(1)
		}
		p.dbs[db] = d
	}
	return d
}

// SetDefaultProfile sets the level and filter (nil: none) every database
// starts with, before the server serves (--profile, --profileFilter).
func (s *Server) SetDefaultProfile(level int, filter bsoncore.Document) error {
	if level < 0 || level > 2 {
		return mongoerr.New(mongoerr.BadValue, "Invalid profiling level %d: 0, 1 or 2", level)
	}
	p := &s.profiler
	p.mu.Lock()
	defer p.mu.Unlock()
	if filter != nil {
		match, err := query.CompileFilter(filter)
		if err != nil {
			return err
		}
		p.defaults.filter, p.defaults.filterD = match, filter
	}
	if level > 0 && p.defaults.level == 0 {
		p.active.Add(1) // every database is profiled: record looks at each
	}
	p.defaults.level = level
	return nil
}

// cmdProfile is profile: {profile: -1} reads the database's level,
// {profile: 0|1|2, slowms?, sampleRate?, filter?} sets it; slowms and
// sampleRate are the server's, as on mongod (they also rule the log's
// slow queries). The answer holds the settings from before.
func cmdProfile(r *request) (bsoncore.Document, error) {
	level, ok := value.WholeInt64(r.cmd.Index(0).Value())
	if !ok || level < -1 || level > 2 {
		return nil, mongoerr.New(mongoerr.BadValue, "Invalid profiling level: profile takes -1 (read), 0, 1 or 2")
	}
	var slowms int64 = -1
	var rate = math.NaN()
	var filter bsoncore.Value
	err := r.parseArgs(map[string]fieldHandler{
		"slowms": r.int64Arg("slowms", &slowms),
		"sampleRate": func(v bsoncore.Value) error {
			f, ok := v.AsFloat64OK()
			if !ok || f < 0 || f > 1 {
				return mongoerr.New(mongoerr.BadValue, "'sampleRate' must be between 0.0 and 1.0 inclusive")
			}
			rate = f
			return nil
		},
		"filter": func(v bsoncore.Value) error { filter = v; return nil },
	})
	if err != nil {
		return nil, err
	}
	var match *query.Filter
	if d, ok := filter.DocumentOK(); ok {
		if match, err = query.CompileFilter(d); err != nil {
			return nil, err
		}
	} else if filter.Type != 0 && !(filter.Type == bsoncore.TypeString && filter.StringValue() == "unset") {
		return nil, mongoerr.New(mongoerr.BadValue, "'filter' must be an object or the string 'unset'")
	}
	s := r.c.s
	p := &s.profiler
	p.mu.Lock()
	defer p.mu.Unlock()
	d := p.profile(r.db, level > 0)
	was := 0
	b := bsoncore.NewDocumentBuilder()
	if d != nil {
		was = d.level
	}
	b.AppendInt32("was", int32(was)).AppendInt64("slowms", s.slowOp.Load()/int64(time.Millisecond)).
		AppendDouble("sampleRate", 1-s.slowSkip())
	if d != nil && d.filterD != nil {
		b.AppendDocument("filter", d.filterD)
	}
	if level >= 0 {
		if d != nil {
			if was > 0 && level == 0 {
				p.active.Add(-1)
			} else if was == 0 && level > 0 {
				p.active.Add(1)
			}
			d.level = int(level)
			d.exists = d.exists || level > 0
			if filter.Type != 0 {
				d.filter, d.filterD = match, filter.Document()
				if match == nil {
					d.filterD = nil
				}
			}
		}
		if slowms >= 0 {
			s.slowOp.Store(max(slowms, 0) * int64(time.Millisecond))
		}
		if !math.IsNaN(rate) {
			s.setSlowSkip(1 - rate)
		}
	}
	return b.AppendDouble("ok", 1).Build(), nil
}

// record leaves a profile entry of a command that ran on a profiled
// database, when its level says so: every command at 2; at 1, one that
// matches the database's filter or, without a filter, one slower than
// slowms (and sampled).
func (p *profiler) record(c *conn, req *request, cmd, reply bsoncore.Document, took time.Duration, err error) {
	if p.active.Load() == 0 || req.spec == nil || req.name == "profile" {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	d := p.profile(req.db, false)
	if d == nil || d.level == 0 {
		return
	}
	entry := profileEntry(c, req, cmd, reply, took, err)
	switch {
	case d.level == 2:
	case d.filter != nil:
		if !d.filter.Match(entry) {
			return
		}
	case took <= time.Duration(c.s.slowOp.Load()) || !c.s.sampledSlow():
		return
	}
	d.entries = append(d.entries, entry)
	d.bytes += len(entry)
	d.exists = true
	for d.bytes > profileBytes && len(d.entries) > 1 {
		d.bytes -= len(d.entries[0])
		d.entries = d.entries[1:]
	}
}

// profileEntry is a profiled command's entry, in mongod's shape.
func profileEntry(c *conn, req *request, cmd, reply bsoncore.Document, took time.Duration, err error) bsoncore.Document {
	ns := req.db
	if coll := topCollection(req, cmd); coll != "" {
		ns = req.ns(coll)
	}
	b := bsoncore.NewDocumentBuilder().AppendString("op", profileOp(req.name)).AppendString("ns", ns)
	if len(cmd) <= maxLoggedCommand {
		b.AppendDocument("command", cmd)
	}
	if n, ok := returned(reply); ok {
		b.AppendInt64("nreturned", n)
	}
	if err != nil {
		me := mongoerr.As(err)
		b.AppendInt32("ok", 0).AppendInt32("errCode", int32(me.Code)).AppendString("errName", me.Code.String()).AppendString("errMsg", me.Msg)
	}
	b.AppendInt64("responseLength", int64(len(reply))).AppendString("protocol", "op_msg").
		AppendInt64("millis", took.Milliseconds()).AppendDateTime("ts", time.Now().UnixMilli()).
		AppendString("client", c.nc.RemoteAddr().String())
	if app := c.appName(); app != "" {
		b.AppendString("appName", app)
	}
	return b.AppendArray("allUsers", bsoncore.NewArrayBuilder().Build()).AppendString("user", c.userName()).Build()
}

// profileOp is mongod's op of a profile entry for a command.
func profileOp(name string) string {
	switch canonicalCommand(name) {
	case "find":
		return "query"
	case "getMore":
		return "getmore"
	case "insert":
		return "insert"
	case "update", "findAndModify":
		return "update"
	case "delete":
		return "remove"
	}
	return "command"
}

// returned is the documents a reply returned: its batch's.
func returned(reply bsoncore.Document) (int64, bool) {
	for _, batch := range []string{"firstBatch", "nextBatch"} {
		if arr, ok := reply.Lookup("cursor", batch).ArrayOK(); ok {
			vals, _ := arr.Values()
			return int64(len(vals)), true
		}
	}
	return 0, false
}

// profileCollection is <db>.system.profile as a virtual collection,
// when the database has been profiled since the server started.
func (r *request) profileCollection(coll string) (*virtualColl, bool) {
	if coll != "system.profile" {
		return nil, false
	}
	p := &r.c.s.profiler
	p.mu.Lock()
	d := p.profile(r.db, false)
	exists := d != nil && d.exists
	p.mu.Unlock()
	if !exists {
		return nil, false
	}
	return &virtualColl{ns: r.ns(coll), indexes: nil, docs: func() []bsoncore.Document {
		p.mu.Lock()
		defer p.mu.Unlock()
		return append([]bsoncore.Document(nil), d.entries...)
	}}, true
}

// dropProfile is drop of <db>.system.profile: refused while the
// database is profiled, as mongod does; found says it was there.
func (p *profiler) dropProfile(db string) (found bool, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	d := p.profile(db, false)
	if d == nil || !d.exists {
		return false, nil
	}
	if d.level != 0 {
		return false, mongoerr.New(mongoerr.IllegalOperation, "turn off profiling before dropping system.profile collection")
	}
	d.exists, d.entries, d.bytes = false, nil, 0
	return true, nil
}

// forgetDatabase drops a database's profile with the database: its
// entries, and its level and filter, which go back to the server's
// defaults, as mongod's dropDatabase clears the database's settings.
func (p *profiler) forgetDatabase(db string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if d := p.dbs[db]; d != nil {
		if d.level > 0 {
			p.active.Add(-1)
		}
		delete(p.dbs, db)
	}
}

// profileCollectionEntry is system.profile's listCollections entry: a
// capped collection of profileBytes, as mongod's.
func profileCollectionEntry(nameOnly bool) bsoncore.Document {
	b := bsoncore.NewDocumentBuilder().AppendString("name", "system.profile").AppendString("type", "collection")
	if nameOnly {
		return b.Build()
	}
	return b.AppendDocument("options", bsoncore.NewDocumentBuilder().AppendBoolean("capped", true).
		AppendInt64("size", profileBytes).Build()).
		AppendDocument("info", bsoncore.NewDocumentBuilder().AppendBoolean("readOnly", false).Build()).Build()
}
