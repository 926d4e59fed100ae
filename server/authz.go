package server

import (
	"net"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"dumbodb/auth"
	"dumbodb/query/mongoerr"
)

// Authorization (docs/design/auth.md): with --auth, every command but the
// handshake and authentication ones needs an authenticated user whose
// roles grant the command's action on its database (or on the cluster).

// requirement is what a command needs: nothing (open), an authenticated
// user (anyUser), or privilege actions.
type requirement struct {
	open, anyUser bool
	action        auth.Action
}

var (
	openToAll = requirement{open: true}
	anyUser   = requirement{anyUser: true}
)

func needs(a auth.Action) requirement { return requirement{action: a} }

// connAuth is a connection's authentication: the user and what its roles
// grant, resolved at login; and a SASL conversation in progress.
type connAuth struct {
	user      *auth.User
	privs     *auth.Privileges
	conv      *auth.Conversation
	skipEmpty bool // the client asked for no empty last exchange
}

func (c *conn) authState() connAuth {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.auth
}

func (c *conn) setAuth(a connAuth) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.auth = a
}

// authorize refuses a command the connection may not run.
func (r *request) authorize() error {
	if !r.c.s.cfg.Auth || r.spec.need.open {
		return nil
	}
	a := r.c.authState()
	if a.user == nil {
		if r.localhostException() {
			return nil
		}
		return mongoerr.New(mongoerr.Unauthorized, "Command %s requires authentication", r.name)
	}
	if r.spec.need.anyUser || a.privs.Allows(r.spec.need.action, r.authzDB()) {
		return nil
	}
	return mongoerr.New(mongoerr.Unauthorized, "not authorized on %s to execute command %s", r.authzDB(), commandSummary(r.cmd))
}

// require checks an action a command needs for some of its arguments only
// (deleting a branch, a hard reset, $out's target) on database db.
func (r *request) require(a auth.Action, db string) error {
	if !r.c.s.cfg.Auth {
		return nil
	}
	st := r.c.authState()
	if st.user != nil && st.privs.Allows(a, db) {
		return nil
	}
	return mongoerr.New(mongoerr.Unauthorized, "not authorized on %s to execute command %s (it needs %v)", db, commandSummary(r.cmd), a.Names())
}

// authzDB is the database a command acts on: its $db, or for
// renameCollection the source namespace's.
func (r *request) authzDB() string {
	if r.name == "renameCollection" {
		if ns, ok := r.cmd.Lookup("renameCollection").StringValueOK(); ok {
			db, _, _ := strings.Cut(ns, ".")
			return db
		}
	}
	return r.db
}

// localhostException lets a client on the loopback address or the Unix
// socket create the first user (on admin) while no user exists, as mongod
// does.
func (r *request) localhostException() bool {
	if r.db != "admin" || r.name != "createUser" || r.c.s.users.HasUsers() {
		return false
	}
	switch addr := r.c.nc.RemoteAddr().(type) {
	case *net.UnixAddr:
		return true
	case *net.TCPAddr:
		return addr.IP.IsLoopback()
	}
	return false
}

// commandSummary is the command's first field, as mongod's Unauthorized
// message shows the command.
func commandSummary(cmd bsoncore.Document) string {
	el, err := cmd.IndexErr(0)
	if err != nil {
		return "{}"
	}
	return "{ " + el.Key() + ": " + el.Value().String() + " }"
}
