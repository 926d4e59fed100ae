package server

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/pprof"
	"strings"
	"time"

	"github.com/dumbodb/dumbodb/auth"
	"github.com/dumbodb/dumbodb/mongoerr"
)

// The HTTP listener (Config.HTTPAddress; docs/design/http.md): off by
// default; it serves the databases as remotes to other servers
// (http_remote.go), Prometheus metrics (metrics.go), health checks and,
// with Config.HTTPDebug, Go's profiler; over TLS when the server has a
// certificate.

// httpListener is the listener's state: nil until Listen opens it.
type httpListener struct {
	l   net.Listener
	srv *http.Server
	// early: the listener and its server run since before recovery
	// (EarlyHTTP), and take the mux as their handler.
	early *EarlyHTTP
}

// listenHTTP opens the HTTP listener when one is configured.
func (s *Server) listenHTTP() error {
	if s.cfg.HTTPAddress == "" {
		return nil
	}
	if early := s.cfg.EarlyHTTP; early != nil && s.tlsConfig == nil {
		mux := s.httpMux()
		s.http = &httpListener{l: early.l, srv: early.srv, early: early}
		early.handler.Store(&mux)
		return nil
	}
	if s.cfg.EarlyHTTP != nil {
		s.cfg.EarlyHTTP.Close() // TLS: the listener opens anew, with the server's certificate
	}
	l, err := net.Listen("tcp", s.cfg.HTTPAddress)
	if err != nil {
		return fmt.Errorf("listen on %s (httpAddress): %w", s.cfg.HTTPAddress, err)
	}
	if s.tlsConfig != nil {
		cfg := s.tlsConfig.Clone()
		cfg.NextProtos = []string{"http/1.1"}
		l = tls.NewListener(l, cfg)
	}
	s.http = &httpListener{l: l, srv: &http.Server{
		Handler:           s.httpMux(),
		ReadHeaderTimeout: 10 * time.Second,
		// The listener's own complaints (a failed TLS handshake, a
		// request that does not parse) go to the server's log.
		ErrorLog: log.New(httpErrorLog{s}, "", 0),
	}}
	return nil
}

// httpMount is a handler HandleHTTP put on the listener.
type httpMount struct {
	pattern string
	handler http.Handler
}

// HandleHTTP serves h for pattern (net/http's ServeMux patterns) on the
// HTTP listener; call it before Listen. A handler with a method
// Close(context.Context) error is closed when the server shuts down.
func (s *Server) HandleHTTP(pattern string, h http.Handler) {
	s.httpMounts = append(s.httpMounts, httpMount{pattern, h})
}

// httpMux is what the HTTP listener serves.
func (s *Server) httpMux() http.Handler {
	mux := http.NewServeMux()
	for _, m := range s.httpMounts {
		mux.Handle(m.pattern, m.handler)
	}
	mux.HandleFunc(httpRemotePath, s.handleRemote)
	mux.HandleFunc("GET /metrics", s.handleMetrics)
	mux.HandleFunc("GET /livez", s.handleLive)
	mux.HandleFunc("GET /readyz", s.handleReady)
	if s.cfg.HTTPDebug {
		mux.HandleFunc("/debug/pprof/", s.authenticated(auth.ServerStatus, pprof.Index))
		mux.HandleFunc("/debug/pprof/cmdline", s.authenticated(auth.ServerStatus, pprof.Cmdline))
		mux.HandleFunc("/debug/pprof/profile", s.authenticated(auth.ServerStatus, pprof.Profile))
		mux.HandleFunc("/debug/pprof/symbol", s.authenticated(auth.ServerStatus, pprof.Symbol))
		mux.HandleFunc("/debug/pprof/trace", s.authenticated(auth.ServerStatus, pprof.Trace))
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeHTTPError(w, mongoerr.New(mongoerr.NamespaceNotFound, "no such path: %s", r.URL.Path))
	})
	return mux
}

// httpErrorLog writes net/http's error lines as debug lines of the
// server's log: they are about a client's mistakes.
type httpErrorLog struct{ s *Server }

func (l httpErrorLog) Write(p []byte) (int, error) {
	l.s.log.Debug().Str("c", "NETWORK").Msg(strings.TrimSpace(string(p)))
	return len(p), nil
}

// HTTPAddr is the HTTP listener's address (nil: none).
func (s *Server) HTTPAddr() net.Addr {
	if s.http == nil {
		return nil
	}
	return s.http.l.Addr()
}

// serveHTTP serves the HTTP listener until Shutdown.
func (s *Server) serveHTTP() {
	if s.http == nil {
		return
	}
	scheme := "http"
	if s.tlsConfig != nil {
		scheme = "https"
	}
	s.log.Info().Str("c", "NETWORK").Str("address", s.http.l.Addr().String()).Str("scheme", scheme).
		Msg("Waiting for HTTP requests")
	if s.http.early != nil {
		return // served since before recovery
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := s.http.srv.Serve(s.http.l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Warn().Str("c", "NETWORK").Err(err).Msg("HTTP listener stopped")
		}
	}()
}

// shutdownHTTP stops the HTTP listener: requests in flight may finish
// until ctx ends, long polls are cut at once. Then the mounted handlers
// that hold clients of the server (the console's) close them, while the
// server still serves their connections.
func (s *Server) shutdownHTTP(ctx context.Context) {
	if s.http == nil {
		return
	}
	if err := s.http.srv.Shutdown(ctx); err != nil {
		s.http.srv.Close()
	}
	for _, m := range s.httpMounts {
		if c, ok := m.handler.(interface{ Close(context.Context) error }); ok {
			if err := c.Close(ctx); err != nil {
				s.log.Debug().Str("c", "NETWORK").Err(err).Str("path", m.pattern).Msg("closing an HTTP handler")
			}
		}
	}
}

// authenticated wraps a handler that needs the cluster action a (with
// --auth).
func (s *Server) authenticated(a auth.Action, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		caller, err := s.authenticate(r)
		if err == nil {
			err = caller.require(s, a, "admin", "read the server's metrics")
		}
		if err != nil {
			writeHTTPError(w, err)
			return
		}
		h(w, r)
	}
}

// handleMetrics serves the Prometheus metrics (metrics.go) to users with
// serverStatus (clusterMonitor's action).
func (s *Server) handleMetrics(w http.ResponseWriter, r *http.Request) {
	s.authenticated(auth.ServerStatus, s.metrics.handler().ServeHTTP)(w, r)
}

// handleLive answers 200 while the server runs: it needs no login.
func (s *Server) handleLive(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain")
	io.WriteString(w, "ok\n")
}

// handleReady answers 200 while the server takes commands (503 once it
// is shutting down; on a replica, until its first sync): it needs no
// login.
func (s *Server) handleReady(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain")
	if reason := s.notReady(); reason != "" {
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, reason+"\n")
		return
	}
	io.WriteString(w, "ok\n")
}

// notReady is why the server does not take commands now ("": it does).
func (s *Server) notReady() string {
	if s.closing.Load() {
		return "shutting down"
	}
	if s.cfg.replica() && !s.replica.synced() {
		return "a replica that has not synced yet"
	}
	return ""
}

// httpStatus is the HTTP status an error's code answers with.
func httpStatus(c mongoerr.Code) int {
	switch c {
	case mongoerr.AuthenticationFailed:
		return http.StatusUnauthorized
	case mongoerr.Unauthorized:
		return http.StatusForbidden
	case mongoerr.NamespaceNotFound, mongoerr.RemoteNotFound, mongoerr.RevisionNotFound:
		return http.StatusNotFound
	case mongoerr.NotFastForward, mongoerr.DirtyWorkingSet, mongoerr.RefExists, mongoerr.IllegalOperation,
		mongoerr.NotWritablePrimary:
		return http.StatusConflict
	case mongoerr.BadValue, mongoerr.FailedToParse, mongoerr.InvalidNamespace:
		return http.StatusBadRequest
	case mongoerr.InterruptedAtShutdown:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// writeHTTPError answers err in MongoDB's error shape, as JSON.
func writeHTTPError(w http.ResponseWriter, err error) {
	me := toMongoErr(err)
	if me.Code == mongoerr.AuthenticationFailed {
		w.Header().Set("WWW-Authenticate", `Basic realm="dumbodb"`)
	}
	writeJSON(w, httpStatus(me.Code), map[string]any{
		"ok": 0, "code": int32(me.Code), "codeName": me.Code.Name(), "errmsg": me.Msg,
	})
}

// writeJSON answers v as JSON with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}
