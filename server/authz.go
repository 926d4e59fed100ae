package server

import (
	"net"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/auth"
	"github.com/dumbodb/dumbodb/mongoerr"
)

// Authorization (docs/design/auth.md): with --auth, every command but the
// handshake and authentication ones needs an authenticated user whose
// roles grant the command's action on its database (or on the cluster).

// requirement is what a command needs: nothing (open), an authenticated
// user (anyUser), privilege actions, or what its arguments name, which
// its handler checks (byArguments: the role commands, whose rights depend
// on the databases of the roles and privileges they give or take).
type requirement struct {
	open, anyUser, byArguments bool
	action                     auth.Action
}

var (
	openToAll   = requirement{open: true}
	anyUser     = requirement{anyUser: true}
	byArguments = requirement{anyUser: true, byArguments: true}
)

func needs(a auth.Action) requirement { return requirement{action: a} }

// connAuth is a connection's authentication: the user and what its roles
// grant, resolved at login; and a SASL conversation in progress, which
// leaves the user logged in until it succeeds, as on mongod.
type connAuth struct {
	user      *auth.User
	privs     *auth.Privileges
	gen       uint64 // the users file's generation privs were resolved at
	conv      *auth.Conversation
	skipEmpty bool // the client asked for no empty last exchange
	proven    bool // conv's proof was checked: only its empty last exchange remains
}

// current re-resolves a logged-in user's privileges when a user or role
// changed since (a grant, a revoke, a dropped user applies at once, as on
// mongod); a dropped user is logged out.
func (c *conn) currentAuth() connAuth {
	a := c.authState()
	store := c.s.users
	if a.user == nil || a.gen == store.Generation() {
		return a
	}
	gen := store.Generation()
	u, ok := store.User(a.user.DB, a.user.Name)
	if !ok {
		a = connAuth{}
	} else if privs, err := store.Resolve(u.Roles); err == nil {
		a.user, a.privs, a.gen = u, privs, gen
	} else {
		a.privs, a.gen = &auth.Privileges{}, gen // a role it names is gone: nothing
	}
	c.setAuth(a)
	return a
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
	a := r.c.currentAuth()
	if a.user == nil {
		if r.localhostException() {
			return nil
		}
		return mongoerr.New(mongoerr.Unauthorized, "Command %s requires authentication", r.name)
	}
	if r.spec.need.anyUser || a.privs.AllowsOn(r.spec.need.action, r.authzDB(), r.authzCollection()) {
		return r.checkProtectedWrite(a)
	}
	return r.notAuthorized()
}

// notAuthorized is mongod's answer to a command its user may not run.
func (r *request) notAuthorized() error {
	return mongoerr.New(mongoerr.Unauthorized, "not authorized on %s to execute command %s", r.authzDB(), commandSummary(r.cmd))
}

// require checks an action a command needs for some of its arguments only
// (deleting a branch, a hard reset, $out's target) on database db.
func (r *request) require(a auth.Action, db string) error {
	if !r.c.s.cfg.Auth {
		return nil
	}
	st := r.c.currentAuth()
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

// authzCollection is the collection a command acts on, when its first
// field names one (find, insert, ...), for privileges on a collection.
func (r *request) authzCollection() string {
	if r.name == "renameCollection" {
		ns, _ := r.cmd.Lookup("renameCollection").StringValueOK()
		_, coll, _ := strings.Cut(ns, ".")
		return coll
	}
	coll, _ := r.cmd.Index(0).Value().StringValueOK()
	return coll
}

// localhostException lets a client on the loopback address or the Unix
// socket create the first user (on admin) while no user exists, as mongod
// does.
func (r *request) localhostException() bool {
	if r.db != "admin" || r.name != "createUser" || r.c.s.users.HasUsers() {
		return false
	}
	return r.c.fromThisHost()
}

// fromThisHost reports whether the connection comes from the loopback
// address or the Unix socket.
func (c *conn) fromThisHost() bool {
	switch addr := c.nc.RemoteAddr().(type) {
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
