package server

import (
	"fmt"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// clusterTime is a BSON Timestamp: seconds, and an increment within them.
type clusterTime struct{ t, i uint32 }

func (a clusterTime) less(b clusterTime) bool { return a.t < b.t || (a.t == b.t && a.i < b.i) }

func (a clusterTime) isZero() bool { return a.t == 0 && a.i == 0 }

// stamp is the time as the storage engine's clock counts it.
func (a clusterTime) stamp() uint64 { return uint64(a.t)<<32 | uint64(a.i) }

// String writes it as mongod does: Timestamp(seconds, increment).
func (a clusterTime) String() string { return fmt.Sprintf("Timestamp(%d, %d)", a.t, a.i) }

// clusterClock is the server's hybrid logical clock (docs/design/
// transactions.md, "Cluster time"): it never goes backwards, its seconds
// follow the wall clock, and each write takes a tick of its own.
type clusterClock struct {
	mu        sync.Mutex
	last      clusterTime // the latest time handed out or learnt
	lastWrite clusterTime
	wallWrite time.Time // when lastWrite was taken
}

// newClusterClock starts the clock at the current second.
func newClusterClock() *clusterClock {
	return &clusterClock{last: clusterTime{t: uint32(time.Now().Unix()), i: 1}}
}

// tickWrite hands out a new time for a write.
func (c *clusterClock) tickWrite() clusterTime {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := uint32(time.Now().Unix())
	if now > c.last.t {
		c.last = clusterTime{t: now, i: 1}
	} else {
		c.last.i++
	}
	c.lastWrite, c.wallWrite = c.last, time.Now()
	return c.last
}

// now is the latest time: what a read's operationTime reports.
func (c *clusterClock) now() clusterTime {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last
}

// lastWritten is the latest write's time and wall-clock date.
func (c *clusterClock) lastWritten() (clusterTime, time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lastWrite, c.wallWrite
}

// advance learns a later time from a client's $clusterTime.
func (c *clusterClock) advance(t clusterTime) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.last.less(t) {
		c.last = t
	}
}

// appendClusterTime appends the $clusterTime of a reply: the time, and
// the zero signature an unauthenticated mongod sends.
func appendClusterTime(dst []byte, t clusterTime) []byte {
	idx, dst := bsoncore.AppendDocumentElementStart(dst, "$clusterTime")
	dst = bsoncore.AppendTimestampElement(dst, "clusterTime", t.t, t.i)
	sidx, dst := bsoncore.AppendDocumentElementStart(dst, "signature")
	dst = bsoncore.AppendBinaryElement(dst, "hash", 0, make([]byte, 20))
	dst = bsoncore.AppendInt64Element(dst, "keyId", 0)
	dst, _ = bsoncore.AppendDocumentEnd(dst, sidx)
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return dst
}

// clientClusterTime is the time in a command's $clusterTime (zero: none).
func clientClusterTime(gossiped bsoncore.Value) clusterTime {
	d, _ := gossiped.DocumentOK()
	t, i, ok := d.Lookup("clusterTime").TimestampOK()
	if !ok {
		return clusterTime{}
	}
	return clusterTime{t: t, i: i}
}
