package console

import (
	"context"
	"errors"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// protectedBranch is a branch whose writes the server keeps to holders
// of some roles (with --auth), and whether the session's user is one.
type protectedBranch struct {
	Branch   string `bson:"branch"`
	Writable bool   `bson:"writable"`
	Roles    []struct {
		Role string `bson:"role"`
		DB   string `bson:"db"`
	} `bson:"roles"`
}

// RoleNames are the roles that may write the branch, to show.
func (p protectedBranch) RoleNames() string {
	var names []string
	for _, r := range p.Roles {
		names = append(names, r.Role+" ("+r.DB+")")
	}
	return strings.Join(names, ", ")
}

// protections are db's protected branches by name. Without --auth the
// server enforces no rule, so there are none to show; a user who may not
// list them is refused the pages that would use them anyway.
func (c *Console) protections(ctx context.Context, s *session, db string) (map[string]protectedBranch, error) {
	if !c.opts.Auth {
		return nil, nil
	}
	var reply struct {
		Branches []protectedBranch `bson:"branches"`
	}
	err := run(ctx, s, db, bson.D{{Key: "dumboProtectedBranches", Value: 1}}, &reply)
	var ce mongo.CommandError
	if errors.As(err, &ce) && ce.Name == "Unauthorized" {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := map[string]protectedBranch{}
	for _, p := range reply.Branches {
		out[p.Branch] = p
	}
	return out, nil
}

// lockedBranch is the rule that keeps the session's user from writing
// branch (nil: none does).
func (c *Console) lockedBranch(ctx context.Context, s *session, db, branch string) (*protectedBranch, error) {
	ps, err := c.protections(ctx, s, db)
	if err != nil {
		return nil, err
	}
	if p, ok := ps[branch]; ok && !p.Writable {
		return &p, nil
	}
	return nil, nil
}
