package storage

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/dumbodb/dumbodb/internal/seaweed"

	"github.com/dolthub/dolt/go/store/hash"
)

// TestS3RemoteOnSeaweedFS: push, clone, a one-document push and a
// diverged push refused, with the remote in a real S3-compatible store.
func TestS3RemoteOnSeaweedFS(t *testing.T) {
	store := seaweed.Start(t)
	a, _ := remoteFixture(t, 5000)
	url := store.URL("shop")
	if err := a.AddRemote(ctx, "s3", url); err != nil {
		t.Fatal(err)
	}
	first := mustPush(t, a, PushOptions{Remote: "s3", Branch: "main"})
	b, _ := cloneOf(t, url, "copy")
	if headID(t, b, "main") != headID(t, a, "main") || len(contents(t, b, "c")) != 5000 {
		t.Fatalf("the clone from s3 differs")
	}
	insertOne(t, a, 5001)
	commitAs(t, a, "one")
	second := mustPush(t, a, PushOptions{Remote: "s3", Branch: "main"})
	t.Logf("first push %+v, one-document push %+v", first.Transferred, second.Transferred)
	if second.Transferred.Bytes >= 64<<10 {
		t.Errorf("a one-document push moved %+v", second.Transferred)
	}
	insertOne(t, b, 6000)
	commitAs(t, b, "diverged")
	if _, err := b.Push(ctx, PushOptions{Remote: "origin", Branch: "main"}); !errors.Is(err, ErrNotFastForward) {
		t.Errorf("diverged push to s3: %v", err)
	}
	if _, err := b.Pull(ctx, PullOptions{Branch: "main", Remote: "origin"}); err != nil {
		t.Fatal(err)
	}
	mustPush(t, b, PushOptions{Remote: "origin", Branch: "main"})
}

// TestConcurrentPushesToS3OneWins: two databases push diverged commits
// to one branch of an s3 remote at once: one push wins, the other is
// refused as not a fast-forward, and the remote holds the winner's
// commit, whole.
func TestConcurrentPushesToS3OneWins(t *testing.T) {
	concurrentPushesOneWins(t, seaweed.Start(t).URL("race"))
}

// TestConcurrentPushesToAFileRemoteOneWins is the same with a file
// remote, whose manifest Dolt replaces under a file lock.
func TestConcurrentPushesToAFileRemoteOneWins(t *testing.T) {
	concurrentPushesOneWins(t, "file://"+filepath.Join(t.TempDir(), "race"))
}

func concurrentPushesOneWins(t *testing.T, url string) {
	a, _ := remoteFixture(t, 500)
	if err := a.AddRemote(ctx, "target", url); err != nil {
		t.Fatal(err)
	}
	mustPush(t, a, PushOptions{Remote: "target", Branch: "main"})
	b, _ := cloneOf(t, url, "copy")
	for i, d := range []*Database{a, b} {
		mustWrite(t, d, func(tx *Tx) error {
			for n := range int32(200) {
				if err := tx.Insert(ctx, "c", doc(1000*int32(i+1)+n, "x")); err != nil {
					return err
				}
			}
			return nil
		})
		commitAs(t, d, "diverge")
	}
	remotes := map[*Database]string{a: "target", b: "origin"}
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i, d := range []*Database{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = d.Push(ctx, PushOptions{Remote: remotes[d], Branch: "main"})
		}()
	}
	wg.Wait()
	won := -1
	for i, err := range errs {
		switch {
		case err == nil && won < 0:
			won = i
		case err == nil:
			t.Fatal("both diverged pushes won")
		case !errors.Is(err, ErrNotFastForward):
			t.Fatalf("push %d: %v", i, err)
		}
	}
	if won < 0 {
		t.Fatalf("neither push won: %v", errs)
	}
	c, _ := cloneOf(t, url, "after")
	if winner := []*Database{a, b}[won]; headID(t, c, "main") != headID(t, winner, "main") || len(contents(t, c, "c")) != 700 {
		t.Errorf("the remote is not the winner's commit")
	}
}

// TestS3PushResumesFromItsOutbox: a push to s3 cut off after its table
// files were written to the bucket, but before they were added to the
// remote's manifest, leaves the remote's branch as it was; the push of
// the same commit done again uploads none of them again (Resumed) and
// lands whole.
func TestS3PushResumesFromItsOutbox(t *testing.T) {
	store := seaweed.Start(t)
	a, _ := remoteFixture(t, 100)
	url := store.URL("shop")
	if err := a.AddRemote(ctx, "s3", url); err != nil {
		t.Fatal(err)
	}
	mustPush(t, a, PushOptions{Remote: "s3", Branch: "main"})
	before := headID(t, a, "main")
	for n := range int32(3000) {
		mustWrite(t, a, func(tx *Tx) error { return tx.Insert(ctx, "c", doc(10000+n, "more")) })
	}
	commitAs(t, a, "more")

	// The cut push: its outbox filled and uploaded, its manifest update
	// never made.
	rs, err := a.openNamedRemote(ctx, "s3", false)
	if err != nil {
		t.Fatal(err)
	}
	r := rs.(*chunkStoreRemote)
	head, err := a.headCommit(ctx, "main")
	if err != nil {
		t.Fatal(err)
	}
	addrs := []hash.Hash{head.Addr()}
	dir := filepath.Join(r.outboxRoot, "out-"+outboxID(r.url, addrs))
	list, err := r.fillOutbox(ctx, dir, a.cs, addrs)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.uploadOutbox(ctx, dir, list); err != nil {
		t.Fatal(err)
	}
	rs.close()
	if c, _ := cloneOf(t, url, "mid"); headID(t, c, "main") != before {
		t.Fatal("a push cut before its manifest update moved the remote's branch")
	}

	res := mustPush(t, a, PushOptions{Remote: "s3", Branch: "main"})
	if res.Transferred.Resumed == 0 {
		t.Errorf("the push done again uploaded its table files again: %+v", res.Transferred)
	}
	c, _ := cloneOf(t, url, "after")
	if headID(t, c, "main") != headID(t, a, "main") || len(contents(t, c, "c")) != 3100 {
		t.Errorf("the resumed push did not land whole")
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the outbox is still there after the push: %v", err)
	}
}
