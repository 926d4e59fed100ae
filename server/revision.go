package server

import (
	"strings"

	"github.com/dumbodb/dumbodb/storage"
)

// splitDBName splits "db@revision" (the revision part may be empty).
func splitDBName(full string) (name, rev string) {
	name, rev, _ = strings.Cut(full, "@")
	return name, rev
}

// currentBranch is the branch a request's HEAD means: the connection's
// default branch for this database (dumboCheckout), else main.
func (r *request) currentBranch() string { return r.currentBranchOf(r.db) }

// currentBranchOf is the branch HEAD means in database db for the
// request's connection.
func (r *request) currentBranchOf(db string) string {
	r.c.mu.Lock()
	defer r.c.mu.Unlock()
	if b, ok := r.c.branches[db]; ok {
		return b
	}
	return storage.DefaultBranch
}

// forgetCheckouts drops every connection's checkout (dumboCheckout) in
// database db, once db is dropped: its branches went with it, and a
// database of that name made later starts on main, as a new one does.
func (s *Server) forgetCheckouts(db string) {
	s.connsMu.Lock()
	defer s.connsMu.Unlock()
	for c := range s.conns {
		c.mu.Lock()
		delete(c.branches, db)
		c.mu.Unlock()
	}
}

// revision resolves the request's "@revision" on database d.
func (r *request) revision(d *storage.Database) (storage.Revision, error) {
	current := r.currentBranch()
	if r.rev == "" {
		return storage.Revision{Branch: current}, nil
	}
	return d.Resolve(r.ctx, r.rev, current)
}

// branchOf is the branch a version-control command acts on; a read-only
// revision has none.
func (r *request) branchOf(d *storage.Database) (string, error) {
	rev, err := r.revision(d)
	if err != nil {
		return "", err
	}
	if rev.ReadOnly() {
		return "", readOnlyError(r)
	}
	return rev.Branch, nil
}
