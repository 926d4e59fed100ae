package console

import (
	"bytes"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"
	"unicode/utf8"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// view is what every page's template gets: the layout's parts and the
// page's own data.
type view struct {
	Title  string
	DB     string
	Crumbs []crumb
	User   string
	CSRF   string
	Flash  string
	Auth   bool
	Data   any
}

// crumb is one step of the path shown above a page.
type crumb struct {
	Name, Href string
}

// parsePages parses each page's template with the layout around it and
// the parts pages share.
func parsePages() (map[string]*template.Template, error) {
	names, err := fs.Glob(templateFiles, "templates/*.html")
	if err != nil {
		return nil, err
	}
	pages := map[string]*template.Template{}
	for _, name := range names {
		page := strings.TrimSuffix(path.Base(name), ".html")
		if page == "layout" || page == "parts" {
			continue
		}
		t, err := template.New(page).Funcs(templateFuncs).ParseFS(templateFiles, "templates/layout.html", "templates/parts.html", name)
		if err != nil {
			return nil, fmt.Errorf("console template %s: %w", page, err)
		}
		pages[page] = t
	}
	return pages, nil
}

var templateFuncs = template.FuncMap{
	"short":   shortID,
	"json":    docJSON,
	"value":   valueJSON,
	"clip":    clip,
	"when":    func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") },
	"pathEsc": url.PathEscape,
	"add":     func(a, b int) int { return a + b },
}

// render writes a page; s may be nil (the login and error pages).
func (c *Console) render(w http.ResponseWriter, _ *http.Request, status int, page string, s *session, v any) {
	data := view{Auth: c.opts.Auth, Data: v}
	if pv, ok := v.(interface{ layout() view }); ok {
		lv := pv.layout()
		data.Title, data.DB, data.Crumbs = lv.Title, lv.DB, lv.Crumbs
	}
	if s != nil {
		data.User, data.CSRF, data.Flash = s.user, s.csrf, s.takeFlash()
	}
	var buf bytes.Buffer
	if err := c.pages[page].ExecuteTemplate(&buf, "layout", data); err != nil {
		http.Error(w, "the console could not render this page: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

// pageError is a failure shown as an error page with its HTTP status.
type pageError struct {
	status int
	msg    string
}

func (e *pageError) Error() string { return e.msg }

func notFound(msg string) error   { return &pageError{status: http.StatusNotFound, msg: msg} }
func badRequest(msg string) error { return &pageError{status: http.StatusBadRequest, msg: msg} }

type errorView struct {
	Status  int
	Message string
	Back    string
}

func (e errorView) layout() view { return view{Title: http.StatusText(e.Status)} }

// fail shows err as an error page: the server's own message for a
// command it refused, with the status that fits its code.
func (c *Console) fail(w http.ResponseWriter, r *http.Request, s *session, err error) {
	status, msg := describeError(err)
	back := r.Referer()
	if !strings.HasPrefix(back, "http") || !strings.Contains(back, Prefix) {
		back = Prefix
	}
	c.render(w, r, status, "error", s, errorView{Status: status, Message: msg, Back: back})
}

// describeError is the status and message of an error page.
func describeError(err error) (int, string) {
	var pe *pageError
	var ce mongo.CommandError
	var we mongo.WriteException
	switch {
	case errors.As(err, &pe):
		return pe.status, pe.msg
	case errors.As(err, &ce):
		return codeStatus(ce.Name), fmt.Sprintf("%s (%s)", ce.Message, ce.Name)
	case errors.As(err, &we) && len(we.WriteErrors) > 0:
		return http.StatusConflict, we.WriteErrors[0].Message
	case errors.As(err, &we) && we.WriteConcernError != nil:
		return http.StatusInternalServerError, we.WriteConcernError.Message
	}
	return http.StatusInternalServerError, "The server did not answer: " + err.Error()
}

// codeStatus is the HTTP status of a command's error, by its code name.
func codeStatus(name string) int {
	switch name {
	case "RevisionNotFound", "NamespaceNotFound", "NoSuchKey", "RemoteNotFound":
		return http.StatusNotFound
	case "Unauthorized":
		return http.StatusForbidden
	case "AuthenticationFailed":
		return http.StatusUnauthorized
	case "ReadOnlyRevision", "MergeConflict", "NothingToCommit", "RefExists", "BranchUnmerged", "DirtyWorkingSet",
		"MergeInProgress", "NoMergeInProgress", "UnresolvedConflicts", "NotFastForward", "DuplicateKey", "NamespaceExists":
		return http.StatusConflict
	}
	return http.StatusBadRequest
}

// shortID is a commit id's first 8 characters, as a unique prefix
// addresses it.
func shortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// docJSON is a document as indented relaxed Extended JSON.
func docJSON(doc bson.Raw) string {
	if len(doc) == 0 {
		return ""
	}
	out, err := bson.MarshalExtJSONIndent(doc, false, false, "", "  ")
	if err != nil {
		return fmt.Sprintf("(not valid BSON: %v)", err)
	}
	return string(out)
}

// valueJSON is one value as relaxed Extended JSON on one line.
func valueJSON(v bson.RawValue) string {
	return extValue(v, false)
}

// extValue writes v as Extended JSON (canonical keeps every type, for
// values that go back to the server in a URL).
func extValue(v bson.RawValue, canonical bool) string {
	if v.Type == 0 {
		return "(missing)"
	}
	out, err := bson.MarshalExtJSON(bson.D{{Key: "v", Value: v}}, canonical, false)
	if err != nil {
		return fmt.Sprintf("(not valid BSON: %v)", err)
	}
	s := strings.TrimPrefix(string(out), `{"v":`)
	return strings.TrimSuffix(s, "}")
}

// clipLimit is how much of a long document or value a page shows; the
// rest is one link away.
const clipLimit = 2000

func clip(s string) string {
	if len(s) <= clipLimit {
		return s
	}
	cut := clipLimit
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("\n… (%d more bytes)", len(s)-cut)
}
