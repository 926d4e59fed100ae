package server

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"dumbodb/mongoerr"
)

// The HTTP listener (Config.HTTPAddress; docs/design/http.md): off by
// default; it serves the databases as remotes to other servers
// (http_remote.go), over TLS when the server has a certificate.

// httpListener is the listener's state: nil until Listen opens it.
type httpListener struct {
	l   net.Listener
	srv *http.Server
}

// listenHTTP opens the HTTP listener when one is configured.
func (s *Server) listenHTTP() error {
	if s.cfg.HTTPAddress == "" {
		return nil
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
	mux := http.NewServeMux()
	mux.HandleFunc(httpRemotePath, s.handleRemote)
	s.http = &httpListener{l: l, srv: &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          nil,
	}}
	return nil
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
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := s.http.srv.Serve(s.http.l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Warn().Str("c", "NETWORK").Err(err).Msg("HTTP listener stopped")
		}
	}()
}

// shutdownHTTP stops the HTTP listener: requests in flight may finish
// until ctx ends, long polls are cut at once.
func (s *Server) shutdownHTTP(ctx context.Context) {
	if s.http == nil {
		return
	}
	if err := s.http.srv.Shutdown(ctx); err != nil {
		s.http.srv.Close()
	}
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
