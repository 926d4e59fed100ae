package server

import (
	"context"
	"errors"
	"sync"
	"syscall"
	"time"

	"github.com/dumbodb/dumbodb/storage"

	"golang.org/x/sys/unix"
)

// Operations: each connection runs one command at a time, and that command
// is an operation with an id (opid) that currentOp lists and killOp stops.
// An operation runs under its connection's operation context; killing it,
// or its client hanging up, cancels that context, which every long loop
// checks. The context outlives single commands (no allocation per command)
// and is replaced only once cancelled.

// errKilled and errDisconnected are the causes an operation's context is
// cancelled with.
var (
	errKilled       = errors.New("operation was interrupted")
	errDisconnected = errors.New("client disconnected")
)

// waitsByDesign are the commands that wait for news on purpose: an
// awaitable hello, a getMore of a tailable or change-stream cursor.
var waitsByDesign = map[string]bool{"hello": true, "isMaster": true, "ismaster": true, "getMore": true}

// slowOpWatch is how long an operation runs before the server starts
// watching its connection for a hang-up: short operations never pay for it.
const slowOpWatch = 100 * time.Millisecond

// opState is the operation a connection is running.
type opState struct {
	mu      sync.Mutex
	id      int64 // 0: idle
	name    string
	ns      string
	start   time.Time
	command []byte // the command document, for currentOp
	ctx     context.Context
	cancel  context.CancelCauseFunc
	watch   chan struct{}       // closed when the disconnect watcher ends; nil: not watched
	session *storage.SessionKey // the operation's logical session (nil: none)
}

// beginOp makes a command the connection's operation and returns the
// context it runs under.
func (c *conn) beginOp(name, ns string, command []byte, start time.Time) context.Context {
	o := &c.op
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.ctx == nil || o.ctx.Err() != nil {
		o.ctx, o.cancel = context.WithCancelCause(c.ctx)
	}
	o.id, o.name, o.ns, o.command, o.start = c.s.nextOpID.Add(1), name, ns, command, start
	return o.ctx
}

// endOp marks the connection idle, first stopping its disconnect watcher.
func (c *conn) endOp() {
	o := &c.op
	o.mu.Lock()
	watch := o.watch
	o.id, o.command, o.watch, o.session = 0, nil, nil, nil
	o.mu.Unlock()
	if watch != nil {
		// Wake the watcher out of its wait for the socket, then let reads
		// block again.
		c.nc.SetReadDeadline(time.Now())
		<-watch
		c.clearReadDeadline()
	}
}

// setSession notes the logical session of the running operation.
func (c *conn) setSession(k storage.SessionKey) {
	c.op.mu.Lock()
	c.op.session = &k
	c.op.mu.Unlock()
}

// currentSession is the running operation's session and opid.
func (c *conn) currentSession() (storage.SessionKey, int64, bool) {
	c.op.mu.Lock()
	defer c.op.mu.Unlock()
	if c.op.id == 0 || c.op.session == nil {
		return storage.SessionKey{}, 0, false
	}
	return *c.op.session, c.op.id, true
}

// currentOpID is the id of the operation the connection runs (0: idle).
func (c *conn) currentOpID() int64 {
	c.op.mu.Lock()
	defer c.op.mu.Unlock()
	return c.op.id
}

// kill cancels the operation opid if the connection is running it.
func (c *conn) kill(opid int64, cause error) bool {
	o := &c.op
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.id != opid || o.id == 0 {
		return false
	}
	o.cancel(cause)
	return true
}

// watchIfSlow starts the disconnect watcher of an operation that has run
// longer than slowOpWatch.
func (c *conn) watchIfSlow(now time.Time) {
	o := &c.op
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.id == 0 || o.watch != nil || now.Sub(o.start) < slowOpWatch {
		return
	}
	sc, ok := socketOf(c.nc)
	if !ok {
		return
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return
	}
	o.watch = make(chan struct{})
	go c.watchDisconnect(rc, o.id, o.name, o.watch)
}

// watchDisconnect waits until the socket is readable and then peeks: end of
// file or an error means the client is gone, so its operation stops. Bytes
// (a pipelined request) end the watch without a verdict.
func (c *conn) watchDisconnect(rc syscall.RawConn, opid int64, name string, done chan struct{}) {
	defer close(done)
	var peek [1]byte
	gone := false
	rc.Read(func(fd uintptr) bool {
		n, _, err := unix.Recvfrom(int(fd), peek[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
		if errors.Is(err, unix.EAGAIN) {
			return false // wait until readable (or the deadline endOp sets)
		}
		gone = n == 0 || err != nil
		return true
	})
	if gone {
		ev := c.log.Info()
		if waitsByDesign[canonicalCommand(name)] {
			ev = c.log.Debug() // a client leaving while its hello or getMore waits: ordinary
		}
		ev.Str("c", "NETWORK").Int64("opid", opid).Str("command", name).Msg("client disconnected; interrupting its operation")
		c.kill(opid, errDisconnected)
	}
}

// watchSlowOps runs while the server does, starting disconnect watchers for
// operations that have become slow.
func (s *Server) watchSlowOps() {
	defer s.wg.Done()
	t := time.NewTicker(slowOpWatch)
	defer t.Stop()
	for {
		select {
		case <-s.done:
			return
		case now := <-t.C:
			for _, c := range s.connList() {
				c.watchIfSlow(now)
			}
		}
	}
}

// connList is a snapshot of the open connections.
func (s *Server) connList() []*conn {
	s.connsMu.Lock()
	defer s.connsMu.Unlock()
	out := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		out = append(out, c)
	}
	return out
}
