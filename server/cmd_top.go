package server

import (
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// top: the time and count of the commands on each collection since the
// server started, as mongod's top reports them.

// topUsage is one collection's figures, each {time (µs), count}.
type topUsage struct {
	total, readLock, writeLock                             topFigure
	queries, getmore, insert, update, remove, commandsOnNS topFigure
}

type topFigure struct{ micros, count atomic.Int64 }

func (f *topFigure) add(d time.Duration) { f.micros.Add(d.Microseconds()); f.count.Add(1) }

// topTable is the server's top figures, by "db.coll": every read and
// write adds to them, so they take no lock but the map's.
type topTable struct{ ns sync.Map } // string → *topUsage

// record adds a command on a collection to its figures: to total, to
// readLock or writeLock by whether it reads or writes, and to its kind.
func (t *topTable) record(ns string, spec *command, name string, d time.Duration) {
	v, ok := t.ns.Load(ns)
	if !ok {
		v, _ = t.ns.LoadOrStore(ns, &topUsage{})
	}
	u := v.(*topUsage)
	u.total.add(d)
	if spec.family == writes {
		u.writeLock.add(d)
	} else {
		u.readLock.add(d)
	}
	switch canonicalCommand(name) {
	case "find":
		u.queries.add(d)
	case "getMore":
		u.getmore.add(d)
	case "insert":
		u.insert.add(d)
	case "update", "findAndModify":
		u.update.add(d)
	case "delete":
		u.remove.add(d)
	default:
		u.commandsOnNS.add(d)
	}
}

// cmdTop is top, on admin.
func cmdTop(r *request) (bsoncore.Document, error) {
	if err := r.parseArgs(map[string]fieldHandler{}); err != nil {
		return nil, err
	}
	usage := map[string]*topUsage{}
	r.c.s.top.ns.Range(func(k, v any) bool { usage[k.(string)] = v.(*topUsage); return true })
	totals := bsoncore.NewDocumentBuilder().AppendString("note", "all times in microseconds")
	for _, ns := range slices.Sorted(maps.Keys(usage)) {
		u := usage[ns]
		b := bsoncore.NewDocumentBuilder()
		for _, f := range []struct {
			name string
			fig  *topFigure
		}{{"total", &u.total}, {"readLock", &u.readLock}, {"writeLock", &u.writeLock}, {"queries", &u.queries},
			{"getmore", &u.getmore}, {"insert", &u.insert}, {"update", &u.update}, {"remove", &u.remove}, {"commands", &u.commandsOnNS}} {
			b.AppendDocument(f.name, bsoncore.NewDocumentBuilder().AppendInt64("time", f.fig.micros.Load()).AppendInt64("count", f.fig.count.Load()).Build())
		}
		totals.AppendDocument(ns, b.Build())
	}
	return bsoncore.NewDocumentBuilder().AppendDocument("totals", totals.Build()).AppendDouble("ok", 1).Build(), nil
}

// topCollection is the collection top counts a command on ("": none):
// a read's or a write's, or a getMore's cursor's.
func topCollection(req *request, cmd bsoncore.Document) string {
	switch {
	case req.spec == nil:
		return ""
	case req.name == "getMore":
		coll, _ := cmd.Lookup("collection").StringValueOK()
		return coll
	case req.spec.family == reads || req.spec.family == writes:
		coll, _ := cmd.Index(0).Value().StringValueOK()
		return coll
	}
	return ""
}
