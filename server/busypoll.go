package server

import (
	"errors"
	"net"
	"runtime"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// DefaultBusyPoll is how long an idle connection spins for its next
// request before it sleeps, when nothing else runs (see busyPoller).
const DefaultBusyPoll = 150 * time.Microsecond

// busyPoller lets one connection at a time spin for its next request
// instead of sleeping in the network poller. On virtual machines a CPU
// that goes idle halts, and both waking it for the next request and the
// disk flush that request then issues cost tens of microseconds more than
// on a busy CPU (docs/design/durability.md, "Latency of one client").
// Spinning is worth it only when the CPU would otherwise idle: it happens
// only while no command runs anywhere in the server, stops as soon as one
// starts, and never lasts longer than the configured window.
type busyPoller struct {
	window time.Duration
	rc     syscall.RawConn // nil: the connection cannot be polled
	peek   [1]byte
}

// newBusyPoller returns a poller for nc; it never spins with a single
// processor, where the spinning goroutine would keep every other request
// waiting for the scheduler to preempt it.
func newBusyPoller(nc net.Conn, window time.Duration) busyPoller {
	p := busyPoller{window: window}
	if sc, ok := nc.(syscall.Conn); ok && window > 0 && runtime.GOMAXPROCS(0) >= 2 {
		p.rc, _ = sc.SyscallConn()
	}
	return p
}

// await spins until bytes arrive on the connection, a command starts on
// the server, or the window passes. It reports nothing: the caller's
// blocking read follows either way.
func (p *busyPoller) await(s *Server) {
	if p.rc == nil || s.running.Load() > 0 || !s.spinning.CompareAndSwap(false, true) {
		return
	}
	defer s.spinning.Store(false)
	deadline := time.Now().Add(p.window)
	for s.running.Load() == 0 && time.Now().Before(deadline) {
		if p.readable() {
			return
		}
	}
}

// readable peeks at the socket without blocking or consuming anything.
func (p *busyPoller) readable() bool {
	ready := false
	err := p.rc.Read(func(fd uintptr) bool {
		n, _, err := unix.Recvfrom(int(fd), p.peek[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
		// n == 0 with no error is end of file, which the read reports.
		ready = n > 0 || err == nil || !errors.Is(err, unix.EAGAIN)
		return true
	})
	return ready || err != nil
}
