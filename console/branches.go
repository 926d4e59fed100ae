package console

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// commitInfo is a commit as dumboLog and dumboBranch describe it.
type commitInfo struct {
	CommitID  string    `bson:"commitId"`
	Parents   []string  `bson:"parents"`
	Refs      []string  `bson:"refs"`
	Message   string    `bson:"message"`
	Author    string    `bson:"author"`
	Timestamp time.Time `bson:"timestamp"`
}

// branchInfo is one branch of a database's page.
type branchInfo struct {
	Name     string     `bson:"name"`
	CommitID string     `bson:"commitId"`
	Head     commitInfo `bson:"head"`
	Remote   bool       `bson:"remote"`
	// Ahead and Behind count commits against main; Dirty: uncommitted
	// changes; Merging: a merge stopped by conflicts.
	Ahead, Behind   int
	Dirty, Merging  bool
	Current, IsMain bool
	// Protected: with --auth only holders of Roles may write it; Locked:
	// the session's user is not one.
	Protected, Locked bool
	Roles             string
}

type tagInfo struct {
	Name     string `bson:"name"`
	CommitID string `bson:"commitId"`
	Message  string `bson:"message"`
}

type databaseView struct {
	DB          string
	Current     string
	Rev         string // whose collections the page lists (?rev=, else Current)
	Branches    []branchInfo
	Remotes     []branchInfo
	Tags        []tagInfo
	Collections []string
	CanWrite    bool // may change documents
	CanVersion  bool // may commit, branch and merge
	// Locked: the checked-out branch is protected from the user's
	// writes.
	Locked *protectedBranch
}

func (v databaseView) layout() view {
	return view{Title: v.DB, DB: v.DB, Crumbs: []crumb{{v.DB, ""}}}
}

// listBranches is a database's branches and remote-tracking refs.
func listBranches(ctx context.Context, s *session, db string) (local, remote []branchInfo, err error) {
	var reply struct {
		Branches []branchInfo `bson:"branches"`
	}
	if err := run(ctx, s, db, bson.D{{Key: "dumboBranch", Value: 1}}, &reply); err != nil {
		return nil, nil, err
	}
	for _, b := range reply.Branches {
		if b.Remote {
			remote = append(remote, b)
		} else {
			local = append(local, b)
		}
	}
	return local, remote, nil
}

// databasePage shows a database's branches (head, ahead/behind main,
// dirty), tags and the collections of ?rev= (default: the checked-out
// branch).
func (c *Console) databasePage(w http.ResponseWriter, r *http.Request, s *session) error {
	db, err := pathDB(r)
	if err != nil {
		return err
	}
	ctx := r.Context()
	v := databaseView{DB: db, Current: currentBranch(s, db), Rev: pageRev(r, s, db), CanWrite: s.can(db, "insert"), CanVersion: s.can(db, "dumboVersionWrite")}
	if v.Branches, v.Remotes, err = listBranches(ctx, s, db); err != nil {
		return err
	}
	if err := branchStates(ctx, s, db, v.Current, v.Branches); err != nil {
		return err
	}
	prot, err := c.protections(ctx, s, db)
	if err != nil {
		return err
	}
	for i := range v.Branches {
		b := &v.Branches[i]
		if p, ok := prot[b.Name]; ok {
			b.Protected, b.Locked, b.Roles = true, !p.Writable, p.RoleNames()
			if b.Current && b.Locked {
				v.Locked = &p
			}
		}
	}
	var tags struct {
		Tags []tagInfo `bson:"tags"`
	}
	if err := run(ctx, s, db, bson.D{{Key: "dumboTag", Value: 1}}, &tags); err != nil {
		return err
	}
	v.Tags = tags.Tags
	names, err := s.client.Database(target(db, v.Rev)).ListCollectionNames(ctx, bson.D{})
	if err != nil {
		return err
	}
	slices.Sort(names)
	v.Collections = names
	c.render(w, r, http.StatusOK, "database", s, v)
	return nil
}

// branchStates fills in each branch's ahead/behind against main and its
// working set's state.
func branchStates(ctx context.Context, s *session, db, current string, branches []branchInfo) error {
	var targets []string
	for i := range branches {
		b := &branches[i]
		b.Current, b.IsMain = b.Name == current, b.Name == "main"
		if !b.IsMain {
			targets = append(targets, b.Name)
		}
		var st struct {
			Dirty bool     `bson:"dirty"`
			Merge bson.Raw `bson:"merge"`
		}
		if err := run(ctx, s, target(db, b.Name), bson.D{{Key: "dumboStatus", Value: 1}}, &st); err != nil {
			return err
		}
		b.Dirty, b.Merging = st.Dirty, len(st.Merge) > 0
	}
	if len(targets) == 0 || !slices.ContainsFunc(branches, func(b branchInfo) bool { return b.IsMain }) {
		return nil
	}
	var reply struct {
		Statuses []struct {
			Target string `bson:"target"`
			Ahead  int    `bson:"ahead"`
			Behind int    `bson:"behind"`
		} `bson:"statuses"`
	}
	err := run(ctx, s, db, bson.D{{Key: "dumboBranchStatus", Value: 1}, {Key: "base", Value: "main"}, {Key: "targets", Value: targets}}, &reply)
	if err != nil {
		return err
	}
	for _, st := range reply.Statuses {
		if i := slices.IndexFunc(branches, func(b branchInfo) bool { return b.Name == st.Target }); i >= 0 {
			branches[i].Ahead, branches[i].Behind = st.Ahead, st.Behind
		}
	}
	return nil
}

// back sends the browser to the database's page after an action.
func back(w http.ResponseWriter, r *http.Request, db string) {
	http.Redirect(w, r, Prefix+"db/"+url.PathEscape(db), http.StatusSeeOther)
}

// form reads an action's database from its URL and the form's fields
// named, none of which may be empty.
func form(r *http.Request, names ...string) (string, []string, error) {
	db, err := pathDB(r)
	if err != nil {
		return "", nil, err
	}
	vals := make([]string, len(names))
	for i, name := range names {
		if vals[i] = strings.TrimSpace(r.PostFormValue(name)); vals[i] == "" {
			return "", nil, badRequest("the form lacks " + name)
		}
	}
	return db, vals, nil
}

func (c *Console) createBranch(w http.ResponseWriter, r *http.Request, s *session) error {
	db, f, err := form(r, "name")
	if err != nil {
		return err
	}
	name, from := f[0], strings.TrimSpace(r.PostFormValue("from"))
	if from == "" {
		from = currentBranch(s, db)
	}
	var reply struct {
		CommitID string `bson:"commitId"`
	}
	if err := run(r.Context(), s, target(db, from), bson.D{{Key: "dumboBranch", Value: 1}, {Key: "branch", Value: name}}, &reply); err != nil {
		return err
	}
	s.say(fmt.Sprintf("Branch %s created at %s (from %s).", name, shortID(reply.CommitID), from))
	back(w, r, db)
	return nil
}

func (c *Console) deleteBranch(w http.ResponseWriter, r *http.Request, s *session) error {
	db, f, err := form(r, "name")
	if err != nil {
		return err
	}
	name, how := f[0], "delete"
	if r.PostFormValue("force") != "" {
		how = "forceDelete"
	}
	cmd := bson.D{{Key: "dumboBranch", Value: 1}, {Key: "branch", Value: name}, {Key: how, Value: 1}}
	if err := run(r.Context(), s, target(db, currentBranch(s, db)), cmd, nil); err != nil {
		return err
	}
	if s.branch(db) == name {
		s.setBranch(db, "")
	}
	s.say("Branch " + name + " deleted.")
	back(w, r, db)
	return nil
}

// checkout makes a branch the one the session's pages of db show and
// write to (the console's counterpart of dumboCheckout, which is a
// connection's).
func (c *Console) checkout(w http.ResponseWriter, r *http.Request, s *session) error {
	db, f, err := form(r, "branch")
	if err != nil {
		return err
	}
	name := f[0]
	local, _, err := listBranches(r.Context(), s, db)
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(local, func(b branchInfo) bool { return b.Name == name }) {
		return notFound("no branch " + name + " in " + db)
	}
	s.setBranch(db, name)
	s.say("Checked out " + name + ".")
	back(w, r, db)
	return nil
}

// commit commits a branch's working set.
func (c *Console) commit(w http.ResponseWriter, r *http.Request, s *session) error {
	db, f, err := form(r, "branch", "message")
	if err != nil {
		return err
	}
	branch, msg := f[0], f[1]
	var reply struct {
		CommitID string `bson:"commitId"`
	}
	if err := run(r.Context(), s, target(db, branch), bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: msg}}, &reply); err != nil {
		return err
	}
	s.say(fmt.Sprintf("Committed %s on %s.", shortID(reply.CommitID), branch))
	back(w, r, db)
	return nil
}
