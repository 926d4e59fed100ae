package console

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// cookieName holds a browser's console session.
const cookieName = "dumbo_console"

// maxSessions bounds the sessions kept: past it the least recently used
// one ends, so clients that never come back cannot grow the table.
const maxSessions = 1000

// session is one browser's state: its client (with --auth, logged in
// as its user), the token its forms carry and the branch it has checked
// out in each database.
type session struct {
	id, csrf string
	client   *mongo.Client
	user     string // "" when the server checks no users
	privs    privileges
	shared   bool // client is the console's shared one (no --auth)

	mu       sync.Mutex
	branches map[string]string
	flash    string
	lastUsed time.Time
}

// branch is the branch the session has checked out in db ("": none).
func (s *session) branch(db string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.branches[db]
}

func (s *session) setBranch(db, branch string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.branches[db] = branch
}

// say keeps a message for the next page the session shows.
func (s *session) say(msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flash = msg
}

func (s *session) takeFlash() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	msg := s.flash
	s.flash = ""
	return msg
}

// sessions are the console's sessions by id.
type sessions struct {
	opts Options
	mu   sync.Mutex
	byID map[string]*session
	// shared is the one client of every session when the server checks
	// no users.
	shared *mongo.Client
}

func newSessions(opts Options) *sessions {
	return &sessions{opts: opts, byID: map[string]*session{}}
}

// connect makes a driver client over the console's in-process
// connections, with cred when the server checks users.
func (ss *sessions) connect(cred *options.Credential) (*mongo.Client, error) {
	o := options.Client().ApplyURI("mongodb://console/?directConnection=true").
		SetDialer(dialer(ss.opts.Dial)).SetAppName("dumbodb console").SetMaxPoolSize(4).
		SetServerSelectionTimeout(10 * time.Second)
	if cred != nil {
		o.SetAuth(*cred)
	}
	return mongo.Connect(o)
}

type dialer func(ctx context.Context) (net.Conn, error)

func (d dialer) DialContext(ctx context.Context, _, _ string) (net.Conn, error) { return d(ctx) }

// lookup is the request's live session (nil: none).
func (ss *sessions) lookup(r *http.Request) *session {
	ck, err := r.Cookie(cookieName)
	if err != nil {
		return nil
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	s := ss.byID[ck.Value]
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if time.Since(s.lastUsed) > ss.opts.SessionIdle {
		ss.endLocked(s)
		return nil
	}
	s.lastUsed = time.Now()
	return s
}

// anonymous starts a session on the shared client (no --auth).
func (ss *sessions) anonymous(w http.ResponseWriter) (*session, error) {
	ss.mu.Lock()
	shared := ss.shared
	ss.mu.Unlock()
	if shared == nil {
		client, err := ss.connect(nil)
		if err != nil {
			return nil, err
		}
		ss.mu.Lock()
		if ss.shared == nil {
			ss.shared = client
		} else {
			client.Disconnect(context.Background())
		}
		shared = ss.shared
		ss.mu.Unlock()
	}
	return ss.start(w, &session{client: shared, shared: true}), nil
}

// login checks a user's password by logging a new client in, and starts
// a session on it.
func (ss *sessions) login(ctx context.Context, w http.ResponseWriter, user, password, source string) (*session, error) {
	client, err := ss.connect(&options.Credential{Username: user, Password: password, AuthSource: source})
	if err != nil {
		return nil, err
	}
	var status struct {
		AuthInfo struct {
			Privileges []privilege `bson:"authenticatedUserPrivileges"`
		} `bson:"authInfo"`
	}
	err = client.Database("admin").RunCommand(ctx, bson.D{{Key: "connectionStatus", Value: 1}, {Key: "showPrivileges", Value: true}}).Decode(&status)
	if err != nil {
		client.Disconnect(context.Background())
		return nil, err
	}
	return ss.start(w, &session{client: client, user: user, privs: status.AuthInfo.Privileges}), nil
}

// start registers s and sends its cookie.
func (ss *sessions) start(w http.ResponseWriter, s *session) *session {
	s.id, s.csrf = randomToken(), randomToken()
	s.branches = map[string]string{}
	s.lastUsed = time.Now()
	ss.mu.Lock()
	if len(ss.byID) >= maxSessions {
		ss.endLocked(ss.leastRecentLocked())
	}
	ss.byID[s.id] = s
	ss.mu.Unlock()
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: s.id, Path: Prefix, HttpOnly: true,
		Secure: ss.opts.Secure, SameSite: http.SameSiteStrictMode})
	return s
}

func (ss *sessions) leastRecentLocked() *session {
	var oldest *session
	for _, s := range ss.byID {
		if oldest == nil || s.lastUsed.Before(oldest.lastUsed) {
			oldest = s
		}
	}
	return oldest
}

// end ends a session (logout).
func (ss *sessions) end(s *session) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.endLocked(s)
}

func (ss *sessions) endLocked(s *session) {
	delete(ss.byID, s.id)
	if !s.shared {
		go s.client.Disconnect(context.Background())
	}
}

func (ss *sessions) closeAll(ctx context.Context) error {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	var errs []error
	for _, s := range ss.byID {
		delete(ss.byID, s.id)
		if !s.shared {
			errs = append(errs, s.client.Disconnect(ctx))
		}
	}
	if ss.shared != nil {
		errs = append(errs, ss.shared.Disconnect(ctx))
		ss.shared = nil
	}
	return errors.Join(errs...)
}

func randomToken() string {
	b := make([]byte, 24)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// privilege is one of a user's privileges as connectionStatus lists it.
type privilege struct {
	Resource struct {
		DB          *string `bson:"db"`
		AnyResource bool    `bson:"anyResource"`
	} `bson:"resource"`
	Actions []string `bson:"actions"`
}

// privileges are a logged-in user's (nil: the server checks no users).
type privileges []privilege

// can reports whether the session's user may take action on db; the
// server decides in the end, this only hides what would be refused.
func (s *session) can(db, action string) bool {
	if s.user == "" {
		return true
	}
	for _, p := range s.privs {
		onDB := p.Resource.AnyResource || (p.Resource.DB != nil && (*p.Resource.DB == "" || *p.Resource.DB == db))
		if !onDB {
			continue
		}
		for _, a := range p.Actions {
			if a == action {
				return true
			}
		}
	}
	return false
}

// pageFunc renders a page or runs an action for a session.
type pageFunc func(w http.ResponseWriter, r *http.Request, s *session) error

// page wraps a GET: with --auth it needs a login (else the login page,
// coming back here after), without it any browser gets a session.
func (c *Console) page(f pageFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s := c.sessions.lookup(r)
		if s == nil && c.opts.Auth {
			http.Redirect(w, r, Prefix+"login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
			return
		}
		if s == nil {
			var err error
			if s, err = c.sessions.anonymous(w); err != nil {
				c.fail(w, r, nil, err)
				return
			}
		}
		if err := f(w, r, s); err != nil {
			c.fail(w, r, s, err)
		}
	}
}

// post wraps an action: it needs the session a console page gave and
// the form's token, so another site cannot make a browser post here.
func (c *Console) post(f pageFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, 64<<20)
		s := c.sessions.lookup(r)
		if s == nil {
			c.fail(w, r, nil, &pageError{status: http.StatusForbidden, msg: "Your console session has ended: open the page again" + loginHint(c.opts.Auth) + "."})
			return
		}
		if err := checkPost(r, s); err != nil {
			c.fail(w, r, s, err)
			return
		}
		if err := f(w, r, s); err != nil {
			c.fail(w, r, s, err)
		}
	}
}

func loginHint(auth bool) string {
	if auth {
		return " and log in"
	}
	return ""
}

// checkPost refuses a form that did not come from this console: another
// origin, or without the session's token.
func checkPost(r *http.Request, s *session) error {
	forbidden := &pageError{status: http.StatusForbidden, msg: "This form did not come from this console; open the page again."}
	if origin := r.Header.Get("Origin"); origin != "" && origin != "null" {
		u, err := url.Parse(origin)
		if err != nil || u.Host != r.Host {
			return forbidden
		}
	}
	if err := r.ParseForm(); err != nil {
		return badRequest("the form could not be read: " + err.Error())
	}
	if subtle.ConstantTimeCompare([]byte(r.PostFormValue("csrf")), []byte(s.csrf)) != 1 {
		return forbidden
	}
	return nil
}

// loginPage asks for a user and password (with --auth).
func (c *Console) loginPage(w http.ResponseWriter, r *http.Request) {
	if !c.opts.Auth {
		http.Redirect(w, r, Prefix, http.StatusSeeOther)
		return
	}
	c.render(w, r, http.StatusOK, "login", nil, loginView{Next: safeNext(r.FormValue("next")), Source: "admin"})
}

type loginView struct {
	Next, User, Source, Error string
}

func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 1<<20)
	if !c.opts.Auth {
		http.Redirect(w, r, Prefix, http.StatusSeeOther)
		return
	}
	v := loginView{Next: safeNext(r.PostFormValue("next")), User: r.PostFormValue("user"), Source: r.PostFormValue("source")}
	if v.Source == "" {
		v.Source = "admin"
	}
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	if _, err := c.sessions.login(ctx, w, v.User, r.PostFormValue("password"), v.Source); err != nil {
		v.Error = "Authentication failed."
		c.render(w, r, http.StatusUnauthorized, "login", nil, v)
		return
	}
	http.Redirect(w, r, v.Next, http.StatusSeeOther)
}

// safeNext keeps a page to come back to only when it is the console's.
func safeNext(next string) string {
	if !strings.HasPrefix(next, Prefix) || strings.Contains(next, "//") || strings.Contains(next, `\`) {
		return Prefix
	}
	return next
}

func (c *Console) logout(w http.ResponseWriter, r *http.Request, s *session) error {
	c.sessions.end(s)
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: "", Path: Prefix, MaxAge: -1, HttpOnly: true})
	target := Prefix
	if c.opts.Auth {
		target = Prefix + "login"
	}
	http.Redirect(w, r, target, http.StatusSeeOther)
	return nil
}
