package server_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// vc runs a version-control command on db (which may carry "@rev").
func vc(t *testing.T, c *mongo.Client, db string, cmd bson.D) bson.M {
	t.Helper()
	return mustRun(t, c.Database(db), cmd)
}

func findV(t *testing.T, c *mongo.Client, db string, id any) any {
	t.Helper()
	var d bson.M
	err := c.Database(db).Collection("items").FindOne(ctx, bson.M{"_id": id}).Decode(&d)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return d["v"]
}

func TestVersionControlWorkflow(t *testing.T) {
	ts := startServer(t)
	c := ts.client()
	items := c.Database("shop").Collection("items")
	if _, err := items.InsertMany(ctx, []any{bson.M{"_id": 1, "v": 1, "w": 1}, bson.M{"_id": 2, "v": 1}}); err != nil {
		t.Fatal(err)
	}
	st := vc(t, c, "shop", bson.D{{Key: "dumboStatus", Value: 1}})
	if st["dirty"] != true {
		t.Fatalf("status %v", st)
	}
	first := vc(t, c, "shop", bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "seed"}, {Key: "author", Value: "Ann <ann@example.com>"}})
	if len(first["commitId"].(string)) != 32 || first["branch"] != "main" || first["author"] != "Ann <ann@example.com>" {
		t.Fatalf("commit reply %v", first)
	}
	_, err := run(t, c.Database("shop"), bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "nothing"}})
	wantCode(t, err, 20003, "NothingToCommit")

	// A branch, written through its database name.
	vc(t, c, "shop", bson.D{{Key: "dumboBranch", Value: 1}, {Key: "branch", Value: "feature"}})
	fitems := c.Database("shop@feature").Collection("items")
	if _, err := fitems.UpdateOne(ctx, bson.M{"_id": 1}, bson.M{"$set": bson.M{"v": 2}}); err != nil {
		t.Fatal(err)
	}
	if findV(t, c, "shop", 1) != int32(1) || findV(t, c, "shop@feature", 1) != int32(2) {
		t.Fatal("branches are not isolated")
	}
	vc(t, c, "shop@feature", bson.D{{Key: "doltCommit", Value: 1}, {Key: "message", Value: "v=2 on feature"}})
	if _, err := items.UpdateOne(ctx, bson.M{"_id": 1}, bson.M{"$set": bson.M{"w": 5}}); err != nil {
		t.Fatal(err)
	}
	vc(t, c, "shop", bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "w=5 on main"}})
	bs := vc(t, c, "shop", bson.D{{Key: "dumboBranchStatus", Value: 1}, {Key: "base", Value: "main"}, {Key: "targets", Value: bson.A{"feature"}}})
	if s := bs["statuses"].(bson.A)[0]; get(s, "ahead") != int32(1) || get(s, "behind") != int32(1) {
		t.Fatalf("branch status %v", bs)
	}

	// listDatabases shows the database once (with admin, config and local).
	names, _ := c.ListDatabaseNames(ctx, bson.M{})
	if strings.Join(names, " ") != "admin config local shop" {
		t.Fatalf("databases %v", names)
	}

	// Merge: different fields of one document merge at field level.
	m := vc(t, c, "shop", bson.D{{Key: "dumboMerge", Value: 1}, {Key: "mergeIn", Value: "feature"}})
	if m["fastForward"] != false {
		t.Fatalf("merge %v", m)
	}
	var doc bson.M
	items.FindOne(ctx, bson.M{"_id": 1}).Decode(&doc)
	if doc["v"] != int32(2) || doc["w"] != int32(5) {
		t.Fatalf("merged document %v", doc)
	}

	// A conflict: the same field on both sides.
	fitems.UpdateOne(ctx, bson.M{"_id": 2}, bson.M{"$set": bson.M{"v": "theirs"}})
	vc(t, c, "shop@feature", bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "theirs"}})
	items.UpdateOne(ctx, bson.M{"_id": 2}, bson.M{"$set": bson.M{"v": "ours"}})
	vc(t, c, "shop", bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "ours"}})
	res := c.Database("shop").RunCommand(ctx, bson.D{{Key: "dumboMerge", Value: 1}, {Key: "mergeIn", Value: "feature"}})
	wantCode(t, res.Err(), 20002, "MergeConflict")
	raw, _ := res.Raw()
	if n, _ := raw.Lookup("conflicts", "items").AsInt64OK(); n != 1 {
		t.Fatalf("conflict counts %v", raw)
	}
	_, err = run(t, c.Database("shop"), bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "x"}})
	wantCode(t, err, 20007, "MergeInProgress")
	conf := vc(t, c, "shop", bson.D{{Key: "dumboConflicts", Value: 1}})
	cf := conf["conflicts"].(bson.A)[0]
	if get(cf, "ours", "v") != "ours" || get(cf, "theirs", "v") != "theirs" || get(cf, "base", "v") != int32(1) {
		t.Fatalf("conflicts %v", conf)
	}
	// The merge state survives a restart.
	ts.restart()
	c = ts.client()
	items = c.Database("shop").Collection("items")
	_, err = run(t, c.Database("shop"), bson.D{{Key: "dumboMerge", Value: 1}, {Key: "continue", Value: 1}})
	wantCode(t, err, 20009, "UnresolvedConflicts")
	vc(t, c, "shop", bson.D{{Key: "dumboResolveConflict", Value: 1}, {Key: "collection", Value: "items"}, {Key: "_id", Value: 2},
		{Key: "resolution", Value: "custom"}, {Key: "document", Value: bson.M{"v": "both"}}})
	done := vc(t, c, "shop", bson.D{{Key: "dumboMerge", Value: 1}, {Key: "continue", Value: 1}})
	if findV(t, c, "shop", 2) != "both" || done["commitId"] == nil {
		t.Fatalf("after continue: %v", done)
	}

	// History: newest first, both parents of merges; one document's history.
	log := vc(t, c, "shop", bson.D{{Key: "dumboLog", Value: 1}})
	commits := log["commits"].(bson.A)
	if get(commits[0], "commitId") != done["commitId"] || len(get(commits[0], "parents").(bson.A)) != 2 || len(commits) < 7 {
		t.Fatalf("log %v", log)
	}
	hist := vc(t, c, "shop", bson.D{{Key: "dumboLog", Value: 1}, {Key: "collection", Value: "items"}, {Key: "_id", Value: 2}})
	if n := len(hist["commits"].(bson.A)); n < 3 {
		t.Fatalf("history of _id 2 has %d commits", n)
	}
	limited := vc(t, c, "shop", bson.D{{Key: "dumboLog", Value: 1}, {Key: "limit", Value: 2}})
	if len(limited["commits"].(bson.A)) != 2 {
		t.Fatal("limit ignored")
	}

	// Diff with field paths, and reading an earlier revision.
	diff := vc(t, c, "shop", bson.D{{Key: "dumboDiff", Value: 1}, {Key: "from", Value: "main~1"}, {Key: "to", Value: "main"}})
	mod := get(diff["collections"].(bson.A)[0], "modified").(bson.A)[0]
	ch := get(mod, "changes").(bson.A)[0]
	if get(ch, "path") != "v" || get(ch, "from") != "ours" || get(ch, "to") != "both" {
		t.Fatalf("diff %v", diff)
	}
	if _, err := items.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "v", Value: 1}}}); err != nil {
		t.Fatal(err)
	}
	idiff := vc(t, c, "shop", bson.D{{Key: "dumboDiff", Value: 1}})
	if get(idiff["collections"].(bson.A)[0], "indexesChanged") != true {
		t.Fatalf("index change not in the diff: %v", idiff)
	}
	if findV(t, c, "shop@main~1", 2) != "ours" {
		t.Fatal("shop@main~1 does not read the earlier state")
	}
	_, err = c.Database("shop@main~1").Collection("items").InsertOne(ctx, bson.M{"_id": 9})
	if !isCode(err, 20000) {
		t.Fatalf("write to a read-only revision: %v", err)
	}

	// Tags are read-only snapshots.
	vc(t, c, "shop", bson.D{{Key: "dumboTag", Value: 1}, {Key: "name", Value: "v1"}, {Key: "message", Value: "release"}})
	items.InsertOne(ctx, bson.M{"_id": 3, "v": "late"})
	if findV(t, c, "shop@v1", 3) != nil || findV(t, c, "shop", 3) != "late" {
		t.Fatal("tag snapshot sees later writes")
	}
	tags := vc(t, c, "shop", bson.D{{Key: "dumboTag", Value: 1}})
	if len(tags["tags"].(bson.A)) != 1 {
		t.Fatalf("tags %v", tags)
	}
	_, err = c.Database("shop@v1").Collection("items").DeleteMany(ctx, bson.M{})
	if !isCode(err, 20000) {
		t.Fatalf("delete on a tag: %v", err)
	}

	// Reset hard discards the uncommitted insert.
	vc(t, c, "shop", bson.D{{Key: "dumboReset", Value: 1}, {Key: "hard", Value: true}})
	if findV(t, c, "shop", 3) != nil {
		t.Fatal("hard reset kept the uncommitted document")
	}

	// Deleting branches.
	vc(t, c, "shop", bson.D{{Key: "dumboBranch", Value: 1}, {Key: "branch", Value: "scratch"}})
	c.Database("shop@scratch").Collection("items").InsertOne(ctx, bson.M{"_id": 50})
	vc(t, c, "shop@scratch", bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "unmerged"}})
	vc(t, c, "shop@scratch", bson.D{{Key: "dumboBranch", Value: 1}, {Key: "branch", Value: "keep"}})
	_, err = run(t, c.Database("shop"), bson.D{{Key: "dumboBranch", Value: 1}, {Key: "branch", Value: "scratch"}, {Key: "delete", Value: 1}})
	wantCode(t, err, 20005, "BranchUnmerged")
	// Sent to a branch that has its commits, the delete goes through.
	vc(t, c, "shop@keep", bson.D{{Key: "dumboBranch", Value: 1}, {Key: "branch", Value: "scratch"}, {Key: "delete", Value: 1}})
	vc(t, c, "shop", bson.D{{Key: "dumboBranch", Value: 1}, {Key: "branch", Value: "keep"}, {Key: "forceDelete", Value: 1}})
	list := vc(t, c, "shop", bson.D{{Key: "dumboBranch", Value: 1}})
	if len(list["branches"].(bson.A)) != 2 {
		t.Fatalf("branches %v", list)
	}
	_, err = c.Database("shop@scratch").Collection("items").InsertOne(ctx, bson.M{"_id": 51})
	if !isCode(err, 20001) {
		t.Fatalf("write to a deleted branch: %v", err)
	}
}

func isCode(err error, code int) bool {
	var we mongo.WriteException
	if errors.As(err, &we) {
		return len(we.WriteErrors) > 0 && we.WriteErrors[0].Code == code
	}
	var ce mongo.CommandError
	return errors.As(err, &ce) && int(ce.Code) == code
}

func TestCherryPickRevertAndCheckout(t *testing.T) {
	ts := startServer(t)
	c := ts.client()
	items := c.Database("db").Collection("items")
	items.InsertOne(ctx, bson.M{"_id": 1, "v": 1})
	vc(t, c, "db", bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "base"}})
	vc(t, c, "db", bson.D{{Key: "dumboBranch", Value: "side"}})
	// An application that cannot change database names checks out a branch.
	conn := ts.client()
	vc(t, conn, "db", bson.D{{Key: "dumboCheckout", Value: 1}, {Key: "branch", Value: "side"}})
	conn.Database("db").Collection("items").InsertOne(ctx, bson.M{"_id": 2, "v": 2})
	picked := vc(t, conn, "db", bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "add 2"}})
	if findV(t, c, "db", 2) != nil || findV(t, c, "db@side", 2) != int32(2) {
		t.Fatal("checkout did not route writes to the branch")
	}
	cp := vc(t, c, "db", bson.D{{Key: "dumboCherryPick", Value: 1}, {Key: "commit", Value: picked["commitId"]}})
	if findV(t, c, "db", 2) != int32(2) {
		t.Fatalf("cherry-pick %v", cp)
	}
	vc(t, c, "db", bson.D{{Key: "doltRevert", Value: 1}, {Key: "commit", Value: cp["commitId"]}})
	if findV(t, c, "db", 2) != nil {
		t.Fatal("revert kept the document")
	}
	short := picked["commitId"].(string)[:10]
	if findV(t, c, "db@"+short, 2) != int32(2) {
		t.Fatal("a short hash does not resolve")
	}
	_, err := run(t, c.Database("db"), bson.D{{Key: "dumboMerge", Value: 1}, {Key: "mergeIn", Value: "nope"}})
	wantCode(t, err, 20001, "RevisionNotFound")
	_, err = run(t, c.Database("nodb"), bson.D{{Key: "dumboLog", Value: 1}})
	wantCode(t, err, 26, "NamespaceNotFound")
	_, err = run(t, c.Database("db@side"), bson.D{{Key: "dumboMerge", Value: 1}, {Key: "mergeIn", Value: "main"}, {Key: "ffOnly", Value: true}})
	wantCode(t, err, 20010, "NotFastForward")
	// A branch behind main fast-forwards.
	vc(t, c, "db", bson.D{{Key: "dumboBranch", Value: "behind"}})
	items.InsertOne(ctx, bson.M{"_id": 7, "v": 7})
	vc(t, c, "db", bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "seven"}})
	ff := vc(t, c, "db@behind", bson.D{{Key: "dumboMerge", Value: 1}, {Key: "mergeIn", Value: "main"}, {Key: "ffOnly", Value: true}})
	if ff["fastForward"] != true || findV(t, c, "db@behind", 7) != int32(7) {
		t.Fatalf("fast-forward %v", ff)
	}
	again := vc(t, c, "db@behind", bson.D{{Key: "dumboMerge", Value: 1}, {Key: "mergeIn", Value: "main"}})
	if again["upToDate"] != true {
		t.Fatalf("merge again %v", again)
	}
}

// A dropped database takes its branches with it: a connection that had
// checked one out writes to main of the database made next, whoever
// dropped it (the checkout was kept, and every command then failed with
// "branch not found").
func TestDropDatabaseEndsCheckouts(t *testing.T) {
	ts := startServer(t)
	c := ts.client()
	one := ts.client(options.Client().SetMaxPoolSize(1))
	for _, dropper := range []*mongo.Client{c, one} {
		c.Database("db").Collection("items").InsertOne(ctx, bson.M{"_id": 1, "v": 1})
		vc(t, c, "db", bson.D{{Key: "dumboBranch", Value: "side"}})
		vc(t, one, "db", bson.D{{Key: "dumboCheckout", Value: 1}, {Key: "branch", Value: "side"}})
		if err := dropper.Database("db").Drop(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := one.Database("db").Collection("items").InsertOne(ctx, bson.M{"_id": 2, "v": 2}); err != nil {
			t.Fatal(err)
		}
		if st := vc(t, one, "db", bson.D{{Key: "dumboStatus", Value: 1}}); st["branch"] != "main" {
			t.Fatalf("status after the drop: %v", st)
		}
		if findV(t, c, "db", 2) != int32(2) {
			t.Fatal("the write after the drop is not on main")
		}
		if err := c.Database("db").Drop(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

func TestRebaseGCAndConcurrentCommits(t *testing.T) {
	ts := startServer(t)
	c := ts.client()
	items := c.Database("r").Collection("items")
	items.InsertOne(ctx, bson.M{"_id": 1, "v": 1})
	vc(t, c, "r", bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "base"}})
	vc(t, c, "r", bson.D{{Key: "dumboBranch", Value: "topic"}})
	c.Database("r@topic").Collection("items").InsertOne(ctx, bson.M{"_id": 2})
	vc(t, c, "r@topic", bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "topic"}})
	items.InsertOne(ctx, bson.M{"_id": 3})
	vc(t, c, "r", bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "main"}})
	vc(t, c, "r@topic", bson.D{{Key: "dumboRebase", Value: 1}, {Key: "onto", Value: "main"}})
	log := vc(t, c, "r@topic", bson.D{{Key: "dumboLog", Value: 1}, {Key: "limit", Value: 2}})
	cs := log["commits"].(bson.A)
	if get(cs[0], "message") != "topic" || get(cs[1], "message") != "main" {
		t.Fatalf("rebased log %v", log)
	}
	gc := vc(t, c, "r", bson.D{{Key: "dumboGC", Value: 1}})
	if gc["bytesAfter"].(int64) > gc["bytesBefore"].(int64) {
		t.Fatalf("gc %v", gc)
	}

	// Two clients committing to one branch at once: both succeed, in some
	// order, or get a clear error; nothing is lost.
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for i := 0; i < 2; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			cl := ts.client()
			if _, err := cl.Database("r").Collection("items").InsertOne(ctx, bson.M{"_id": 100 + i}); err != nil {
				errs <- err
				return
			}
			_, err := run(t, cl.Database("r"), bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: fmt.Sprint("c", i)}})
			if err != nil && !isCode(err, 20003) { // the other commit may have taken both writes
				errs <- err
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	st := vc(t, c, "r", bson.D{{Key: "dumboStatus", Value: 1}})
	if st["dirty"] != false {
		t.Fatalf("uncommitted changes left after concurrent commits: %v", st)
	}
	head := vc(t, c, "r", bson.D{{Key: "dumboLog", Value: 1}, {Key: "limit", Value: 1}})
	id := get(head["commits"].(bson.A)[0], "commitId").(string)
	if n, _ := c.Database("r@"+id).Collection("items").CountDocuments(ctx, bson.M{}); n != 4 {
		t.Fatalf("the head commit has %d documents, want 4", n)
	}
}
