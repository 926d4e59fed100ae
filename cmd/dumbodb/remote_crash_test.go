package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dumbodb/dumbodb/internal/dumboproc"
	"github.com/dumbodb/dumbodb/server"
	"github.com/dumbodb/dumbodb/storage"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

func commitIn(t *testing.T, db *mongo.Database, msg string) string {
	t.Helper()
	var out bson.M
	if err := db.RunCommand(context.Background(), bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: msg}}).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out["commitId"].(string)
}

func insertDocs(t *testing.T, coll *mongo.Collection, from, n int) {
	t.Helper()
	docs := make([]any, n)
	for i := range docs {
		docs[i] = bson.M{"_id": from + i, "pad": fmt.Sprintf("%0200d", from+i)}
	}
	if _, err := coll.InsertMany(context.Background(), docs); err != nil {
		t.Fatal(err)
	}
}

// TestKilledPushLeavesTheRemoteReadable: a server killed with SIGKILL
// while it pushes a large commit leaves the remote at the commit pushed
// before or at the new one, never between, with every chunk its refs
// reach; the push done again completes.
func TestKilledPushLeavesTheRemoteReadable(t *testing.T) {
	if testing.Short() {
		t.Skip("starts server processes")
	}
	dir, remoteParent := t.TempDir(), t.TempDir()
	remoteDir := filepath.Join(remoteParent, "remote")
	p := dumboproc.StartT(t, dir)
	app := client(t, p).Database("app")
	insertDocs(t, app.Collection("c"), 0, 2000)
	first := commitIn(t, app, "first")
	push := bson.D{{Key: "dumboPush", Value: 1}, {Key: "remote", Value: "origin"}}
	mustCmd(t, app, bson.D{{Key: "dumboRemote", Value: "add"}, {Key: "name", Value: "origin"}, {Key: "url", Value: "file://" + remoteDir}})
	mustCmd(t, app, push)
	insertDocs(t, app.Collection("c"), 2000, 30000)
	second := commitIn(t, app, "second")
	go app.RunCommand(context.Background(), push) // killed under it
	time.Sleep(time.Duration(rand.IntN(40)) * time.Millisecond)
	p.StopT(t, syscall.SIGKILL)

	rep, err := storage.Inspect(context.Background(), remoteParent, storage.InspectOptions{Check: true, Language: server.StorageLanguage()})
	if err != nil {
		t.Fatal(err)
	}
	db := rep.Databases[0]
	if db.Err != nil || db.Check == nil || len(db.Check.Problems) != 0 || len(db.Branches) != 1 {
		t.Fatalf("the remote after the kill: %+v, check %+v", db, db.Check)
	}
	head := db.Branches[0].Head
	if head != first && head != second {
		t.Fatalf("the remote's main is at %s, neither %s nor %s", head, first, second)
	}
	t.Logf("killed with the remote at the %s commit", map[bool]string{true: "first", false: "second"}[head == first])

	p = dumboproc.StartT(t, dir)
	app = client(t, p).Database("app")
	mustCmd(t, app, push)
	copyDB := client(t, p).Database("copy")
	mustCmd(t, copyDB, bson.D{{Key: "dumboClone", Value: 1}, {Key: "url", Value: "file://" + remoteDir}})
	if n, err := copyDB.Collection("c").CountDocuments(context.Background(), bson.D{}); err != nil || n != 32000 {
		t.Fatalf("the clone after the push done again holds %d documents (%v), want 32000", n, err)
	}
}

func mustCmd(t *testing.T, db *mongo.Database, cmd bson.D) bson.M {
	t.Helper()
	var out bson.M
	if err := db.RunCommand(context.Background(), cmd).Decode(&out); err != nil {
		t.Fatalf("%v: %v", cmd, err)
	}
	return out
}

// TestKilledCloneLeavesNoHalfDatabase: a server killed with SIGKILL while
// it clones starts again without the clone (or with all of it) and
// without the clone's temporary directory, and clones again.
func TestKilledCloneLeavesNoHalfDatabase(t *testing.T) {
	if testing.Short() {
		t.Skip("starts server processes")
	}
	src, dir := t.TempDir(), t.TempDir()
	remote := "file://" + filepath.Join(t.TempDir(), "remote")
	p := dumboproc.StartT(t, src)
	app := client(t, p).Database("app")
	insertDocs(t, app.Collection("c"), 0, 30000)
	commitIn(t, app, "seed")
	mustCmd(t, app, bson.D{{Key: "dumboRemote", Value: "add"}, {Key: "name", Value: "origin"}, {Key: "url", Value: remote}})
	mustCmd(t, app, bson.D{{Key: "dumboPush", Value: 1}, {Key: "remote", Value: "origin"}})

	q := dumboproc.StartT(t, dir)
	clone := bson.D{{Key: "dumboClone", Value: 1}, {Key: "url", Value: remote}}
	go client(t, q).Database("copy").RunCommand(context.Background(), clone) // killed under it
	time.Sleep(time.Duration(rand.IntN(40)) * time.Millisecond)
	q.StopT(t, syscall.SIGKILL)

	q = dumboproc.StartT(t, dir)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, ent := range entries {
		if strings.HasPrefix(ent.Name(), ".clone-") {
			t.Errorf("the unfinished clone %s is still there after a start", ent.Name())
		}
	}
	copyDB := client(t, q).Database("copy")
	n, err := copyDB.Collection("c").CountDocuments(context.Background(), bson.D{})
	if err != nil || (n != 0 && n != 30000) {
		t.Fatalf("after the kill the clone holds %d documents (%v): neither none nor all", n, err)
	}
	if n == 0 {
		mustCmd(t, copyDB, clone)
		if n, err = copyDB.Collection("c").CountDocuments(context.Background(), bson.D{}); err != nil || n != 30000 {
			t.Fatalf("the clone done again holds %d documents (%v)", n, err)
		}
	}
}
