package server

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"time"
)

// EarlyHTTP is the HTTP listener opened before the storage engine
// recovers, so that health checks get an answer from the first moment:
// /livez answers ok, /readyz and every other path 503 ("recovering")
// until a Server takes the listener over (Config.EarlyHTTP) and serves
// its own handler on it, without closing it.
type EarlyHTTP struct {
	l       net.Listener
	srv     *http.Server
	handler atomic.Pointer[http.Handler]
}

// ListenEarlyHTTP opens and serves the early listener on addr (plain
// HTTP: a TLS listener opens with the server, after recovery).
func ListenEarlyHTTP(addr string) (*EarlyHTTP, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s (httpAddress): %w", addr, err)
	}
	e := &EarlyHTTP{l: l}
	e.srv = &http.Server{Handler: http.HandlerFunc(e.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := e.srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			l.Close()
		}
	}()
	return e, nil
}

func (e *EarlyHTTP) serve(w http.ResponseWriter, r *http.Request) {
	if h := e.handler.Load(); h != nil {
		(*h).ServeHTTP(w, r)
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	if r.URL.Path == "/livez" {
		io.WriteString(w, "ok\n")
		return
	}
	w.WriteHeader(http.StatusServiceUnavailable)
	io.WriteString(w, "recovering\n")
}

// Close closes the listener, for a start that failed before a server
// took it over.
func (e *EarlyHTTP) Close() error { return e.srv.Close() }

// Addr is the listener's address.
func (e *EarlyHTTP) Addr() net.Addr { return e.l.Addr() }
