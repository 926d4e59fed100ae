package storage

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"testing"
)

// remoteFixture is a database db with documents 1..n committed on main,
// and a file remote "origin" at an empty directory.
func remoteFixture(t *testing.T, n int32) (*Database, string) {
	t.Helper()
	d := openDatabase(t, Options{})
	mustWrite(t, d, func(tx *Tx) error {
		if _, err := tx.EnsureCollection(ctx, "c"); err != nil {
			return err
		}
		for i := int32(1); i <= n; i++ {
			if err := tx.Insert(ctx, "c", doc(i, "v")); err != nil {
				return err
			}
		}
		return nil
	})
	commitAs(t, d, "documents")
	url := "file://" + filepath.Join(t.TempDir(), "remote")
	if err := d.AddRemote(ctx, "origin", url); err != nil {
		t.Fatal(err)
	}
	return d, url
}

// cloneOf clones url into database name of a new engine.
func cloneOf(t *testing.T, url, name string) (*Database, FetchResult) {
	t.Helper()
	e := openEngine(t, t.TempDir(), Options{})
	t.Cleanup(func() { e.Close() })
	res, err := e.Clone(ctx, name, url, "")
	if err != nil {
		t.Fatalf("clone %s: %v", url, err)
	}
	d, err := e.Database(ctx, name, false)
	if err != nil || d == nil {
		t.Fatalf("open the clone: %v", err)
	}
	return d, res
}

func mustPush(t *testing.T, d *Database, o PushOptions) PushResult {
	t.Helper()
	res, err := d.Push(ctx, o)
	if err != nil {
		t.Fatalf("push %+v: %v", o, err)
	}
	return res
}

func headID(t *testing.T, d *Database, branch string) string {
	t.Helper()
	c, err := d.headCommit(ctx, branch)
	if err != nil {
		t.Fatal(err)
	}
	return c.Addr().String()
}

// TestPushClonePullRoundTrip: a push to a file remote, a clone of it
// with the same commits and documents, a change pushed from the clone
// and pulled back as a fast-forward, with the upstream's ahead/behind.
func TestPushClonePullRoundTrip(t *testing.T) {
	a, url := remoteFixture(t, 100)
	mustPush(t, a, PushOptions{Remote: "origin", Branch: "main", SetUpstream: true})
	b, res := cloneOf(t, url, "copy")
	if headID(t, b, "main") != headID(t, a, "main") || !maps.Equal(contents(t, b, "c"), contents(t, a, "c")) {
		t.Fatalf("the clone differs: %s vs %s", headID(t, b, "main"), headID(t, a, "main"))
	}
	if res.Transferred.Chunks == 0 {
		t.Errorf("clone moved no chunks: %+v", res)
	}
	insertOne(t, b, 101)
	commitAs(t, b, "one more")
	if r := mustPush(t, b, PushOptions{Branch: "main"}); r.Remote != "origin" || len(r.Updated) != 1 {
		t.Errorf("push through the upstream: %+v", r)
	}
	pulled, err := a.Pull(ctx, PullOptions{Branch: "main"})
	if err != nil {
		t.Fatal(err)
	}
	if !pulled.Merge.FastForward || headID(t, a, "main") != headID(t, b, "main") || len(contents(t, a, "c")) != 101 {
		t.Errorf("pull: %+v, main at %s, want %s", pulled, headID(t, a, "main"), headID(t, b, "main"))
	}
	insertOne(t, a, 102)
	commitAs(t, a, "ahead")
	ahead, behind, err := a.AheadBehind(ctx, Revision{Commit: mustResolve(t, a, "origin/main")}, Revision{Branch: "main"})
	if err != nil || ahead != 1 || behind != 0 {
		t.Errorf("main against origin/main: ahead %d behind %d (%v), want 1 and 0", ahead, behind, err)
	}
}

func mustResolve(t *testing.T, d *Database, spec string) [20]byte {
	t.Helper()
	rev, err := d.Resolve(ctx, spec, DefaultBranch)
	if err != nil {
		t.Fatalf("resolve %s: %v", spec, err)
	}
	if rev.Branch != "" {
		c, err := d.headCommit(ctx, rev.Branch)
		if err != nil {
			t.Fatal(err)
		}
		return c.Addr()
	}
	return rev.Commit
}

// TestPushRefusesWhatIsNotAFastForward: of two diverged pushes to one
// branch the second is refused and changes nothing; with force it wins.
func TestPushRefusesWhatIsNotAFastForward(t *testing.T) {
	a, url := remoteFixture(t, 10)
	mustPush(t, a, PushOptions{Remote: "origin", Branch: "main"})
	b, _ := cloneOf(t, url, "copy")
	insertOne(t, a, 11)
	commitAs(t, a, "a's")
	insertOne(t, b, 12)
	commitAs(t, b, "b's")
	mustPush(t, a, PushOptions{Remote: "origin", Branch: "main"})
	if _, err := b.Push(ctx, PushOptions{Remote: "origin", Branch: "main"}); !errors.Is(err, ErrNotFastForward) {
		t.Fatalf("diverged push: %v, want ErrNotFastForward", err)
	}
	c, _ := cloneOf(t, url, "check")
	if headID(t, c, "main") != headID(t, a, "main") {
		t.Fatal("the refused push moved the remote branch")
	}
	mustPush(t, b, PushOptions{Remote: "origin", Branch: "main", Force: true})
	d, _ := cloneOf(t, url, "forced")
	if headID(t, d, "main") != headID(t, b, "main") {
		t.Error("a forced push did not move the remote branch")
	}
}

// TestPullStopsAtConflicts: a pull of a diverged change to the same
// document stops in the merge flow.
func TestPullStopsAtConflicts(t *testing.T) {
	a, url := remoteFixture(t, 3)
	mustPush(t, a, PushOptions{Remote: "origin", Branch: "main", SetUpstream: true})
	b, _ := cloneOf(t, url, "copy")
	for d, v := range map[*Database]string{a: "a", b: "b"} {
		mustWrite(t, d, func(tx *Tx) error { return tx.Insert(ctx, "c", doc(7, v)) })
		commitAs(t, d, "seven is "+v)
	}
	mustPush(t, b, PushOptions{Branch: "main"})
	if _, err := a.Pull(ctx, PullOptions{Branch: "main", FFOnly: true}); !errors.Is(err, ErrNotFastForward) {
		t.Errorf("ffOnly pull of diverged branches: %v", err)
	}
	res, err := a.Pull(ctx, PullOptions{Branch: "main"})
	if !errors.Is(err, ErrMergeConflicts) || res.Merge.Conflicts["c"] != 1 {
		t.Fatalf("pull: %+v, %v; want one conflict in c", res, err)
	}
	if err := a.MergeAbort(ctx, "main"); err != nil {
		t.Fatal(err)
	}
}

// TestSmallChangeMovesFewChunks: after a push of 20,000 documents, a
// push of one changed document sends only the chunks on its path.
func TestSmallChangeMovesFewChunks(t *testing.T) {
	a, _ := remoteFixture(t, 20000)
	first := mustPush(t, a, PushOptions{Remote: "origin", Branch: "main"})
	mustWrite(t, a, func(tx *Tx) error { return tx.Insert(ctx, "c", doc(20001, "new")) })
	commitAs(t, a, "one")
	second := mustPush(t, a, PushOptions{Remote: "origin", Branch: "main"})
	t.Logf("first push %+v, second %+v", first.Transferred, second.Transferred)
	if second.Transferred.Bytes >= 64<<10 || second.Transferred.Chunks > first.Transferred.Chunks/10 {
		t.Errorf("a one-document push moved %+v after a first push of %+v", second.Transferred, first.Transferred)
	}
}

// TestRemotesSurviveReopeningAndRemoval: remotes and upstreams are kept
// in the remotes file; removing a remote removes its tracking refs; a
// damaged file stops the database from opening.
func TestRemotesSurviveReopeningAndRemoval(t *testing.T) {
	dir := t.TempDir()
	e := openEngine(t, dir, Options{})
	d, err := e.Database(ctx, "db", true)
	if err != nil {
		t.Fatal(err)
	}
	insertOne(t, d, 1)
	commitAs(t, d, "one")
	url := "file://" + filepath.Join(t.TempDir(), "r")
	if err := d.AddRemote(ctx, "origin", url); err != nil {
		t.Fatal(err)
	}
	if err := d.AddRemote(ctx, "origin", url); !errors.Is(err, ErrRemoteExists) {
		t.Errorf("second add: %v", err)
	}
	if err := d.AddRemote(ctx, "ftp", "ftp://host/x"); !errors.Is(err, ErrRemoteScheme) {
		t.Errorf("an ftp remote: %v", err)
	}
	if err := d.AddRemote(ctx, "s3", "s3://bucket/x?color=blue"); !errors.Is(err, ErrBadRemoteURL) {
		t.Errorf("an s3 remote with an unknown parameter: %v", err)
	}
	mustPush(t, d, PushOptions{Remote: "origin", Branch: "main", SetUpstream: true})
	e.Close()

	e = openEngine(t, dir, Options{})
	if d, err = e.Database(ctx, "db", false); err != nil {
		t.Fatal(err)
	}
	remotes, _ := d.Remotes(ctx)
	u, ok, _ := d.Upstream(ctx, "main")
	if len(remotes) != 1 || remotes[0].URL != url || !ok || u != (Upstream{Remote: "origin", Branch: "main"}) {
		t.Fatalf("after reopening: remotes %+v, upstream %+v %v", remotes, u, ok)
	}
	if tracking, _ := d.RemoteBranches(ctx); len(tracking) != 1 || tracking[0].Name != "origin/main" {
		t.Fatalf("tracking refs %+v", tracking)
	}
	if err := d.RemoveRemote(ctx, "origin"); err != nil {
		t.Fatal(err)
	}
	if tracking, _ := d.RemoteBranches(ctx); len(tracking) != 0 {
		t.Errorf("tracking refs after removal %+v", tracking)
	}
	if _, ok, _ := d.Upstream(ctx, "main"); ok {
		t.Error("the upstream outlived its remote")
	}
	if err := d.AddRemote(ctx, "back", url); err != nil {
		t.Fatal(err)
	}
	e.Close()
	path := filepath.Join(dir, "db", remotesFileName)
	data, _ := os.ReadFile(path)
	data[len(data)-3] ^= 1
	os.WriteFile(path, data, 0o644)
	if err := openNewer(dir); !errors.Is(err, errBadRemotesFile) {
		t.Errorf("opening with a damaged remotes file: %v", err)
	}
}

// TestFetchPrunesAndDeletesRemoteBranches: a remote branch deleted by a
// push leaves the tracking refs of the pusher; a fetch with prune removes
// those of another clone.
func TestFetchPrunesAndDeletesRemoteBranches(t *testing.T) {
	a, url := remoteFixture(t, 2)
	if _, err := a.CreateBranch(ctx, "feature", Revision{Branch: "main"}); err != nil {
		t.Fatal(err)
	}
	mustPush(t, a, PushOptions{Remote: "origin", Branch: "main"})
	mustPush(t, a, PushOptions{Remote: "origin", Branch: "feature"})
	b, _ := cloneOf(t, url, "copy")
	mustPush(t, a, PushOptions{Remote: "origin", Branch: "feature", Delete: true})
	if tracking, _ := a.RemoteBranches(ctx); len(tracking) != 1 {
		t.Errorf("pusher's tracking refs after the delete: %+v", tracking)
	}
	if tracking, _ := b.RemoteBranches(ctx); len(tracking) != 2 {
		t.Fatalf("clone's tracking refs: %+v", tracking)
	}
	res, err := b.Fetch(ctx, "origin", "", true)
	if err != nil {
		t.Fatal(err)
	}
	if tracking, _ := b.RemoteBranches(ctx); len(tracking) != 1 || len(res.Updated) != 1 {
		t.Errorf("after fetch --prune: tracking %+v, updated %+v", tracking, res.Updated)
	}
}
