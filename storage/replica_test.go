package storage

import (
	"path/filepath"
	"testing"

	"github.com/dumbodb/dumbodb/internal/seaweed"
)

// followOnce runs one poll of e over url and fails t on any error.
func followOnce(t *testing.T, e *Engine, url string) []FollowResult {
	t.Helper()
	res, err := e.Follow(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("follow %s: %v", r.Database, r.Err)
		}
	}
	return res
}

// followScenario pushes database db of a primary to <root>/shop and
// checks that a replica engine following root clones it, then takes its
// new commits, branches, tags and the deletion of a branch.
func followScenario(t *testing.T, root, dbURL string) {
	a := openDatabase(t, Options{})
	insertOne(t, a, 1)
	commitAs(t, a, "one")
	if err := a.AddRemote(ctx, "replicas", dbURL); err != nil {
		t.Fatal(err)
	}
	mustPush(t, a, PushOptions{Remote: "replicas", Branch: "main"})
	replica := openEngine(t, t.TempDir(), Options{})
	t.Cleanup(func() { replica.Close() })
	if res := followOnce(t, replica, root); len(res) != 1 || !res[0].Cloned || res[0].Database != "shop" {
		t.Fatalf("first poll: %+v", res)
	}
	r, err := replica.Database(ctx, "shop", false)
	if err != nil || r == nil {
		t.Fatalf("the replica has no shop: %v", err)
	}
	if res := followOnce(t, replica, root); res[0].Changed {
		t.Errorf("a poll with nothing new changed something: %+v", res)
	}
	insertOne(t, a, 2)
	commitAs(t, a, "two")
	if _, err := a.CreateBranch(ctx, "feature", Revision{Branch: "main"}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.CreateTag(ctx, "v1", Revision{Branch: "main"}, "first"); err != nil {
		t.Fatal(err)
	}
	mustPush(t, a, PushOptions{Remote: "replicas", Branch: "main", Tags: true})
	mustPush(t, a, PushOptions{Remote: "replicas", Branch: "feature"})
	if res := followOnce(t, replica, root); !res[0].Changed {
		t.Errorf("the poll after a push changed nothing")
	}
	if headID(t, r, "main") != headID(t, a, "main") || headID(t, r, "feature") != headID(t, a, "feature") || len(contents(t, r, "c")) != 2 {
		t.Fatalf("the replica's branches are not the primary's")
	}
	if tags, _ := r.Tags(ctx); len(tags) != 1 || tags[0].Name != "v1" {
		t.Errorf("replica tags %+v", tags)
	}
	mustPush(t, a, PushOptions{Remote: "replicas", Branch: "feature", Delete: true})
	followOnce(t, replica, root)
	if branches, _ := r.Branches(ctx); len(branches) != 1 {
		t.Errorf("the replica kept a branch the remote dropped: %+v", branches)
	}
}

func TestFollowAFileRoot(t *testing.T) {
	root := filepath.Join(t.TempDir(), "replicas")
	followScenario(t, "file://"+root, "file://"+filepath.Join(root, "shop"))
}

func TestFollowABucket(t *testing.T) {
	store := seaweed.Start(t)
	followScenario(t, store.URL("replicas"), store.URL("replicas/shop"))
}
