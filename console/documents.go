package console

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// docsPerPage is how many documents one page of a collection shows.
const docsPerPage = 20

type docRow struct {
	JSON string
	ID   string // the _id as canonical Extended JSON, for links
}

type collectionView struct {
	DB, Coll, Rev                string
	Filter, Sort, Projection     string
	Docs                         []docRow
	Page                         int
	PrevHref, NextHref, Writable string
}

func (v collectionView) layout() view {
	return view{Title: v.Coll + " in " + v.DB, DB: v.DB, Crumbs: []crumb{{v.DB, Prefix + "db/" + url.PathEscape(v.DB)}, {v.Coll, ""}}}
}

// collectionPage shows a collection at a revision, a page of documents
// at a time, found by a filter, sort and projection in Extended JSON.
func (c *Console) collectionPage(w http.ResponseWriter, r *http.Request, s *session) error {
	db, err := pathDB(r)
	if err != nil {
		return err
	}
	v := collectionView{DB: db, Coll: r.PathValue("coll"), Rev: pageRev(r, s, db),
		Filter: r.FormValue("filter"), Sort: r.FormValue("sort"), Projection: r.FormValue("projection")}
	v.Page, _ = strconv.Atoi(r.FormValue("page"))
	v.Page = max(v.Page, 0)
	filter, err := parseDocument("filter", v.Filter)
	if err != nil {
		return err
	}
	if filter == nil {
		filter = bson.Raw(emptyDocument)
	}
	opts := options.Find().SetSkip(int64(v.Page * docsPerPage)).SetLimit(docsPerPage + 1)
	if sort, err := parseDocument("sort", v.Sort); err != nil {
		return err
	} else if sort != nil {
		opts.SetSort(sort)
	}
	if proj, err := parseDocument("projection", v.Projection); err != nil {
		return err
	} else if proj != nil {
		opts.SetProjection(proj)
	}
	ctx := r.Context()
	cur, err := s.client.Database(target(db, v.Rev)).Collection(v.Coll).Find(ctx, filter, opts)
	if err != nil {
		return err
	}
	var docs []bson.Raw
	if err := cur.All(ctx, &docs); err != nil {
		return err
	}
	if len(docs) > docsPerPage {
		docs = docs[:docsPerPage]
		v.NextHref = pageHref(r, v.Page+1)
	}
	if v.Page > 0 {
		v.PrevHref = pageHref(r, v.Page-1)
	}
	for _, d := range docs {
		v.Docs = append(v.Docs, docRow{JSON: clip(docJSON(d)), ID: extValue(d.Lookup("_id"), true)})
	}
	c.render(w, r, http.StatusOK, "collection", s, v)
	return nil
}

var emptyDocument = []byte{5, 0, 0, 0, 0}

func pageHref(r *http.Request, page int) string {
	q := r.URL.Query()
	q.Set("page", strconv.Itoa(page))
	return r.URL.Path + "?" + q.Encode()
}

type blameLine struct {
	Path      string    `bson:"path"`
	CommitID  string    `bson:"commitId"`
	Author    string    `bson:"author"`
	Timestamp time.Time `bson:"timestamp"`
	Message   string    `bson:"message"`
}

type documentView struct {
	DB, Coll, Rev, ID string
	IDText            string // the _id as relaxed Extended JSON, to read
	JSON              string
	Writable          bool
	Locked            *protectedBranch // the rule that keeps the branch from the user's writes
	Blame             []blameLine
	Error             string // why the edit just sent was refused
}

func (v documentView) layout() view {
	base := Prefix + "db/" + url.PathEscape(v.DB)
	return view{Title: "A document of " + v.Coll, DB: v.DB, Crumbs: []crumb{{v.DB, base}, {v.Coll, base + "/c/" + url.PathEscape(v.Coll) + "?rev=" + url.QueryEscape(v.Rev)}, {"document", ""}}}
}

// documentPage shows one document at a revision, who last set each of
// its fields, and on a writable branch a form to edit it.
func (c *Console) documentPage(w http.ResponseWriter, r *http.Request, s *session) error {
	v, id, err := c.documentView(r, s)
	if err != nil {
		return err
	}
	doc, err := s.client.Database(target(v.DB, v.Rev)).Collection(v.Coll).FindOne(r.Context(), bson.D{{Key: "_id", Value: id}}).Raw()
	if errors.Is(err, mongo.ErrNoDocuments) {
		return notFound("no document with _id " + v.ID + " in " + v.Coll + " at " + v.Rev)
	}
	if err != nil {
		return err
	}
	v.JSON = docJSON(doc)
	v.Blame = blame(r.Context(), s, v.DB, v.Rev, v.Coll, id)
	c.render(w, r, http.StatusOK, "document", s, v)
	return nil
}

// documentView reads the page's database, collection, revision and _id.
func (c *Console) documentView(r *http.Request, s *session) (documentView, bson.RawValue, error) {
	db, err := pathDB(r)
	if err != nil {
		return documentView{}, bson.RawValue{}, err
	}
	v := documentView{DB: db, Coll: r.PathValue("coll"), Rev: pageRev(r, s, db), ID: r.FormValue("id")}
	if v.ID == "" {
		return v, bson.RawValue{}, badRequest("the page lacks the document's id")
	}
	id, err := parseValue(v.ID)
	if err != nil {
		return v, bson.RawValue{}, err
	}
	v.IDText = extValue(id, false)
	if v.Writable, err = writable(r.Context(), s, db, v.Rev); err != nil || !v.Writable {
		return v, id, err
	}
	v.Locked, err = c.lockedBranch(r.Context(), s, db, v.Rev)
	v.Writable = v.Locked == nil
	return v, id, err
}

// writable reports whether the session may change documents at rev: a
// branch (not a commit or tag) and a user who may update (protected
// branches aside: Console.lockedBranch).
func writable(ctx context.Context, s *session, db, rev string) (bool, error) {
	if !s.can(db, "update") {
		return false, nil
	}
	local, _, err := listBranches(ctx, s, db)
	return slices.ContainsFunc(local, func(b branchInfo) bool { return b.Name == rev }), err
}

// blame is who last set each field of a document (none where the server
// cannot say, such as a document not committed yet).
func blame(ctx context.Context, s *session, db, rev, coll string, id bson.RawValue) []blameLine {
	var reply struct {
		Fields []blameLine `bson:"fields"`
	}
	cmd := bson.D{{Key: "dumboBlame", Value: 1}, {Key: "collection", Value: coll}, {Key: "_id", Value: id}}
	if run(ctx, s, target(db, rev), cmd, &reply) != nil {
		return nil
	}
	return reply.Fields
}

// saveDocument replaces a document with the edited one.
func (c *Console) saveDocument(w http.ResponseWriter, r *http.Request, s *session) error {
	v, id, err := c.documentView(r, s)
	if err != nil {
		return err
	}
	v.JSON = r.PostFormValue("document")
	doc, err := parseDocument("document", v.JSON)
	if err == nil {
		err = sameID(doc, id)
	}
	if err == nil {
		err = replace(r.Context(), s, target(v.DB, v.Rev), v.Coll, id, doc)
	}
	if err != nil {
		status, msg := describeError(err)
		v.Error = msg
		c.render(w, r, status, "document", s, v)
		return nil
	}
	s.say("Saved the document.")
	http.Redirect(w, r, r.URL.Path+"?rev="+url.QueryEscape(v.Rev)+"&id="+url.QueryEscape(v.ID), http.StatusSeeOther)
	return nil
}

// sameID refuses an edit that changes or drops the _id.
func sameID(doc bson.Raw, id bson.RawValue) error {
	if doc == nil {
		return badRequest("the document is empty")
	}
	got, err := doc.LookupErr("_id")
	if err != nil || !got.Equal(id) {
		return badRequest("an edit keeps the document's _id, " + extValue(id, false))
	}
	return nil
}

func replace(ctx context.Context, s *session, dbName, coll string, id bson.RawValue, doc bson.Raw) error {
	res, err := s.client.Database(dbName).Collection(coll).ReplaceOne(ctx, bson.D{{Key: "_id", Value: id}}, doc)
	if err != nil {
		return err
	}
	if res.MatchedCount == 0 {
		return notFound("the document is gone: another client deleted it")
	}
	return nil
}

// trimmed is a form field without surrounding space.
func trimmed(r *http.Request, name string) string { return strings.TrimSpace(r.FormValue(name)) }
