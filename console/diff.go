package console

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// maxDiffDocs bounds each list of documents a collection's diff shows;
// the rest are counted.
const maxDiffDocs = 100

type fieldChange struct {
	Path string        `bson:"path"`
	From bson.RawValue `bson:"from"`
	To   bson.RawValue `bson:"to"`
}

type modifiedDoc struct {
	ID      bson.RawValue `bson:"_id"`
	Changes []fieldChange `bson:"changes"`
}

// collectionDiff is one collection of dumboDiff's reply, with what the
// page adds: the options and indexes of both sides when they changed.
type collectionDiff struct {
	Name           string        `bson:"name"`
	Status         string        `bson:"status"`
	OptionsChanged bool          `bson:"optionsChanged"`
	IndexesChanged bool          `bson:"indexesChanged"`
	Added          []bson.Raw    `bson:"added"`
	Removed        []bson.Raw    `bson:"removed"`
	Modified       []modifiedDoc `bson:"modified"`

	OptionsFrom, OptionsTo               string
	IndexesAdded, IndexesRemoved         []string
	MoreAdded, MoreRemoved, MoreModified int
}

type diffView struct {
	DB, From, To, Branch string
	FromRev, ToRev       string // revisions for links into the data browser
	Commit               *commitInfo
	Collections          []collectionDiff
}

func (v diffView) layout() view {
	return view{Title: "Diff of " + v.DB, DB: v.DB, Crumbs: []crumb{{v.DB, Prefix + "db/" + url.PathEscape(v.DB)}, {"diff", ""}}}
}

// diffPage shows what changed between two revisions: ?commit= against
// its first parent, else ?from= (default HEAD) to ?to= (default the
// working set, WORKING), where HEAD and WORKING are those of the branch
// ?rev= names (default: the checked-out branch).
func (c *Console) diffPage(w http.ResponseWriter, r *http.Request, s *session) error {
	db, err := pathDB(r)
	if err != nil {
		return err
	}
	ctx := r.Context()
	v := diffView{DB: db, Branch: pageRev(r, s, db), From: strings.TrimSpace(r.FormValue("from")), To: strings.TrimSpace(r.FormValue("to"))}
	if commit := strings.TrimSpace(r.FormValue("commit")); commit != "" {
		if v.Commit, err = oneCommit(ctx, s, db, commit); err != nil {
			return err
		}
		v.To = v.Commit.CommitID
		if len(v.Commit.Parents) == 0 {
			c.render(w, r, http.StatusOK, "diff", s, v)
			return nil
		}
		v.From = v.Commit.Parents[0]
	}
	v.From, v.To = cmpOr(v.From, "HEAD"), cmpOr(v.To, "WORKING")
	v.FromRev, v.ToRev = sideRev(v.Branch, v.From), sideRev(v.Branch, v.To)
	// The server's HEAD is the connection's branch, and the console's
	// connections stay on main: HEAD goes as the page's branch.
	cmd := bson.D{{Key: "dumboDiff", Value: 1}, {Key: "from", Value: headOf(v.Branch, v.From)}, {Key: "to", Value: headOf(v.Branch, v.To)}}
	if coll := strings.TrimSpace(r.FormValue("collection")); coll != "" {
		cmd = append(cmd, bson.E{Key: "collection", Value: coll})
	}
	var reply struct {
		Collections []collectionDiff `bson:"collections"`
	}
	if err := run(ctx, s, target(db, v.Branch), cmd, &reply); err != nil {
		return err
	}
	for i := range reply.Collections {
		if err := describeCollectionDiff(ctx, s, db, v.FromRev, v.ToRev, &reply.Collections[i]); err != nil {
			return err
		}
	}
	v.Collections = reply.Collections
	c.render(w, r, http.StatusOK, "diff", s, v)
	return nil
}

func cmpOr(s, dflt string) string {
	if s == "" {
		return dflt
	}
	return s
}

// sideRev is the revision a side of dumboDiff names, as a database name
// addresses it: the working set is the branch, HEAD its head commit.
func sideRev(branch, rev string) string {
	if rev == "WORKING" {
		return branch
	}
	return headOf(branch, rev)
}

// headOf spells a revision that starts from HEAD (HEAD, HEAD~2, HEAD^2)
// from the branch's head commit instead (branch~0, branch~2, branch^2).
func headOf(branch, rev string) string {
	switch {
	case rev == "HEAD":
		return branch + "~0"
	case strings.HasPrefix(rev, "HEAD~"), strings.HasPrefix(rev, "HEAD^"):
		return branch + rev[len("HEAD"):]
	}
	return rev
}

// oneCommit describes the commit rev names.
func oneCommit(ctx context.Context, s *session, db, rev string) (*commitInfo, error) {
	var reply struct {
		Commits []commitInfo `bson:"commits"`
	}
	if err := run(ctx, s, target(db, rev), bson.D{{Key: "dumboLog", Value: 1}, {Key: "limit", Value: 1}}, &reply); err != nil {
		return nil, err
	}
	if len(reply.Commits) == 0 {
		return nil, notFound("no commit " + rev + " in " + db)
	}
	return &reply.Commits[0], nil
}

// describeCollectionDiff cuts the document lists to what a page shows and
// adds the two sides' options and indexes where they changed.
func describeCollectionDiff(ctx context.Context, s *session, db, from, to string, d *collectionDiff) error {
	d.Added, d.MoreAdded = cut(d.Added)
	d.Removed, d.MoreRemoved = cut(d.Removed)
	d.Modified, d.MoreModified = cut(d.Modified)
	if d.OptionsChanged {
		var err error
		if d.OptionsFrom, err = collectionOptions(ctx, s, target(db, from), d.Name); err != nil {
			return err
		}
		if d.OptionsTo, err = collectionOptions(ctx, s, target(db, to), d.Name); err != nil {
			return err
		}
	}
	if d.IndexesChanged {
		before, err := indexSpecs(ctx, s, target(db, from), d.Name)
		if err != nil {
			return err
		}
		after, err := indexSpecs(ctx, s, target(db, to), d.Name)
		if err != nil {
			return err
		}
		d.IndexesAdded, d.IndexesRemoved = missingFrom(after, before), missingFrom(before, after)
	}
	return nil
}

func cut[T any](list []T) ([]T, int) {
	if len(list) <= maxDiffDocs {
		return list, 0
	}
	return list[:maxDiffDocs], len(list) - maxDiffDocs
}

// collectionOptions is a collection's options (its validator among them)
// at a revision, as Extended JSON ("": the collection is not there).
func collectionOptions(ctx context.Context, s *session, dbName, coll string) (string, error) {
	cur, err := s.client.Database(dbName).ListCollections(ctx, bson.D{{Key: "name", Value: coll}})
	if err != nil {
		return "", err
	}
	var infos []struct {
		Options bson.Raw `bson:"options"`
	}
	if err := cur.All(ctx, &infos); err != nil || len(infos) == 0 {
		return "", err
	}
	return docJSON(infos[0].Options), nil
}

// indexSpecs are a collection's index specifications at a revision, as
// one-line Extended JSON, without the fields every spec has.
func indexSpecs(ctx context.Context, s *session, dbName, coll string) ([]string, error) {
	specs, err := s.client.Database(dbName).Collection(coll).Indexes().List(ctx)
	var ce mongo.CommandError
	if errors.As(err, &ce) && ce.Name == "NamespaceNotFound" {
		return nil, nil // not there on this side
	}
	if err != nil {
		return nil, err
	}
	var docs []bson.D
	if err := specs.All(ctx, &docs); err != nil {
		return nil, err
	}
	var out []string
	for _, d := range docs {
		var kept bson.D
		for _, e := range d {
			if e.Key != "v" && e.Key != "ns" {
				kept = append(kept, e)
			}
		}
		js, err := bson.MarshalExtJSON(kept, false, false)
		if err != nil {
			return nil, err
		}
		out = append(out, string(js))
	}
	return out, nil
}

// missingFrom is what of a is not in b.
func missingFrom(a, b []string) []string {
	seen := map[string]bool{}
	for _, s := range b {
		seen[s] = true
	}
	var out []string
	for _, s := range a {
		if !seen[s] {
			out = append(out, s)
		}
	}
	return out
}
