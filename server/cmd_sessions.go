package server

import (
	"crypto/rand"
	"crypto/sha256"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/storage"
)

// cmdStartSession creates a session and returns its id.
func cmdStartSession(r *request) (bsoncore.Document, error) {
	if err := r.parseArgs(nil); err != nil {
		return nil, err
	}
	k := storage.SessionKey{UID: r.sessionUID()}
	rand.Read(k.ID[:])
	k.ID[6] = k.ID[6]&0x0f | 0x40 // a version 4 UUID
	k.ID[8] = k.ID[8]&0x3f | 0x80
	r.c.s.sessions.touch(k, time.Now())
	return bsoncore.NewDocumentBuilder().
		AppendDocument("id", bsoncore.NewDocumentBuilder().AppendBinary("id", 4, k.ID[:]).Build()).
		AppendInt32("timeoutMinutes", logicalSessionTimeoutMinutes).
		AppendDouble("ok", 1).Build(), nil
}

// sessionList reads the array of session ids that endSessions,
// refreshSessions and killSessions take as their first field.
func (r *request) sessionList() ([]storage.SessionKey, error) {
	vals, err := r.firstArrayArg()
	if err != nil {
		return nil, err
	}
	if len(vals) > maxSessionsPerCommand {
		return nil, mongoerr.New(mongoerr.Location13403, "%s takes at most %d sessions", r.name, maxSessionsPerCommand)
	}
	out := make([]storage.SessionKey, 0, len(vals))
	uid := r.sessionUID()
	for _, v := range vals {
		k, err := parseSessionID(r.name, v)
		if err != nil {
			return nil, err
		}
		k.UID = uid
		out = append(out, k)
	}
	return out, nil
}

// maxSessionsPerCommand bounds the sessions one command names.
const maxSessionsPerCommand = 10000

func cmdEndSessions(r *request) (bsoncore.Document, error) {
	keys, err := r.sessionList()
	if err != nil {
		return nil, err
	}
	r.c.s.endSessions(keys)
	return okReply(), nil
}

func cmdRefreshSessions(r *request) (bsoncore.Document, error) {
	keys, err := r.sessionList()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	for _, k := range keys {
		r.c.s.sessions.touch(k, now)
	}
	return okReply(), nil
}

// cmdKillSessions kills the user's sessions named, or every session of
// the user for an empty list (without authentication every session is
// the one user's); other users' sessions take killAllSessions.
func cmdKillSessions(r *request) (bsoncore.Document, error) {
	keys, err := r.sessionList()
	if err != nil {
		return nil, err
	}
	if len(keys) == 0 {
		uid := r.sessionUID()
		keys = r.c.s.matchingSessions(func(k storage.SessionKey) bool { return k.UID == uid })
	}
	r.c.s.endSessions(keys)
	return okReply(), nil
}

// cmdKillAllSessions kills the sessions of the users named ({user, db}),
// or all sessions for an empty list.
func cmdKillAllSessions(r *request) (bsoncore.Document, error) {
	vals, err := r.firstArrayArg()
	if err != nil {
		return nil, err
	}
	uids, err := userUIDs(vals)
	if err != nil {
		return nil, err
	}
	r.c.s.endSessions(r.c.s.matchingSessions(func(k storage.SessionKey) bool { return len(vals) == 0 || uids[k.UID] }))
	return okReply(), nil
}

// firstArrayArg reads a command whose one argument is the array in its
// first field.
func (r *request) firstArrayArg() ([]bsoncore.Value, error) {
	v := r.cmd.Index(0).Value()
	arr, ok := v.ArrayOK()
	if !ok {
		return nil, typeMismatch(r.name, r.name, v, "array")
	}
	vals, _ := arr.Values()
	return vals, r.parseArgs(nil)
}

// userUIDs is the set of the uids of the users named ({user, db}).
func userUIDs(users []bsoncore.Value) (map[[32]byte]bool, error) {
	uids := map[[32]byte]bool{}
	for _, v := range users {
		uid, err := userUID(v)
		if err != nil {
			return nil, err
		}
		uids[uid] = true
	}
	return uids, nil
}

// cmdKillAllSessionsByPattern kills the sessions matching any pattern:
// {lsid}, {uid}, {users: [{user, db}]}, {roles: [...]}; an empty list or an
// empty pattern matches every session.
func cmdKillAllSessionsByPattern(r *request) (bsoncore.Document, error) {
	vals, err := r.firstArrayArg()
	if err != nil {
		return nil, err
	}
	var patterns []func(storage.SessionKey) bool
	for _, v := range vals {
		p, err := sessionPattern(v)
		if err != nil {
			return nil, err
		}
		patterns = append(patterns, p)
	}
	r.c.s.endSessions(r.c.s.matchingSessions(func(k storage.SessionKey) bool {
		for _, p := range patterns {
			if p(k) {
				return true
			}
		}
		return len(patterns) == 0
	}))
	return okReply(), nil
}

// sessionPattern compiles one killAllSessionsByPattern pattern.
func sessionPattern(v bsoncore.Value) (func(storage.SessionKey) bool, error) {
	d, ok := v.DocumentOK()
	if !ok {
		return nil, typeMismatch("KillAllSessionsByPattern", "pattern", v, "object")
	}
	els, _ := d.Elements()
	var tests []func(storage.SessionKey) bool
	for _, el := range els {
		t, err := sessionPatternField(el)
		if err != nil {
			return nil, err
		}
		tests = append(tests, t)
	}
	return func(k storage.SessionKey) bool {
		for _, t := range tests {
			if !t(k) {
				return false
			}
		}
		return true
	}, nil
}

func sessionPatternField(el bsoncore.Element) (func(storage.SessionKey) bool, error) {
	switch el.Key() {
	case "lsid":
		want, err := parseSessionID("KillAllSessionsByPattern.lsid", el.Value())
		return func(k storage.SessionKey) bool { return k.ID == want.ID }, err
	case "uid":
		_, b, ok := el.Value().BinaryOK()
		if !ok || len(b) != 32 {
			return nil, typeMismatch("KillAllSessionsByPattern", "uid", el.Value(), "binData")
		}
		return func(k storage.SessionKey) bool { return string(k.UID[:]) == string(b) }, nil
	case "users":
		arr, ok := el.Value().ArrayOK()
		if !ok {
			return nil, typeMismatch("KillAllSessionsByPattern", "users", el.Value(), "array")
		}
		vals, _ := arr.Values()
		uids, err := userUIDs(vals)
		return func(k storage.SessionKey) bool { return uids[k.UID] }, err
	case "roles":
		// Sessions of unauthenticated clients have no roles: none matches.
		if _, ok := el.Value().ArrayOK(); !ok {
			return nil, typeMismatch("KillAllSessionsByPattern", "roles", el.Value(), "array")
		}
		return func(storage.SessionKey) bool { return false }, nil
	}
	return nil, unknownField("KillAllSessionsByPattern", el.Key())
}

// userUID is the uid of a user's sessions: the SHA-256 of "user@db".
func userUID(v bsoncore.Value) ([32]byte, error) {
	d, ok := v.DocumentOK()
	if !ok {
		return [32]byte{}, typeMismatch("KillAllSessionsUser", "user", v, "object")
	}
	user, ok1 := d.Lookup("user").StringValueOK()
	db, ok2 := d.Lookup("db").StringValueOK()
	if !ok1 || !ok2 {
		return [32]byte{}, mongoerr.New(mongoerr.Location40414, "BSON field 'KillAllSessionsUser.user' and '.db' are required strings")
	}
	return userNameUID(user, db), nil
}

// userNameUID is a user's session uid: the SHA-256 of "user@db".
func userNameUID(user, db string) [32]byte { return sha256.Sum256([]byte(user + "@" + db)) }

// matchingSessions lists the sessions keep accepts.
func (s *Server) matchingSessions(keep func(storage.SessionKey) bool) []storage.SessionKey {
	s.sessions.mu.Lock()
	defer s.sessions.mu.Unlock()
	var out []storage.SessionKey
	for k := range s.sessions.m {
		if keep(k) {
			out = append(out, k)
		}
	}
	return out
}
