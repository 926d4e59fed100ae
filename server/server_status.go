package server

import (
	"maps"
	"slices"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/value"
)

// serverStatus' sections that follow mongod's shape for exporters and
// dashboards: network, opLatencies, asserts, metrics.commands,
// transactions, globalLock. cmdServerStatus (cmd_admin.go) assembles
// them with the others.

// statusSection is one top-level section of serverStatus.
type statusSection struct {
	name string
	doc  bsoncore.Document
}

// sectionsWanted drops the sections the command turned off ({metrics: 0,
// repl: false}), as mongod does.
func sectionsWanted(r *request, sections []statusSection) []statusSection {
	out := sections[:0]
	for _, sec := range sections {
		if sectionWanted(r, sec.name) {
			out = append(out, sec)
		}
	}
	return out
}

func sectionWanted(r *request, name string) bool {
	v, err := r.cmd.LookupErr(name)
	return err != nil || value.Truthy(v)
}

// networkStatus is serverStatus.network: the wire protocol's bytes and
// requests as they crossed the sockets (compressed messages count as
// sent, so logical and physical bytes are the same figures).
func (s *Server) networkStatus() bsoncore.Document {
	st := &s.stats
	in, out := st.bytesIn.Load(), st.bytesOut.Load()
	return bsoncore.NewDocumentBuilder().
		AppendInt64("bytesIn", in).AppendInt64("bytesOut", out).
		AppendInt64("physicalBytesIn", in).AppendInt64("physicalBytesOut", out).
		AppendInt64("numSlowDNSOperations", 0).AppendInt64("numSlowSSLOperations", 0).
		AppendInt64("numRequests", st.numRequests.Load()).Build()
}

// opLatenciesStatus is serverStatus.opLatencies: per class the
// microseconds spent and the operations.
func (s *Server) opLatenciesStatus() bsoncore.Document {
	l := &s.metrics.latencies
	b := bsoncore.NewDocumentBuilder()
	for _, c := range []struct {
		name  string
		class *latencyClass
	}{{"reads", &l.reads}, {"writes", &l.writes}, {"commands", &l.commands}, {"transactions", &l.transactions}} {
		b.AppendDocument(c.name, bsoncore.NewDocumentBuilder().
			AppendInt64("latency", c.class.micros.Load()).AppendInt64("ops", c.class.ops.Load()).Build())
	}
	return b.Build()
}

// assertsStatus is serverStatus.asserts: the server raises no internal
// assertions; user errors are the commands that failed.
func (s *Server) assertsStatus() bsoncore.Document {
	return bsoncore.NewDocumentBuilder().
		AppendInt32("regular", 0).AppendInt32("warning", 0).AppendInt32("msg", 0).
		AppendInt32("user", int32(s.metrics.failures())).AppendInt32("tripwire", 0).
		AppendInt32("rollovers", 0).Build()
}

// commandsStatus is serverStatus.metrics.commands: per command (by its
// canonical name) the times it ran and failed.
func (s *Server) commandsStatus() bsoncore.Document {
	b := bsoncore.NewDocumentBuilder()
	for _, name := range slices.Sorted(maps.Keys(s.metrics.counts)) {
		c := s.metrics.counts[name]
		b.AppendDocument(name, bsoncore.NewDocumentBuilder().
			AppendInt64("failed", c.failed.Load()).AppendInt64("total", c.total.Load()).Build())
	}
	return b.Build()
}

// transactionsStatus is serverStatus.transactions.
func (s *Server) transactionsStatus() bsoncore.Document {
	t := &s.sessions.txns
	_, open := s.sessions.counts()
	return bsoncore.NewDocumentBuilder().
		AppendInt64("currentActive", int64(open)).
		AppendInt64("currentInactive", 0).
		AppendInt64("currentOpen", int64(open)).
		AppendInt64("totalAborted", t.aborted.Load()).
		AppendInt64("totalCommitted", t.committed.Load()).
		AppendInt64("totalStarted", t.started.Load()).
		AppendInt64("totalPrepared", 0).Build()
}

// globalLockStatus is serverStatus.globalLock. DumboDB has no global
// lock; the queue is the writes waiting now, at the write gate (the data
// directory frozen by fsync with lock) or for a branch's writer lock, and
// the active clients are the commands running.
func (s *Server) globalLockStatus() bsoncore.Document {
	var waiting int64
	if s.engine != nil {
		ls := s.engine.LockStats()
		waiting = ls.Gate.Waiting + ls.BranchWriter.Waiting
	}
	return bsoncore.NewDocumentBuilder().
		AppendInt64("totalTime", time.Since(s.started).Microseconds()).
		AppendDocument("currentQueue", bsoncore.NewDocumentBuilder().AppendInt32("total", int32(waiting)).
			AppendInt32("readers", 0).AppendInt32("writers", int32(waiting)).Build()).
		AppendDocument("activeClients", bsoncore.NewDocumentBuilder().
			AppendInt32("total", int32(s.running.Load())).AppendInt32("readers", 0).AppendInt32("writers", 0).Build()).
		Build()
}

// locksStatus is serverStatus.locks in mongod's shape, with DumboDB's two
// locks (storage/locks.go): Global, in mode w, is the write gate every
// change to the data directory passes, and in mode W the fsync locks
// taken; Database, in mode W, is a branch's writer lock, which each write
// takes for its branch alone. Readers take no lock.
func (s *Server) locksStatus() bsoncore.Document {
	if s.engine == nil {
		return bsoncore.NewDocumentBuilder().Build()
	}
	ls := s.engine.LockStats()
	mode := func(m string, n int64) bsoncore.Document {
		return bsoncore.NewDocumentBuilder().AppendInt64(m, n).Build()
	}
	global := bsoncore.NewDocumentBuilder().
		AppendDocument("acquireCount", bsoncore.NewDocumentBuilder().AppendInt64("w", ls.Gate.Acquired).AppendInt64("W", ls.Freezes).Build()).
		AppendDocument("acquireWaitCount", mode("w", ls.Gate.Waited)).
		AppendDocument("timeAcquiringMicros", mode("w", ls.Gate.WaitMicros)).Build()
	database := bsoncore.NewDocumentBuilder().
		AppendDocument("acquireCount", mode("W", ls.BranchWriter.Acquired)).
		AppendDocument("acquireWaitCount", mode("W", ls.BranchWriter.Waited)).
		AppendDocument("timeAcquiringMicros", mode("W", ls.BranchWriter.WaitMicros)).Build()
	return bsoncore.NewDocumentBuilder().AppendDocument("Global", global).AppendDocument("Database", database).Build()
}
