package server

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/dumbodb/dumbodb/auth"
	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/storage"
)

// Serving the databases as remotes on the HTTP listener
// (docs/format/remote-http.md): other servers fetch, pull, clone, push
// and follow them as replicas, as the same users with the same rights as
// on the wire protocol.

// httpRemotePath is the protocol's path prefix.
const httpRemotePath = "/remote/v1/"

// Bounds of the protocol's requests.
const (
	maxHashRequest   = storage.MaxRemoteHashes * 20
	maxListWait      = 60 * time.Second
	listWaitInterval = 100 * time.Millisecond
)

// httpCaller is who sent an HTTP request: with --auth, an authenticated
// user and what its roles grant; without, anyone, allowed everything.
type httpCaller struct {
	user  *auth.User
	privs *auth.Privileges
}

// authenticate checks a request's basic credentials (with --auth).
func (s *Server) authenticate(r *http.Request) (httpCaller, error) {
	if !s.cfg.Auth {
		return httpCaller{}, nil
	}
	name, password, ok := r.BasicAuth()
	if !ok {
		return httpCaller{}, mongoerr.New(mongoerr.AuthenticationFailed, "this server requires authentication: send HTTP basic credentials")
	}
	db := r.Header.Get("X-Dumbo-Auth-Source")
	if db == "" {
		db = "admin"
	}
	u, err := s.users.CheckPassword(db, name, password)
	if err != nil {
		s.log.Info().Str("c", "ACCESS").Str("user", name).Str("db", db).Str("remote", r.RemoteAddr).
			Msg("HTTP authentication failed")
		return httpCaller{}, mongoerr.New(mongoerr.AuthenticationFailed, "Authentication failed.")
	}
	privs, err := s.users.Resolve(u.Roles)
	if err != nil {
		privs = &auth.Privileges{}
	}
	return httpCaller{user: u, privs: privs}, nil
}

// allows reports whether the caller may take action a on db.
func (c httpCaller) allows(s *Server, a auth.Action, db string) bool {
	return !s.cfg.Auth || c.privs.Allows(a, db)
}

// require refuses the caller an action it lacks on db.
func (c httpCaller) require(s *Server, a auth.Action, db, what string) error {
	if c.allows(s, a, db) {
		return nil
	}
	return mongoerr.New(mongoerr.Unauthorized, "not authorized on %s to %s (it needs %v)", db, what, a.Names())
}

// handleRemote routes a request of the remote protocol.
func (s *Server) handleRemote(w http.ResponseWriter, r *http.Request) {
	caller, err := s.authenticate(r)
	if err != nil {
		writeHTTPError(w, err)
		return
	}
	rest := strings.TrimPrefix(r.URL.Path, httpRemotePath)
	if rest == "" && r.Method == http.MethodGet {
		s.serveRemoteList(w, r, caller)
		return
	}
	db, op, _ := strings.Cut(rest, "/")
	op, pushID, isPush := pushOp(op)
	handler, ok := remoteHandlers[r.Method+" "+op]
	if !ok || (isPush && !storage.ValidPushID(pushID)) {
		writeHTTPError(w, mongoerr.New(mongoerr.NamespaceNotFound, "no such request: %s %s", r.Method, r.URL.Path))
		return
	}
	if err := caller.require(s, auth.Find, db, "read it as a remote"); err != nil {
		writeHTTPError(w, err)
		return
	}
	d, err := s.engine.Database(r.Context(), db, false)
	if err == nil && d == nil {
		err = mongoerr.New(mongoerr.NamespaceNotFound, "database %s does not exist on this server", db)
	}
	if err != nil {
		writeHTTPError(w, err)
		return
	}
	handler(s, w, r, caller, d, pushID)
}

// remoteHandler answers one request of the protocol on database d;
// pushID names the push of the push requests.
type remoteHandler func(s *Server, w http.ResponseWriter, r *http.Request, caller httpCaller, d *storage.Database, pushID string)

// remoteHandlers are the protocol's requests by method and operation.
var remoteHandlers = map[string]remoteHandler{
	http.MethodGet + " refs":         (*Server).serveRemoteRefs,
	http.MethodPost + " has":         (*Server).serveRemoteHas,
	http.MethodPost + " chunks":      (*Server).serveRemoteChunks,
	http.MethodPost + " push":        (*Server).serveRemotePush,
	http.MethodPost + " push/has":    (*Server).servePushHas,
	http.MethodPost + " push/chunks": (*Server).servePushChunks,
}

// pushOp splits a push's path, push/<id>[/has|/chunks], into the
// operation (push, push/has, push/chunks) and the push's id.
func pushOp(op string) (string, string, bool) {
	rest, ok := strings.CutPrefix(op, "push/")
	if !ok {
		if op == "push" {
			return "push without its id", "", false
		}
		return op, "", false
	}
	id, sub, _ := strings.Cut(rest, "/")
	if sub == "" {
		return "push", id, true
	}
	return "push/" + sub, id, true
}

// serveRemoteList answers the databases the caller may read, and their
// refs' token; with wait, once the token differs from it.
func (s *Server) serveRemoteList(w http.ResponseWriter, r *http.Request, caller httpCaller) {
	wait := r.URL.Query().Get("wait")
	timeout, _ := strconv.Atoi(r.URL.Query().Get("timeoutMs"))
	deadline := time.Now().Add(min(time.Duration(timeout)*time.Millisecond, maxListWait))
	for {
		names, token, err := s.remoteListing(r.Context(), caller)
		if err != nil {
			writeHTTPError(w, err)
			return
		}
		if wait == "" || token != wait || !time.Now().Before(deadline) || !s.sleepOrDone(r.Context(), listWaitInterval) {
			writeJSON(w, http.StatusOK, map[string]any{
				"protocol": 1, "format": storage.RemoteFormat, "databases": names, "token": token,
			})
			return
		}
	}
}

// remoteListing is the databases the caller may read and their token.
func (s *Server) remoteListing(ctx context.Context, caller httpCaller) ([]string, string, error) {
	all, err := s.engine.DatabaseNames()
	if err != nil {
		return nil, "", err
	}
	names := []string{}
	for _, n := range all {
		if caller.allows(s, auth.Find, n) {
			names = append(names, n)
		}
	}
	token, err := s.engine.RefsToken(ctx, names)
	return names, token, err
}

// sleepOrDone waits d; false when the request or the server ended first.
func (s *Server) sleepOrDone(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
	case <-s.done:
	}
	return false
}

func (s *Server) serveRemoteRefs(w http.ResponseWriter, r *http.Request, _ httpCaller, d *storage.Database, _ string) {
	refs, err := d.ServedRefs(r.Context())
	if err != nil {
		writeHTTPError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"format": storage.RemoteFormat, "refs": refs})
}

// readHashRequest reads a has or chunks request's body.
func readHashRequest(r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, maxHashRequest))
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return nil, mongoerr.New(mongoerr.BadValue, "a request of more than %d addresses", storage.MaxRemoteHashes)
	}
	return body, err
}

func (s *Server) serveRemoteHas(w http.ResponseWriter, r *http.Request, _ httpCaller, d *storage.Database, _ string) {
	body, err := readHashRequest(r)
	if err == nil {
		body, err = d.ServeHas(r.Context(), body)
	}
	if err != nil {
		writeHTTPError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Write(body)
}

func (s *Server) serveRemoteChunks(w http.ResponseWriter, r *http.Request, _ httpCaller, d *storage.Database, _ string) {
	body, err := readHashRequest(r)
	if err != nil {
		writeHTTPError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	cw := &countingWriter{w: w}
	if err := d.ServeChunks(r.Context(), body, cw); err != nil {
		if cw.n == 0 {
			writeHTTPError(w, err)
			return
		}
		// The answer has begun: cut it, so the client sees a short body.
		s.log.Warn().Str("c", "NETWORK").Err(err).Str("db", d.Name()).Msg("serving chunks failed")
		panic(http.ErrAbortHandler)
	}
}

// countingWriter counts what went through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// requirePush refuses a push's requests to a replica and to a caller
// without dumboVersionWrite.
func (s *Server) requirePush(caller httpCaller, db string) error {
	if s.cfg.replica() {
		return mongoerr.New(mongoerr.NotWritablePrimary, "not primary: this server is a read replica")
	}
	return caller.require(s, auth.VCWrite, db, "push to it")
}

// servePushHas answers which chunks the push's cache lacks.
func (s *Server) servePushHas(w http.ResponseWriter, r *http.Request, caller httpCaller, d *storage.Database, id string) {
	err := s.requirePush(caller, d.Name())
	var body []byte
	if err == nil {
		body, err = readHashRequest(r)
	}
	if err == nil {
		body, err = d.ServePushHas(r.Context(), id, body)
	}
	if err != nil {
		writeHTTPError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Write(body)
}

// servePushChunks takes a push's chunks into its cache.
func (s *Server) servePushChunks(w http.ResponseWriter, r *http.Request, caller httpCaller, d *storage.Database, id string) {
	err := s.requirePush(caller, d.Name())
	if err == nil {
		err = d.ReceivePushChunks(r.Context(), id, r.Body)
	}
	if err != nil {
		writeHTTPError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"ok": 1})
}

// serveRemotePush applies a push, each update checked against the
// caller's rights: dumboVersionWrite, dumboVersionAdmin to force or
// delete, a protected branch's roles.
func (s *Server) serveRemotePush(w http.ResponseWriter, r *http.Request, caller httpCaller, d *storage.Database, id string) {
	db := d.Name()
	if err := s.requirePush(caller, db); err != nil {
		writeHTTPError(w, err)
		return
	}
	allow := func(u storage.PushUpdate) error {
		if u.Force || u.New == "" {
			if err := caller.require(s, auth.VCAdmin, db, "force a push or delete a ref"); err != nil {
				return err
			}
		}
		if u.Branch != "" {
			return s.checkBranchWrite(caller.user, db, u.Branch)
		}
		return nil
	}
	updated, err := d.ReceivePush(r.Context(), id, r.Body, allow)
	if err != nil {
		writeHTTPError(w, err)
		return
	}
	out := []map[string]string{}
	for _, u := range updated {
		out = append(out, map[string]string{"ref": u.Name, "from": u.Old, "to": u.New})
	}
	s.log.Info().Str("c", "REPL").Str("db", db).Str("remote", r.RemoteAddr).Int("refs", len(out)).Msg("received a push")
	writeJSON(w, http.StatusOK, map[string]any{"ok": 1, "updated": out})
}
