package console

import (
	"context"
	"html/template"
	"net/http"
	"net/url"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// logPageSize is how many commits one page of the graph shows.
const logPageSize = 50

type logRow struct {
	commitInfo
	Graph template.HTML
	Tags  []string
}

type logView struct {
	DB, Rev, Collection, ID string
	Rows                    []logRow
	Next                    string // the next page's URL ("": the last page)
}

func (v logView) layout() view {
	return view{Title: "History of " + v.DB, DB: v.DB, Crumbs: []crumb{{v.DB, Prefix + "db/" + url.PathEscape(v.DB)}, {"history", ""}}}
}

// logPage draws the commit graph of a revision, a page at a time,
// optionally only the commits that changed a collection or a document.
func (c *Console) logPage(w http.ResponseWriter, r *http.Request, s *session) error {
	db, err := pathDB(r)
	if err != nil {
		return err
	}
	v := logView{DB: db, Rev: pageRev(r, s, db), Collection: strings.TrimSpace(r.FormValue("collection")), ID: strings.TrimSpace(r.FormValue("_id"))}
	var filter bson.D // what selects the commits listed
	if v.Collection != "" {
		filter = append(filter, bson.E{Key: "collection", Value: v.Collection})
	}
	if v.ID != "" {
		if v.Collection == "" {
			return badRequest("a document's history needs its collection as well as its _id")
		}
		id, err := parseValue(v.ID)
		if err != nil {
			return err
		}
		filter = append(filter, bson.E{Key: "_id", Value: id})
	}
	cmd := append(bson.D{{Key: "dumboLog", Value: 1}, {Key: "limit", Value: logPageSize}}, filter...)
	if after := r.FormValue("after"); after != "" {
		cmd = append(cmd, bson.E{Key: "after", Value: after})
	}
	var reply struct {
		Commits []commitInfo `bson:"commits"`
		Next    string       `bson:"next"`
	}
	ctx := r.Context()
	if err := run(ctx, s, target(db, v.Rev), cmd, &reply); err != nil {
		return err
	}
	tags, err := tagsByCommit(r, s, db)
	if err != nil {
		return err
	}
	drawn := reply.Commits
	if filter != nil {
		nearest := func(parent string) (string, error) {
			return nearestListed(ctx, s, target(db, v.Rev), parent, filter)
		}
		if drawn, err = simplifyParents(reply.Commits, nearest); err != nil {
			return err
		}
	}
	graph := drawGraph(drawn)
	for i, cm := range reply.Commits {
		v.Rows = append(v.Rows, logRow{commitInfo: cm, Graph: graph[i].SVG, Tags: tags[cm.CommitID]})
	}
	if reply.Next != "" {
		q := r.URL.Query()
		q.Set("after", reply.Next)
		q.Set("rev", v.Rev)
		v.Next = r.URL.Path + "?" + q.Encode()
	}
	c.render(w, r, http.StatusOK, "log", s, v)
	return nil
}

// nearestListed is the commit a filtered history lists first from
// parent on ("": none), which is the nearest of parent's ancestors (itself
// included) that the filter selects: the listing is topological, so no
// other selected ancestor of parent descends from it. Finding it walks
// only the commits between parent and it, most of which the page's own
// listing walked already.
func nearestListed(ctx context.Context, s *session, dbName, parent string, filter bson.D) (string, error) {
	cmd := append(bson.D{{Key: "dumboLog", Value: 1}, {Key: "from", Value: parent}, {Key: "limit", Value: 1}}, filter...)
	var reply struct {
		Commits []commitInfo `bson:"commits"`
	}
	if err := run(ctx, s, dbName, cmd, &reply); err != nil || len(reply.Commits) == 0 {
		return "", err
	}
	return reply.Commits[0].CommitID, nil
}

// tagsByCommit names the tags of each tagged commit.
func tagsByCommit(r *http.Request, s *session, db string) (map[string][]string, error) {
	var reply struct {
		Tags []tagInfo `bson:"tags"`
	}
	if err := run(r.Context(), s, db, bson.D{{Key: "dumboTag", Value: 1}}, &reply); err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for _, t := range reply.Tags {
		out[t.CommitID] = append(out[t.CommitID], t.Name)
	}
	return out, nil
}

// parseValue reads a value typed into a form as Extended JSON (1,
// "abc", {"$oid": "…"}); text that is not JSON is taken as a string.
func parseValue(text string) (bson.RawValue, error) {
	var doc bson.Raw
	if err := bson.UnmarshalExtJSON([]byte(`{"v":`+text+`}`), false, &doc); err == nil {
		return doc.Lookup("v"), nil
	}
	_, raw, err := bson.MarshalValue(text)
	if err != nil {
		return bson.RawValue{}, badRequest(err.Error())
	}
	return bson.RawValue{Type: bson.TypeString, Value: raw}, nil
}

// parseDocument reads a document typed into a form as Extended JSON;
// name says which field of the form, for the error.
func parseDocument(name, text string) (bson.Raw, error) {
	text = strings.TrimSpace(text)
	if text == "" {
		return nil, nil
	}
	var doc bson.Raw
	if err := bson.UnmarshalExtJSON([]byte(text), false, &doc); err != nil {
		return nil, badRequest("the " + name + " is not an Extended JSON document: " + err.Error())
	}
	return doc, nil
}
