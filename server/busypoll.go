package server

import (
	"net"
	"runtime"
	"syscall"
	"time"
	"unsafe"

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
	ready  bool
	// peekFD is the peek rc.Read runs, made once for the poller at self:
	// a closure made per peek would be garbage the spinning makes by the
	// million.
	peekFD func(fd uintptr) bool
	self   *busyPoller
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
	if p.self != p { // first use, or a copy of another poller
		p.self, p.peekFD = p, p.peekSocket
	}
	p.ready = false
	err := p.rc.Read(p.peekFD)
	return p.ready || err != nil
}

// peekSocket is recv(2) of one byte with MSG_PEEK and MSG_DONTWAIT, made
// directly: unix.Recvfrom allocates the sender's address on every call.
func (p *busyPoller) peekSocket(fd uintptr) bool {
	n, _, errno := unix.Syscall6(unix.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&p.peek[0])), 1,
		unix.MSG_PEEK|unix.MSG_DONTWAIT, 0, 0)
	// n == 0 with no error is end of file, which the read reports.
	p.ready = int(n) > 0 || errno == 0 || errno != unix.EAGAIN
	return true
}
