package server

import (
	"crypto/sha256"
	"encoding/base64"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/query"
	"github.com/dumbodb/dumbodb/storage"
)

// sessionTimeout is logicalSessionTimeoutMinutes as a duration.
const sessionTimeout = logicalSessionTimeoutMinutes * time.Minute

// noUserUID is the uid of sessions of unauthenticated clients: the
// SHA-256 of the empty user name, as on mongod.
var noUserUID = sha256.Sum256(nil)

// sessionTable holds the logical sessions the server knows
// (docs/design/transactions.md, "Logical sessions").
type sessionTable struct {
	mu   sync.Mutex
	m    map[storage.SessionKey]*session
	txns txnCounters // serverStatus.transactions
}

// txnCounters count the transactions started, committed and aborted.
type txnCounters struct {
	started, committed, aborted atomic.Int64
}

// session is one logical session: when it was last used, and its latest
// transaction (guarded by the table's mutex).
type session struct {
	lastUse   time.Time
	txnNumber int64        // the highest transaction number started
	txn       *transaction // nil: none started
}

func newSessionTable() *sessionTable {
	return &sessionTable{m: map[storage.SessionKey]*session{}}
}

// touch creates or refreshes a session.
func (t *sessionTable) touch(k storage.SessionKey, now time.Time) {
	t.mu.Lock()
	if s := t.m[k]; s != nil {
		s.lastUse = now
	} else {
		t.m[k] = &session{lastUse: now}
	}
	t.mu.Unlock()
}

// end forgets sessions, aborting their open transactions.
func (t *sessionTable) end(keys []storage.SessionKey) {
	t.mu.Lock()
	var open []*transaction
	for _, k := range keys {
		if s := t.m[k]; s != nil && s.txn != nil {
			open = append(open, s.txn)
		}
		delete(t.m, k)
	}
	t.mu.Unlock()
	for _, txn := range open {
		txn.abortIfActive()
	}
}

// expired returns the sessions idle for longer than timeout.
func (t *sessionTable) expired(now time.Time, timeout time.Duration) []storage.SessionKey {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []storage.SessionKey
	for k, s := range t.m {
		if now.Sub(s.lastUse) > timeout {
			out = append(out, k)
		}
	}
	return out
}

// list returns the sessions that match keep, in a stable order, as
// $listLocalSessions documents: {_id: {id, uid}, lastUse}.
func (t *sessionTable) list(keep func(storage.SessionKey) bool) []bsoncore.Document {
	t.mu.Lock()
	type entry struct {
		k    storage.SessionKey
		last time.Time
	}
	var es []entry
	for k, s := range t.m {
		if keep(k) {
			es = append(es, entry{k, s.lastUse})
		}
	}
	t.mu.Unlock()
	sort.Slice(es, func(i, j int) bool { return string(es[i].k.ID[:]) < string(es[j].k.ID[:]) })
	out := make([]bsoncore.Document, len(es))
	for i, e := range es {
		out[i] = bsoncore.NewDocumentBuilder().AppendDocument("_id", sessionIDDoc(e.k)).
			AppendDateTime("lastUse", e.last.UnixMilli()).Build()
	}
	return out
}

// listSessions lists the sessions of a $listLocalSessions or $listSessions
// filter: without authentication every session is the empty user's.
// Without users named, they are those of the user whose uid is own.
func (s *Server) listSessions(f query.SessionFilter, own [32]byte) []bsoncore.Document {
	if f.AllUsers {
		return s.sessions.list(func(storage.SessionKey) bool { return true })
	}
	uids := map[[32]byte]bool{}
	if f.Users == nil {
		uids[own] = true
	}
	for _, u := range f.Users {
		uids[userNameUID(u.User, u.DB)] = true
	}
	return s.sessions.list(func(k storage.SessionKey) bool { return uids[k.UID] })
}

// sessionIDDoc is a session's {id, uid}.
func sessionIDDoc(k storage.SessionKey) bsoncore.Document {
	return bsoncore.NewDocumentBuilder().AppendBinary("id", 4, k.ID[:]).AppendBinary("uid", 0, k.UID[:]).Build()
}

// sessionText spells a session (nil: none) as mongod's messages do: its
// id, its uid in base64, and the empty transaction number and
// transaction UUID of a client's session.
func sessionText(k *storage.SessionKey) string {
	if k == nil {
		return "none"
	}
	return uuidText(k.ID[:]) + " - " + base64.StdEncoding.EncodeToString(k.UID[:]) + " -  - "
}

// sameSession reports whether two sessions (nil: none) are the same.
func sameSession(a, b *storage.SessionKey) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}

// sessionUID is the uid of the sessions the request names: the logged-in
// user's, so that a session id belongs to the user that uses it and
// another user naming the same id has a session of its own, as on mongod.
func (r *request) sessionUID() [32]byte {
	if r.c.s.cfg.Auth {
		if u := r.c.currentAuth().user; u != nil {
			return userNameUID(u.Name, u.DB)
		}
	}
	return noUserUID
}

// parseSessionID reads a session id as clients send it ({id: UUID}, uid
// ignored from clients as mongod ignores it from drivers; the caller sets
// the user's).
func parseSessionID(field string, v bsoncore.Value) (storage.SessionKey, error) {
	d, ok := v.DocumentOK()
	if !ok {
		return storage.SessionKey{}, typeMismatch("OperationSessionInfo", field, v, "object")
	}
	idv, err := d.LookupErr("id")
	if err != nil {
		return storage.SessionKey{}, mongoerr.New(mongoerr.Location40414, "BSON field '%s.id' is missing but a required field", field)
	}
	sub, id, ok := idv.BinaryOK()
	if !ok || sub != 4 || len(id) != 16 {
		return storage.SessionKey{}, mongoerr.New(mongoerr.InvalidUUID, "%s.id must be a UUID (binData subtype 4, 16 bytes)", field)
	}
	k := storage.SessionKey{UID: noUserUID}
	copy(k.ID[:], id)
	return k, nil
}

// requestSession reads the command's lsid and touches its session; ok is
// false for a command without one.
func (r *request) requestSession() (storage.SessionKey, bool, error) {
	v, err := r.argErr("lsid")
	if err != nil {
		return storage.SessionKey{}, false, nil
	}
	k, err := parseSessionID("lsid", v)
	if err != nil {
		return storage.SessionKey{}, false, err
	}
	k.UID = r.sessionUID()
	r.c.s.sessions.touch(k, time.Now())
	r.session = &k
	r.c.setSession(k)
	return k, true, nil
}

// endSessions forgets sessions and kills what belongs to them: their
// cursors and their running operations.
func (s *Server) endSessions(keys []storage.SessionKey) {
	if len(keys) == 0 {
		return
	}
	s.sessions.end(keys)
	set := make(map[storage.SessionKey]bool, len(keys))
	for _, k := range keys {
		set[k] = true
	}
	s.cursors.removeWhere(func(c *cursor) bool { return c.session != nil && set[*c.session] },
		mongoerr.New(mongoerr.CursorKilled, "cursor killed: its session ended"))
	s.connsMu.Lock()
	defer s.connsMu.Unlock()
	for c := range s.conns {
		if k, id, ok := c.currentSession(); ok && set[k] {
			c.kill(id, mongoerr.New(mongoerr.Interrupted, "operation was interrupted because its session was killed"))
		}
	}
}

// reapSessions ends the sessions that have expired.
func (s *Server) reapSessions() {
	s.endSessions(s.sessions.expired(time.Now(), sessionTimeout))
}

// counts are the sessions held and, of them, those with a transaction
// in progress.
func (t *sessionTable) counts() (sessions, inTransaction int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, s := range t.m {
		if s.txn != nil && s.txn.inProgress() {
			inTransaction++
		}
	}
	return len(t.m), inTransaction
}
