package server

import (
	"context"
	"net"
	"sync"
	"time"
)

// authThrottle slows down repeated failed authentications: the first few
// answer at once, then each waits twice as long as the one before, up to a
// bound, so guessing passwords gets slow while a mistyped password costs
// nothing. Failures are counted per source (an IP address, or the Unix
// socket) and user name, and per source over all names: a success forgets
// only its own user's failures from that source, so logging in as one
// user does not forgive guesses at another's password, and spreading
// guesses over many names meets the source's count.
type authThrottle struct {
	mu    sync.Mutex
	fails map[string]*authFailures
}

type authFailures struct {
	n    int
	last time.Time
}

const (
	throttleFree       = 3                      // failures of one user name answered at once
	throttleSourceFree = 20                     // failures from one source, over all names, answered at once
	throttleBase       = 100 * time.Millisecond // the wait after them, doubling
	throttleMax        = 5 * time.Second
	throttleForget     = 10 * time.Minute // failures are forgotten after this
	throttleSize       = 10000            // counts remembered before old ones are dropped
)

// failed records a failure for user from src and returns how long its
// answer waits and how many failures of that user from src came in a row.
func (t *authThrottle) failed(src, user string, now time.Time) (time.Duration, int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.fails == nil {
		t.fails = map[string]*authFailures{}
	}
	if len(t.fails) >= throttleSize {
		t.forgetOld(now)
	}
	n := t.count(throttleKey(src, user), now)
	all := t.count(src, now)
	return max(throttleWait(n, throttleFree), throttleWait(all, throttleSourceFree)), n
}

// count adds a failure to key's count and returns it. Called with mu.
func (t *authThrottle) count(key string, now time.Time) int {
	f := t.fails[key]
	if f == nil || now.Sub(f.last) > throttleForget {
		f = &authFailures{}
		t.fails[key] = f
	}
	f.n++
	f.last = now
	return f.n
}

// throttleWait is the wait for the n-th failure in a row when the first
// free ones answer at once.
func throttleWait(n, free int) time.Duration {
	if n <= free {
		return 0
	}
	return min(throttleBase<<min(n-free-1, 10), throttleMax)
}

// throttleKey names a user's failures from a source (a NUL cannot be in
// an address).
func throttleKey(src, user string) string { return src + "\x00" + user }

// succeeded forgets user's failures from src (not the source's count).
func (t *authThrottle) succeeded(src, user string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.fails, throttleKey(src, user))
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
