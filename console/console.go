// Package console is DumboDB's web console: HTML pages, served on the
// server's HTTP listener under /console/, that browse any revision of a
// database, draw its commit graph, diff two revisions, edit documents
// and merge branches, conflicts included.
//
// The console is a client of the server like any other: each page runs
// the server's commands through the official Go driver over an
// in-process connection (Options.Dial), as the logged-in user when the
// server checks users, so it can do nothing that user could not do from
// mongosh, and protected branches hold as they do there. Pages are
// rendered on the server from the templates and style sheet embedded in
// the binary; they load nothing from elsewhere and need no script.
package console

import (
	"context"
	"embed"
	"html/template"
	"net"
	"net/http"
	"time"
)

// Prefix is where the console is served.
const Prefix = "/console/"

//go:embed templates/*.html
var templateFiles embed.FS

//go:embed static/console.css
var styleSheet []byte

// Options configure the console.
type Options struct {
	// Dial opens a connection to the server (server.Server.Pipe).
	Dial func(ctx context.Context) (net.Conn, error)
	// Auth: the server checks users (--auth), so every page needs a
	// login and runs as that user.
	Auth bool
	// SessionIdle ends a console session unused this long (default 30
	// minutes); with Auth the user logs in again.
	SessionIdle time.Duration
	// Secure: the listener serves HTTPS, so the session cookie is sent
	// only over it.
	Secure bool
}

// Console serves the pages. It is an http.Handler.
type Console struct {
	opts     Options
	mux      *http.ServeMux
	pages    map[string]*template.Template
	sessions *sessions
}

// New makes the console; Close ends its sessions.
func New(opts Options) (*Console, error) {
	if opts.SessionIdle <= 0 {
		opts.SessionIdle = 30 * time.Minute
	}
	pages, err := parsePages()
	if err != nil {
		return nil, err
	}
	c := &Console{opts: opts, pages: pages}
	c.sessions = newSessions(opts)
	c.mux = c.routes()
	return c, nil
}

// Close ends every session and disconnects their clients.
func (c *Console) Close(ctx context.Context) error {
	return c.sessions.closeAll(ctx)
}

func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	// The pages load nothing from elsewhere, run no script and are
	// never framed by another site.
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
	c.mux.ServeHTTP(w, r)
}

// routes maps each page and action to its handler. Every GET is a page
// that changes nothing; every change is a POST from a form of the
// console's (checked by checkPost).
func (c *Console) routes() *http.ServeMux {
	m := http.NewServeMux()
	m.HandleFunc("GET /console/static/console.css", serveStyle)
	m.HandleFunc("GET /console/login", c.loginPage)
	m.HandleFunc("POST /console/login", c.login)
	m.HandleFunc("POST /console/logout", c.post(c.logout))
	m.HandleFunc("GET /console/{$}", c.page(c.databasesPage))
	m.HandleFunc("GET /console/db/{db}", c.page(c.databasePage))
	m.HandleFunc("POST /console/db/{db}/branch", c.post(c.createBranch))
	m.HandleFunc("POST /console/db/{db}/branch/delete", c.post(c.deleteBranch))
	m.HandleFunc("POST /console/db/{db}/checkout", c.post(c.checkout))
	m.HandleFunc("POST /console/db/{db}/commit", c.post(c.commit))
	m.HandleFunc("GET /console/db/{db}/log", c.page(c.logPage))
	m.HandleFunc("GET /console/db/{db}/diff", c.page(c.diffPage))
	m.HandleFunc("GET /console/db/{db}/c/{coll}", c.page(c.collectionPage))
	m.HandleFunc("GET /console/db/{db}/c/{coll}/doc", c.page(c.documentPage))
	m.HandleFunc("POST /console/db/{db}/c/{coll}/doc", c.post(c.saveDocument))
	m.HandleFunc("GET /console/db/{db}/merge", c.page(c.mergePage))
	m.HandleFunc("POST /console/db/{db}/merge", c.post(c.merge))
	m.HandleFunc("GET /console/db/{db}/conflicts", c.page(c.conflictsPage))
	m.HandleFunc("POST /console/db/{db}/conflicts/resolve", c.post(c.resolve))
	m.HandleFunc("POST /console/db/{db}/merge/continue", c.post(c.mergeContinue))
	m.HandleFunc("POST /console/db/{db}/merge/abort", c.post(c.mergeAbort))
	m.HandleFunc("/console/", func(w http.ResponseWriter, r *http.Request) {
		c.fail(w, r, nil, notFound("no such page: "+r.URL.Path))
	})
	return m
}

func serveStyle(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/css; charset=utf-8")
	w.Header().Set("Cache-Control", "max-age=3600")
	w.Write(styleSheet)
}
