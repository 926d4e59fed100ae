package server_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/dumbodb/dumbodb/server"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// panicCase is one operation run with a panic injected at one storage step.
type panicCase struct {
	step string
	name string
	db   string // "shop" or "shop@feat"
	cmd  bson.D
}

// panicCases covers each step of the write path and of checkpoints, and every
// version-control command at the step where it holds the branch lock and, for
// those that move refs, after the move.
func panicCases() []panicCase {
	ins := bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: "new"}}}}}
	commit := bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "m"}}
	vcCmds := []struct {
		name string
		db   string
		cmd  bson.D
		ref  bool // moves a ref, so passes vc.ref
	}{
		{"commit", "shop", commit, true},
		{"branch-delete", "shop", bson.D{{Key: "dumboBranch", Value: 1}, {Key: "branch", Value: "feat"}, {Key: "forceDelete", Value: 1}}, true},
		{"merge", "shop", bson.D{{Key: "dumboMerge", Value: 1}, {Key: "mergeIn", Value: "feat"}}, true},
		{"merge-ff", "shop@feat", bson.D{{Key: "dumboMerge", Value: 1}, {Key: "mergeIn", Value: "main"}}, true},
		{"reset-hard", "shop", bson.D{{Key: "dumboReset", Value: 1}, {Key: "to", Value: "HEAD~1"}, {Key: "hard", Value: true}}, true},
		{"reset-soft", "shop", bson.D{{Key: "dumboReset", Value: 1}, {Key: "to", Value: "HEAD~1"}}, true},
		{"cherry-pick", "shop", bson.D{{Key: "dumboCherryPick", Value: 1}, {Key: "commit", Value: "feat"}}, true},
		{"revert", "shop", bson.D{{Key: "dumboRevert", Value: 1}, {Key: "commit", Value: "HEAD"}}, true},
		{"rebase", "shop@feat", bson.D{{Key: "dumboRebase", Value: 1}, {Key: "onto", Value: "main"}}, true},
		{"status", "shop", bson.D{{Key: "dumboStatus", Value: 1}}, false},
		{"diff", "shop", bson.D{{Key: "dumboDiff", Value: 1}, {Key: "from", Value: "HEAD~1"}, {Key: "to", Value: "WORKING"}}, false},
		{"gc", "shop", bson.D{{Key: "dumboGC", Value: 1}}, false},
	}
	cases := []panicCase{
		{"write.log", "insert", "shop", ins},
		{"write.published", "insert", "shop", ins},
		{"write.log", "insert-branch", "shop@feat", ins},
		{"checkpoint.fold", "commit", "shop", commit},
		// A commit writes the working set with the commit, past a
		// checkpoint's persist step; a status check persists it.
		{"checkpoint.persist", "status", "shop", bson.D{{Key: "dumboStatus", Value: 1}}},
	}
	for _, v := range vcCmds {
		cases = append(cases, panicCase{"vc.locked", v.name, v.db, v.cmd})
		if v.ref {
			cases = append(cases, panicCase{"vc.ref", v.name, v.db, v.cmd})
		}
	}
	cases = append(cases,
		panicCase{"vc.ref", "branch-create", "shop", bson.D{{Key: "dumboBranch", Value: 1}, {Key: "branch", Value: "other"}}},
		panicCase{"vc.ref", "tag", "shop", bson.D{{Key: "dumboTag", Value: 1}, {Key: "name", Value: "v1"}}},
	)
	return cases
}

// TestPanicLeavesServerWorking injects a panic at each storage step during
// each kind of operation: the command answers InternalError, every lock is
// released (writes, commits and checkpoints on that database go on), and
// what is visible stays the same across a restart (memory and disk agree).
func TestPanicLeavesServerWorking(t *testing.T) {
	for _, pc := range panicCases() {
		t.Run(pc.step+"/"+pc.name, func(t *testing.T) {
			t.Parallel()
			ts := startServer(t, func(c *server.Config) { c.TestCommands = true })
			c := ts.client(options.Client().SetRetryWrites(false))
			seedPanicHistory(t, c, !strings.HasPrefix(pc.step, "vc.") || pc.name == "commit")

			admin := c.Database("admin")
			mustRun(t, admin, bson.D{{Key: "configureFailPoint", Value: "dumboPanic"}, {Key: "mode", Value: bson.D{{Key: "times", Value: 1}}},
				{Key: "data", Value: bson.D{{Key: "step", Value: pc.step}}}})
			_, err := run(t, c.Database(pc.db), pc.cmd)
			wantCode(t, err, 1, "InternalError")
			mustRun(t, admin, bson.D{{Key: "configureFailPoint", Value: "dumboPanic"}, {Key: "mode", Value: "off"}})

			// Every lock was released: the same database takes writes and commits.
			for _, db := range []string{"shop", "shop@feat"} {
				if br, _ := visibleState(t, c, db); br == nil {
					continue // the panicking command deleted that branch
				}
				mustRun(t, c.Database(db), bson.D{{Key: "insert", Value: "after"}, {Key: "documents", Value: bson.A{bson.D{{Key: "x", Value: 1}}}}})
				mustRun(t, c.Database(db), bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "after the panic"}})
			}
			before := map[string]any{}
			for _, db := range []string{"shop", "shop@feat"} {
				br, docs := visibleState(t, c, db)
				before[db] = []any{br, docs}
			}
			ts.restart()
			c = ts.client(options.Client().SetRetryWrites(false))
			for _, db := range []string{"shop", "shop@feat"} {
				br, docs := visibleState(t, c, db)
				if got := []any{br, docs}; !reflect.DeepEqual(got, before[db]) {
					t.Fatalf("%s after restart:\n got %v\nwant %v", db, got, before[db])
				}
			}
		})
	}
}

// seedPanicHistory makes shop with two commits on main and a branch feat
// one commit ahead of where it left main, plus uncommitted work on main when
// dirty (merges and cherry-picks refuse a dirty branch).
func seedPanicHistory(t *testing.T, c *mongo.Client, dirty bool) {
	t.Helper()
	shop, feat := c.Database("shop"), c.Database("shop@feat")
	insert := func(db *mongo.Database, id string) {
		mustRun(t, db, bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: id}}}}})
	}
	commit := func(db *mongo.Database, msg string) {
		mustRun(t, db, bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: msg}})
	}
	insert(shop, "a")
	commit(shop, "one")
	mustRun(t, shop, bson.D{{Key: "dumboBranch", Value: 1}, {Key: "branch", Value: "feat"}})
	insert(shop, "b")
	commit(shop, "two")
	insert(feat, "f")
	commit(feat, "feat one")
	if dirty {
		insert(shop, "uncommitted")
	}
}

// visibleState is a branch's head commit and its documents, or nil when the
// branch does not exist.
func visibleState(t *testing.T, c *mongo.Client, db string) (any, []bson.M) {
	t.Helper()
	log, err := run(t, c.Database(db), bson.D{{Key: "dumboLog", Value: 1}, {Key: "limit", Value: 1}})
	if err != nil {
		return nil, nil
	}
	var docs []bson.M
	for _, coll := range []string{"c", "after"} {
		cur, err := c.Database(db).Collection(coll).Find(ctx, bson.D{}, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}))
		if err != nil {
			t.Fatal(err)
		}
		var part []bson.M
		if err := cur.All(ctx, &part); err != nil {
			t.Fatal(err)
		}
		for _, d := range part {
			d["coll"] = coll
			if coll == "after" {
				delete(d, "_id") // fresh ObjectIds
			}
			docs = append(docs, d)
		}
	}
	commits, _ := log["commits"].(bson.A)
	return fmt.Sprint(commits), docs
}
