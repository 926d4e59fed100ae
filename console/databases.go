package console

import (
	"context"
	"net/http"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// run runs a command on the database named dbName (a revision's name
// included) and decodes its reply into out (nil: only its error).
func run(ctx context.Context, s *session, dbName string, cmd bson.D, out any) error {
	res := s.client.Database(dbName).RunCommand(ctx, cmd)
	if out == nil {
		return res.Err()
	}
	return res.Decode(out)
}

// target is the database name that addresses db at rev ("": the
// branch a plain name stands for).
func target(db, rev string) string {
	if rev == "" {
		return db
	}
	return db + "@" + rev
}

// pathDB is the database the URL names; a revision goes in ?rev=.
func pathDB(r *http.Request) (string, error) {
	db := r.PathValue("db")
	if db == "" || strings.ContainsAny(db, "@/\\. \"$") {
		return "", badRequest("not a database name: " + db + " (name a revision with ?rev=)")
	}
	return db, nil
}

// currentBranch is the branch the session has checked out in db, else
// main.
func currentBranch(s *session, db string) string {
	if b := s.branch(db); b != "" {
		return b
	}
	return "main"
}

// pageRev is the revision a page shows: ?rev=, else the checked-out
// branch.
func pageRev(r *http.Request, s *session, db string) string {
	if rev := strings.TrimSpace(r.FormValue("rev")); rev != "" {
		return rev
	}
	return currentBranch(s, db)
}

type databaseInfo struct {
	Name       string `bson:"name"`
	SizeOnDisk int64  `bson:"sizeOnDisk"`
	Empty      bool   `bson:"empty"`
}

type databasesView struct {
	Databases []databaseInfo
	TotalSize int64
}

func (databasesView) layout() view { return view{Title: "Databases"} }

// databasesPage lists the databases with their sizes.
func (c *Console) databasesPage(w http.ResponseWriter, r *http.Request, s *session) error {
	cmd := bson.D{{Key: "listDatabases", Value: 1}}
	if s.user != "" {
		cmd = append(cmd, bson.E{Key: "authorizedDatabases", Value: true})
	}
	var v struct {
		Databases []databaseInfo `bson:"databases"`
		TotalSize int64          `bson:"totalSize"`
	}
	if err := run(r.Context(), s, "admin", cmd, &v); err != nil {
		return err
	}
	c.render(w, r, http.StatusOK, "databases", s, databasesView(v))
	return nil
}
