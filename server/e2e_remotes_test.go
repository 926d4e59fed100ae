package server_test

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// listIndexSpecs lists a collection's indexes through the driver.
func listIndexSpecs(t *testing.T, coll *mongo.Collection) []bson.M {
	t.Helper()
	return allDocs(t)(coll.Indexes().List(ctx))
}

func collectionInfos(t *testing.T, db *mongo.Database) []bson.M {
	t.Helper()
	cur, err := db.ListCollections(ctx, bson.M{})
	if err != nil {
		t.Fatal(err)
	}
	var out []bson.M
	if err := cur.All(ctx, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRemotesOverAFileRemote: a database pushed to a file remote and
// cloned by a second server has the same commits, documents, indexes,
// validator and view; a commit pushed from the clone is fetched (the
// upstream reported behind) and pulled back as a fast-forward; tracking
// refs are listed and read-only; a diverged push is NotFastForward.
func TestRemotesOverAFileRemote(t *testing.T) {
	a, b := startServer(t).client(), startServer(t).client()
	shop := a.Database("shop")
	mustRun(t, shop, bson.D{{Key: "create", Value: "items"}, {Key: "validator", Value: bson.M{"v": bson.M{"$type": "int"}}}})
	if _, err := shop.Collection("items").InsertMany(ctx, []any{bson.M{"_id": 1, "v": 1}, bson.M{"_id": 2, "v": 2}}); err != nil {
		t.Fatal(err)
	}
	if _, err := shop.Collection("items").Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "v", Value: -1}}}); err != nil {
		t.Fatal(err)
	}
	mustRun(t, shop, bson.D{{Key: "create", Value: "big"}, {Key: "viewOn", Value: "items"}, {Key: "pipeline", Value: bson.A{bson.M{"$match": bson.M{"v": bson.M{"$gt": 1}}}}}})
	seed := vc(t, a, "shop", bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "seed"}})
	url := "file://" + filepath.Join(t.TempDir(), "remote")
	vc(t, a, "shop", bson.D{{Key: "dumboRemote", Value: "add"}, {Key: "name", Value: "origin"}, {Key: "url", Value: url}})
	pushed := vc(t, a, "shop", bson.D{{Key: "dumboPush", Value: 1}, {Key: "remote", Value: "origin"}, {Key: "setUpstream", Value: true}})
	if pushed["chunks"].(int64) == 0 {
		t.Fatalf("push %v", pushed)
	}

	cloned := vc(t, b, "shop", bson.D{{Key: "dumboClone", Value: 1}, {Key: "url", Value: url}})
	if cloned["database"] != "shop" {
		t.Fatalf("clone %v", cloned)
	}
	bshop := b.Database("shop")
	if log := vc(t, b, "shop", bson.D{{Key: "dumboLog", Value: 1}}); get(log["commits"].(bson.A)[0], "commitId") != seed["commitId"] {
		t.Fatalf("the clone's log %v, want head %v", log, seed["commitId"])
	}
	if findV(t, b, "shop", 2) != int32(2) {
		t.Fatal("the clone lacks a document")
	}
	if got, want := listIndexSpecs(t, bshop.Collection("items")), listIndexSpecs(t, shop.Collection("items")); !reflect.DeepEqual(got, want) {
		t.Errorf("indexes %v, want %v", got, want)
	}
	if got, want := collectionInfos(t, bshop), collectionInfos(t, shop); !reflect.DeepEqual(got, want) {
		t.Errorf("collections %v, want %v", got, want)
	}
	if _, err := bshop.Collection("items").InsertOne(ctx, bson.M{"_id": 3, "v": "not an int"}); err == nil {
		t.Error("the clone's validator let a bad document in")
	}

	// A commit from the clone, pushed through its upstream (origin/main).
	if _, err := bshop.Collection("items").InsertOne(ctx, bson.M{"_id": 3, "v": 3}); err != nil {
		t.Fatal(err)
	}
	vc(t, b, "shop", bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "three"}})
	vc(t, b, "shop", bson.D{{Key: "doltPush", Value: 1}})
	fetched := vc(t, a, "shop", bson.D{{Key: "dumboFetch", Value: 1}})
	if len(fetched["updated"].(bson.A)) != 1 {
		t.Errorf("fetch %v", fetched)
	}
	st := vc(t, a, "shop", bson.D{{Key: "dumboStatus", Value: 1}})
	if up := st["upstream"]; get(up, "behind") != int32(1) || get(up, "ahead") != int32(0) {
		t.Errorf("status upstream %v", st)
	}
	if findV(t, a, "shop@origin/main", 3) != int32(3) || findV(t, a, "shop", 3) != nil {
		t.Error("origin/main does not read as fetched, or main moved")
	}
	_, err := a.Database("shop@origin/main").Collection("items").InsertOne(ctx, bson.M{"_id": 9, "v": 9})
	wantCode(t, err, 20000, "ReadOnlyRevision")
	branches := vc(t, a, "shop", bson.D{{Key: "dumboBranch", Value: 1}})
	if bs := branches["branches"].(bson.A); len(bs) != 2 || get(bs[1], "name") != "origin/main" || get(bs[1], "remote") != true {
		t.Errorf("branches %v", branches)
	}
	pulled := vc(t, a, "shop", bson.D{{Key: "dumboPull", Value: 1}})
	if pulled["fastForward"] != true || findV(t, a, "shop", 3) != int32(3) {
		t.Fatalf("pull %v", pulled)
	}

	// Diverged: the second push is refused.
	for i, c := range []*mongo.Client{a, b} {
		if _, err := c.Database("shop").Collection("items").InsertOne(ctx, bson.M{"_id": 10 + i, "v": i}); err != nil {
			t.Fatal(err)
		}
		vc(t, c, "shop", bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "diverge"}})
	}
	vc(t, a, "shop", bson.D{{Key: "dumboPush", Value: 1}})
	_, err = run(t, bshop, bson.D{{Key: "dumboPush", Value: 1}})
	wantCode(t, err, 20010, "NotFastForward")
	_, err = run(t, bshop, bson.D{{Key: "dumboPull", Value: 1}, {Key: "ffOnly", Value: true}})
	wantCode(t, err, 20010, "NotFastForward")
	merged := vc(t, b, "shop", bson.D{{Key: "dumboPull", Value: 1}})
	if merged["fastForward"] != false || findV(t, b, "shop", 10) != int32(0) {
		t.Errorf("merging pull %v", merged)
	}
	vc(t, b, "shop", bson.D{{Key: "dumboPush", Value: 1}})
}

// TestRemoteCommandsRefuseWhatTheyCannotDo: unknown schemes, names and
// remotes, and URLs' credentials kept out of listings.
func TestRemoteCommandsRefuseWhatTheyCannotDo(t *testing.T) {
	c := startServer(t).client()
	db := c.Database("app")
	if _, err := db.Collection("c").InsertOne(ctx, bson.M{"_id": 1}); err != nil {
		t.Fatal(err)
	}
	_, err := run(t, db, bson.D{{Key: "dumboRemote", Value: "add"}, {Key: "name", Value: "ftp"}, {Key: "url", Value: "ftp://host/prefix"}})
	wantCode(t, err, 238, "NotImplemented")
	if !strings.Contains(err.Error(), `"ftp"`) {
		t.Errorf("the refusal does not name the scheme: %v", err)
	}
	dir := filepath.Join(t.TempDir(), "r")
	vc(t, c, "app", bson.D{{Key: "dumboRemote", Value: "add"}, {Key: "name", Value: "origin"},
		{Key: "url", Value: "file://alice:s3cret@localhost" + dir}})
	list := vc(t, c, "app", bson.D{{Key: "dumboRemote", Value: 1}})
	if r := list["remotes"].(bson.A); len(r) != 1 || strings.Contains(get(r[0], "url").(string), "s3cret") {
		t.Errorf("remote list %v", list)
	}
	_, err = run(t, db, bson.D{{Key: "dumboRemote", Value: "add"}, {Key: "name", Value: "origin"}, {Key: "url", Value: "file://" + dir}})
	wantCode(t, err, 20012, "RemoteExists")
	_, err = run(t, db, bson.D{{Key: "dumboPull", Value: 1}})
	wantCode(t, err, 20013, "NoUpstream")
	_, err = run(t, db, bson.D{{Key: "dumboFetch", Value: 1}, {Key: "remote", Value: "nowhere"}})
	wantCode(t, err, 20011, "RemoteNotFound")
	_, err = run(t, db, bson.D{{Key: "dumboFetch", Value: 1}})
	wantCode(t, err, 20011, "RemoteNotFound") // origin's directory holds no store yet
	_, err = run(t, c.Database("copy"), bson.D{{Key: "dumboClone", Value: 1}, {Key: "url", Value: "file://" + dir}})
	wantCode(t, err, 20011, "RemoteNotFound")
	_, err = run(t, db, bson.D{{Key: "dumboClone", Value: 1}, {Key: "url", Value: "file://" + dir}})
	wantCode(t, err, 48, "NamespaceExists") // app exists
	vc(t, c, "app", bson.D{{Key: "dumboRemote", Value: "remove"}, {Key: "name", Value: "origin"}})
	if list := vc(t, c, "app", bson.D{{Key: "dumboRemote", Value: 1}}); len(list["remotes"].(bson.A)) != 0 {
		t.Errorf("after remove: %v", list)
	}
}

// TestRemotesUnderAccessControl: a reader cannot fetch, push or pull; a
// readWrite user pushes and pulls but configures no remote and forces
// nothing; a pull into a protected branch needs its role.
func TestRemotesUnderAccessControl(t *testing.T) {
	ts, root := authServer(t)
	shop := root.Database("shop")
	mustRun(t, shop, bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: 0}}}}})
	mustRun(t, shop, bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "start"}})
	url := "file://" + filepath.Join(t.TempDir(), "remote")
	mustRun(t, shop, bson.D{{Key: "dumboRemote", Value: "add"}, {Key: "name", Value: "origin"}, {Key: "url", Value: url}})
	mustRun(t, shop, bson.D{{Key: "dumboPush", Value: 1}, {Key: "remote", Value: "origin"}, {Key: "setUpstream", Value: true}})
	addUser(t, root, "shop", "viewer", bson.A{"read"})
	addUser(t, root, "shop", "dev", bson.A{"readWrite"})
	viewer := ts.authClient("viewer", "pw", "shop", "").Database("shop")
	dev := ts.authClient("dev", "pw", "shop", "").Database("shop")
	for _, cmd := range []bson.D{{{Key: "dumboFetch", Value: 1}}, {{Key: "dumboPush", Value: 1}}, {{Key: "dumboPull", Value: 1}}} {
		_, err := run(t, viewer, cmd)
		wantCode(t, err, 13, "Unauthorized")
	}
	mustRun(t, dev, bson.D{{Key: "dumboFetch", Value: 1}})
	mustRun(t, dev, bson.D{{Key: "dumboPush", Value: 1}})
	for _, cmd := range []bson.D{
		{{Key: "dumboRemote", Value: "add"}, {Key: "name", Value: "mine"}, {Key: "url", Value: url}},
		{{Key: "dumboPush", Value: 1}, {Key: "force", Value: true}},
		{{Key: "dumboPush", Value: 1}, {Key: "delete", Value: true}},
	} {
		_, err := run(t, dev, cmd)
		wantCode(t, err, 13, "Unauthorized")
	}
	mustRun(t, shop, bson.D{{Key: "createRole", Value: "release"}, {Key: "privileges", Value: bson.A{}}, {Key: "roles", Value: bson.A{}}})
	mustRun(t, shop, bson.D{{Key: "dumboProtectBranch", Value: "main"}, {Key: "roles", Value: bson.A{"release"}}})
	_, err := run(t, dev, bson.D{{Key: "dumboPull", Value: 1}})
	wantCode(t, err, 13, "Unauthorized")
	mustRun(t, shop, bson.D{{Key: "grantRolesToUser", Value: "dev"}, {Key: "roles", Value: bson.A{"release"}}})
	mustRun(t, dev, bson.D{{Key: "dumboPull", Value: 1}})
}
