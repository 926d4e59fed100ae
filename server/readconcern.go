package server

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/value"
)

// readConcernLevels are the levels a replica set member accepts. Every
// read here sees the branch's published state, which is majority
// committed and linearizable as soon as its writer is answered (one
// member); snapshot reads one state for the whole command, which every
// read does (docs/design/transactions.md, "Cluster time").
var readConcernLevels = map[string]bool{
	"local": true, "available": true, "majority": true, "linearizable": true, "snapshot": true,
}

// applyReadConcern checks a command's readConcern and honours
// afterClusterTime: the clock moves to it, so the read's operationTime is
// never before it (every write a client can have seen is already visible).
func (r *request) applyReadConcern() error {
	v, err := r.argErr("readConcern")
	if err != nil {
		return nil
	}
	rc, ok := v.DocumentOK()
	if !ok {
		return typeMismatch(r.name, "readConcern", v, "object")
	}
	if r.name == "getMore" {
		// A getMore reads as its cursor does; mongod takes the read
		// concern a driver repeats on it (a snapshot session's) and
		// lets the cursor decide.
		return nil
	}
	els, _ := rc.Elements()
	for _, el := range els {
		if err := r.readConcernField(el); err != nil {
			return err
		}
	}
	return r.settleReadTime()
}

// settleReadTime fixes the time a snapshot read (outside a transaction)
// reads at: its atClusterTime, or now; the reply reports it, so that the
// session's later reads name it (snapshot sessions). A transaction's
// statements read its own snapshot instead (transaction.readAt).
func (r *request) settleReadTime() error {
	switch {
	case !r.readAt.isZero() && r.readLevel != "snapshot":
		return mongoerr.New(mongoerr.InvalidOptions, "atClusterTime field can be set only if level is equal to snapshot")
	case !r.readAt.isZero() && r.afterTime:
		return mongoerr.New(mongoerr.InvalidOptions, "Can not specify both afterClusterTime and atClusterTime")
	case r.readLevel != "snapshot":
		return nil
	}
	now := r.c.s.clock.now()
	if now.less(r.readAt) {
		return mongoerr.New(mongoerr.InvalidOptions,
			"readConcern snapshot value must not be greater than the current clusterTime. Requested clusterTime: %s; current clusterTime: %s",
			r.readAt, now)
	}
	if r.readAt.isZero() {
		r.readAt = now
	}
	return nil
}

func (r *request) readConcernField(el bsoncore.Element) error {
	v := el.Value()
	switch el.Key() {
	case "level":
		level, ok := v.StringValueOK()
		if !ok {
			return typeMismatch("readConcern", "level", v, "string")
		}
		r.readLevel = level
		if !readConcernLevels[level] {
			return mongoerr.New(mongoerr.BadValue, "Enumeration value '%s' for field 'readConcern.level' is not a valid value.", level)
		}
		if level == "snapshot" && !r.spec.snapshotRead && !r.startsTransaction() {
			return mongoerr.New(mongoerr.InvalidOptions, "Command %s does not support { readConcern: { level: \"snapshot\" } }", r.name)
		}
		if level != "local" && level != "available" && !r.c.s.topo.replicaSet() && level != "majority" {
			return mongoerr.New(mongoerr.NotImplemented, "readConcern level %q needs a replica set (the server runs with --standalone)", level)
		}
	case "afterClusterTime":
		t, i, ok := v.TimestampOK()
		if !ok {
			return typeMismatch("readConcern", "afterClusterTime", v, "timestamp")
		}
		if !r.c.s.topo.replicaSet() {
			return mongoerr.New(mongoerr.IllegalOperation, "Cannot specify afterClusterTime readConcern without replication enabled")
		}
		after := clusterTime{t: t, i: i}
		r.c.s.clock.advance(after)
		r.afterTime = true
		// A transaction over several databases committed by then is seen
		// whole: its parts publish one database after another.
		if err := r.c.s.engine.WaitCommitsThrough(r.ctx, after.stamp()); err != nil {
			return err
		}
	case "atClusterTime":
		t, i, ok := v.TimestampOK()
		if !ok {
			return typeMismatch("readConcern", "atClusterTime", v, "timestamp")
		}
		r.readAt, r.readAtGiven = clusterTime{t: t, i: i}, true
	case "provenance":
		// Who chose the read concern (set by routers); it changes nothing.
		if _, ok := v.StringValueOK(); !ok {
			return typeMismatch("readConcern", "provenance", v, "string")
		}
	default:
		return unknownField("readConcern", el.Key())
	}
	return nil
}

// snapshotReadTime is the time a snapshot read outside a transaction read
// at, which its reply reports (zero: not such a read).
func (r *request) snapshotReadTime() clusterTime {
	if r.txn != nil || r.readLevel != "snapshot" {
		return clusterTime{}
	}
	return r.readAt
}

// startsTransaction reports the first statement of a transaction, which
// may carry any read concern whatever its kind (a write among them), as
// on mongod.
func (r *request) startsTransaction() bool {
	v, err := r.argErr("startTransaction")
	if err != nil || !r.spec.inTransaction {
		return false
	}
	b, ok := v.BooleanOK()
	return ok && b
}

// changeStreamReadConcern refuses a change stream given a read concern
// level other than majority, the one it reads at (without one it takes
// majority, whatever the default), as mongod does before running the
// command. In a transaction the stream itself is refused instead.
func (r *request) changeStreamReadConcern(stages []bsoncore.Document) error {
	if r.txn != nil || r.readLevel == "" || r.readLevel == "majority" {
		return nil
	}
	for _, st := range stages {
		if value.FirstKey(st) == "$changeStream" {
			return mongoerr.New(mongoerr.InvalidOptions,
				"Command %s does not support { readConcern: { level: \"%s\", provenance: \"clientSupplied\" } } :: caused by :: Aggregation stage $changeStream cannot run with a readConcern other than 'majority'. Current readConcern: %s",
				r.name, r.readLevel, r.readLevel)
		}
	}
	return nil
}
