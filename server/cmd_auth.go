package server

import (
	"crypto/tls"
	"errors"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/auth"
	"github.com/dumbodb/dumbodb/mongoerr"
)

// SCRAM authentication over saslStart and saslContinue (mongod's protocol,
// docs/design/auth.md): one conversation per connection; a successful one
// logs the connection in as its user, with the privileges its roles grant.

// saslConversationID is the id of the connection's one conversation.
const saslConversationID = 1

func cmdSaslStart(r *request) (bsoncore.Document, error) {
	var mech string
	var payload []byte
	var opts bsoncore.Document
	err := r.parseArgs(map[string]fieldHandler{
		"mechanism":     r.stringArg("mechanism", &mech),
		"payload":       binaryArg(r, "payload", &payload),
		"autoAuthorize": r.ignoredArg("autoAuthorize", "bool"),
		"options":       r.docArg("options", &opts),
	})
	if err != nil {
		return nil, err
	}
	skipEmpty, _ := asBool(opts.Lookup("skipEmptyExchange"))
	return r.saslStart(r.db, mech, payload, skipEmpty)
}

// saslStart begins a conversation against the users of db.
func (r *request) saslStart(db, mech string, payload []byte, skipEmpty bool) (bsoncore.Document, error) {
	if err := r.c.s.mechanismEnabled(mech); err != nil {
		return nil, err
	}
	conv, err := r.c.s.users.StartConversation(mech, db)
	if err != nil {
		return nil, mongoerr.New(mongoerr.MechanismUnavailable, "%s", strings.TrimPrefix(err.Error(), auth.ErrMechanism.Error()+": "))
	}
	// A new conversation replaces any other, but the connection stays
	// logged in as it was until this one succeeds: a client may
	// authenticate again on a connection that is already authenticated.
	a := r.c.authState()
	a.conv, a.skipEmpty, a.proven = nil, false, false
	out, done, err := conv.Step(payload)
	if err != nil {
		r.c.setAuth(a)
		return nil, r.authFailed(conv, err)
	}
	a.conv, a.skipEmpty = conv, skipEmpty
	r.c.setAuth(a)
	return saslReply(done, out), nil
}

func cmdSaslContinue(r *request) (bsoncore.Document, error) {
	var id int64
	var payload []byte
	err := r.parseArgs(map[string]fieldHandler{
		"conversationId": r.int64Arg("conversationId", &id),
		"payload":        binaryArg(r, "payload", &payload),
	})
	if err != nil {
		return nil, err
	}
	a := r.c.authState()
	if a.conv == nil || id != saslConversationID {
		return nil, mongoerr.New(mongoerr.ProtocolError, "No SASL session state found")
	}
	if a.proven { // this is the empty last exchange
		a.conv, a.proven = nil, false
		r.c.setAuth(a)
		return saslReply(true, nil), nil
	}
	out, done, err := a.conv.Step(payload)
	if err != nil {
		conv := a.conv
		a.conv = nil // a failed attempt leaves the user logged in, if any
		r.c.setAuth(a)
		return nil, r.authFailed(conv, err)
	}
	if !done {
		return saslReply(false, out), nil
	}
	return r.login(a, out)
}

// login makes the conversation's user the connection's.
func (r *request) login(a connAuth, final []byte) (bsoncore.Document, error) {
	u := a.conv.User()
	if err := r.secondLogin(a.user, u); err != nil {
		a.conv = nil
		r.c.setAuth(a)
		return nil, err
	}
	gen := r.c.s.users.Generation()
	privs, err := r.c.s.users.Resolve(u.Roles)
	if err != nil {
		return nil, mongoerr.New(mongoerr.RoleNotFound, "%v", err)
	}
	next := connAuth{user: u, privs: privs, gen: gen, conv: a.conv, proven: true}
	if a.skipEmpty {
		next.conv, next.proven = nil, false
	}
	r.c.setAuth(next)
	r.c.s.authThrottle.succeeded(r.c.authSource(), u.Name+"@"+u.DB)
	r.c.log.Info().Str("c", "ACCESS").Str("user", u.Name).Str("db", u.DB).Str("mechanism", a.conv.Mechanism()).
		Str("remote", r.c.nc.RemoteAddr().String()).Msg("Successfully authenticated")
	return saslReply(a.skipEmpty, final), nil
}

// secondLogin refuses to log a connection that is logged in as one user
// in as another, as mongod does: each connection authenticates as one
// user at most, though it may authenticate as that user again. mongod's
// two codes are kept as it assigns them (5626701 for a user of another
// database, 5626702 for another user of the same one), words included.
// Under the Stable API's apiStrict not even the same user may log in
// again (5626703).
func (r *request) secondLogin(current, next *auth.User) error {
	switch {
	case current == nil:
		return nil
	case current.DB == next.DB && current.Name == next.Name:
		if strict, _ := asBool(r.arg("apiStrict")); strict {
			return mongoerr.New(mongoerr.Location5626703, "Each client connection may only be authenticated once")
		}
		return nil
	case current.DB != next.DB:
		return mongoerr.New(mongoerr.Location5626701, "Each client connection may only be authenticated once. Previously authenticated as: %s@%s", current.Name, current.DB)
	}
	return mongoerr.New(mongoerr.Location5626702, "Client has attempted to authenticate on multiple databases.Already authenticated as: %s@%s", current.Name, current.DB)
}

// throttleFailure counts a failed authentication of user and returns how
// long its answer waits (authThrottle). Without --auth a password guards
// nothing, so nothing waits, as on mongod (authFailedDelayMs 0).
func (r *request) throttleFailure(user string) (time.Duration, int) {
	if !r.c.s.cfg.Auth {
		return 0, 0
	}
	return r.c.s.authThrottle.failed(r.c.authSource(), user, time.Now())
}

// authFailed logs a failed authentication (never the password) and gives
// the client mongod's answer, which says nothing of why.
func (r *request) authFailed(conv *auth.Conversation, err error) error {
	delay, n := r.throttleFailure(conv.UserName() + "@" + conv.DB())
	r.c.log.Info().Str("c", "ACCESS").Str("user", conv.UserName()).Str("db", conv.DB()).Str("mechanism", conv.Mechanism()).
		Str("remote", r.c.nc.RemoteAddr().String()).Str("reason", err.Error()).Int("failuresInARow", n).
		Dur("delayMillis", delay).Msg("Authentication failed")
	wait(r.ctx, delay)
	if errors.Is(err, auth.ErrMechanism) {
		return mongoerr.New(mongoerr.MechanismUnavailable, "Unable to use %s based authentication for user without any %s credentials registered", conv.Mechanism(), conv.Mechanism())
	}
	return mongoerr.New(mongoerr.AuthenticationFailed, "Authentication failed.")
}

func saslReply(done bool, payload []byte) bsoncore.Document {
	return bsoncore.NewDocumentBuilder().AppendInt32("conversationId", saslConversationID).
		AppendBoolean("done", done).AppendBinary("payload", 0, payload).AppendDouble("ok", 1).Build()
}

// externalDB is where users that authenticate outside the server's own
// credentials live: x.509 users, named by their certificate's subject.
const externalDB = "$external"

// cmdAuthenticate is the authenticate command, which carries the
// mechanisms that are not SASL conversations: MONGODB-X509, on $external.
func cmdAuthenticate(r *request) (bsoncore.Document, error) {
	var mech, user string
	err := r.parseArgs(map[string]fieldHandler{
		"mechanism": r.stringArg("mechanism", &mech),
		"user":      r.stringArg("user", &user),
	})
	if err != nil {
		return nil, err
	}
	if mech != mechX509 {
		return nil, mongoerr.New(mongoerr.MechanismUnavailable, "Received authentication for mechanism %s which is not enabled", mech)
	}
	return r.authenticateX509(r.db, user)
}

// mechX509 authenticates a client by the certificate it presented over TLS.
const mechX509 = "MONGODB-X509"

// authenticateX509 logs the connection in as the $external user named by
// its verified client certificate's subject (user, when given, must be
// that name), as mongod does.
func (r *request) authenticateX509(db, user string) (bsoncore.Document, error) {
	if err := r.c.s.mechanismEnabled(mechX509); err != nil {
		return nil, err
	}
	if db != externalDB {
		return nil, mongoerr.New(mongoerr.ProtocolError, "X.509 authentication must always use the $external database.")
	}
	tc, ok := r.c.nc.(*tls.Conn)
	if !ok || len(tc.ConnectionState().VerifiedChains) == 0 {
		return nil, r.x509Failed(user, "no verified client certificate: connect with TLS and a certificate of the server's --tlsCAFile")
	}
	subject := tc.ConnectionState().PeerCertificates[0].Subject.String()
	if user != "" && user != subject {
		return nil, r.x509Failed(user, "the user is not the certificate's subject "+subject)
	}
	u, ok := r.c.s.users.User(externalDB, subject)
	if !ok {
		return nil, r.x509Failed(subject, "no such user in $external")
	}
	if err := r.secondLogin(r.c.authState().user, u); err != nil {
		return nil, err
	}
	gen := r.c.s.users.Generation()
	privs, err := r.c.s.users.Resolve(u.Roles)
	if err != nil {
		return nil, mongoerr.New(mongoerr.RoleNotFound, "%v", err)
	}
	r.c.setAuth(connAuth{user: u, privs: privs, gen: gen})
	r.c.s.authThrottle.succeeded(r.c.authSource(), subject+"@"+externalDB)
	r.c.log.Info().Str("c", "ACCESS").Str("user", subject).Str("db", externalDB).Str("mechanism", mechX509).
		Str("remote", r.c.nc.RemoteAddr().String()).Msg("Successfully authenticated")
	return bsoncore.NewDocumentBuilder().AppendString("dbname", externalDB).AppendString("user", subject).
		AppendDouble("ok", 1).Build(), nil
}

// x509Failed logs a failed x.509 authentication and answers as mongod.
func (r *request) x509Failed(user, reason string) error {
	delay, n := r.throttleFailure(user + "@" + externalDB)
	r.c.log.Info().Str("c", "ACCESS").Str("user", user).Str("mechanism", mechX509).
		Str("remote", r.c.nc.RemoteAddr().String()).Str("reason", reason).Int("failuresInARow", n).Msg("Authentication failed")
	wait(r.ctx, delay)
	return mongoerr.New(mongoerr.AuthenticationFailed, "Authentication failed.")
}

func cmdLogout(r *request) (bsoncore.Document, error) {
	r.c.setAuth(connAuth{})
	return okReply(), nil
}

// helloAuthFields adds saslSupportedMechs and speculativeAuthenticate to
// a hello reply, as mongod does when the client asks.
func (r *request) helloAuthFields(b *bsoncore.DocumentBuilder) error {
	if name, ok := r.cmd.Lookup("saslSupportedMechs").StringValueOK(); ok {
		db, user, found := strings.Cut(name, ".")
		if !found {
			return mongoerr.New(mongoerr.BadValue, "UserName must contain a '.' separated database.user pair")
		}
		if u, ok := r.c.s.users.User(db, user); ok {
			mechs := bsoncore.NewArrayBuilder()
			for _, m := range auth.Mechanisms {
				if _, has := u.Creds[m]; has && r.c.s.mechanismEnabled(m) == nil {
					mechs.AppendString(m)
				}
			}
			b.AppendArray("saslSupportedMechs", mechs.Build())
		}
	}
	spec, ok := r.cmd.Lookup("speculativeAuthenticate").DocumentOK()
	if !ok {
		return nil
	}
	mech, _ := spec.Lookup("mechanism").StringValueOK()
	db, _ := spec.Lookup("db").StringValueOK()
	if _, err := spec.LookupErr("authenticate"); err == nil && mech == mechX509 {
		user, _ := spec.Lookup("user").StringValueOK()
		if reply, err := r.authenticateX509(db, user); err == nil {
			b.AppendDocument("speculativeAuthenticate", withoutOK(reply))
		}
		return nil
	}
	_, payload, _ := spec.Lookup("payload").BinaryOK()
	opts, _ := spec.Lookup("options").DocumentOK()
	skipEmpty, _ := asBool(opts.Lookup("skipEmptyExchange"))
	if reply, err := r.saslStart(db, mech, payload, skipEmpty); err == nil {
		b.AppendDocument("speculativeAuthenticate", withoutOK(reply))
	}
	return nil
}

// withoutOK is a reply without its ok field, as speculativeAuthenticate
// nests it.
func withoutOK(reply bsoncore.Document) bsoncore.Document {
	els, _ := reply.Elements()
	b := bsoncore.NewDocumentBuilder()
	for _, el := range els {
		if el.Key() != "ok" {
			b.AppendValue(el.Key(), el.Value())
		}
	}
	return b.Build()
}

// binaryArg reads a binData argument (a string is taken as its bytes, as
// mongod's shell helpers send).
func binaryArg(r *request, name string, dst *[]byte) fieldHandler {
	return func(v bsoncore.Value) error {
		if _, b, ok := v.BinaryOK(); ok {
			*dst = b
			return nil
		}
		if s, ok := v.StringValueOK(); ok {
			*dst = []byte(s)
			return nil
		}
		return typeMismatch(r.name, name, v, "binData")
	}
}
