package server

import (
	"context"
	"net"
	"sync"
	"time"
)

// authThrottle slows down repeated failed authentications from one source
// (an IP address, or the Unix socket): the first few answer at once, then
// each waits twice as long as the one before, up to a bound, so guessing
// passwords gets slow while a mistyped password costs nothing. A success
// from the source forgets its failures.
type authThrottle struct {
	mu    sync.Mutex
	fails map[string]*authFailures
}

type authFailures struct {
	n    int
	last time.Time
}

const (
	throttleFree   = 3                      // failures answered at once
	throttleBase   = 100 * time.Millisecond // the wait after them, doubling
	throttleMax    = 5 * time.Second
	throttleForget = 10 * time.Minute // a source's failures are forgotten after this
	throttleSize   = 10000            // sources remembered before old ones are dropped
)

// failed records a failure from src and returns how long its answer waits
// and how many failures src has in a row.
func (t *authThrottle) failed(src string, now time.Time) (time.Duration, int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.fails == nil {
		t.fails = map[string]*authFailures{}
	}
	if len(t.fails) >= throttleSize {
		t.forgetOld(now)
	}
	f := t.fails[src]
	if f == nil || now.Sub(f.last) > throttleForget {
		f = &authFailures{}
		t.fails[src] = f
	}
	f.n++
	f.last = now
	if f.n <= throttleFree {
		return 0, f.n
	}
	wait := throttleBase << min(f.n-throttleFree-1, 10)
	return min(wait, throttleMax), f.n
}

// succeeded forgets src's failures.
func (t *authThrottle) succeeded(src string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.fails, src)
}

// forgetOld drops the sources whose last failure is old. Called with mu.
func (t *authThrottle) forgetOld(now time.Time) {
	for src, f := range t.fails {
		if now.Sub(f.last) > throttleForget {
			delete(t.fails, src)
		}
	}
}

// authSource names a connection's source for the throttle.
func (c *conn) authSource() string {
	switch addr := c.nc.RemoteAddr().(type) {
	case *net.TCPAddr:
		return addr.IP.String()
	case *net.UnixAddr:
		return "unix"
	}
	return c.nc.RemoteAddr().String()
}

// wait sleeps for d unless ctx ends first.
func wait(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
