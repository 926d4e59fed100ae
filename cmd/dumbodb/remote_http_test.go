package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/dumbodb/dumbodb/internal/dumboproc"
	"github.com/dumbodb/dumbodb/internal/testload"
	"github.com/dumbodb/dumbodb/server"
	"github.com/dumbodb/dumbodb/storage"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// startHTTPNode starts a server process with an HTTP listener; it returns
// the process and the listener's address.
func startHTTPNode(t testing.TB, dir string, args ...string) (*dumboproc.Proc, string) {
	t.Helper()
	port, err := dumboproc.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	return dumboproc.StartT(t, dir, append([]string{"--httpAddress", addr}, args...)...), addr
}

// TestHTTPRemotesBetweenProcesses: server processes on one machine. A
// second clones the first's database over HTTP and pushes a large commit
// back, the first killed with SIGKILL under the push: it starts again
// with its main at the commit before or the pushed one, its store whole,
// and the push done again lands. Another pusher killed under its push
// leaves the first at a commit too, and its push done again lands. A
// last one follows the first as a read replica and shows each commit,
// not at its ten-minute poll but at once.
func TestHTTPRemotesBetweenProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts server processes")
	}
	primaryDir := t.TempDir()
	p, httpAddr := startHTTPNode(t, primaryDir)
	pc := client(t, p)
	app := pc.Database("app")
	insertDocs(t, app.Collection("c"), 0, 2000)
	first := commitIn(t, app, "first")

	q := dumboproc.StartT(t, t.TempDir())
	copyDB := client(t, q).Database("app")
	mustCmd(t, copyDB, bson.D{{Key: "dumboClone", Value: 1}, {Key: "url", Value: "http://" + httpAddr + "/app"}})
	insertDocs(t, copyDB.Collection("c"), 2000, 30000)
	second := commitIn(t, copyDB, "second")
	push := bson.D{{Key: "dumboPush", Value: 1}}
	go copyDB.RunCommand(context.Background(), push) // its remote killed under it
	time.Sleep(time.Duration(rand.IntN(60)) * time.Millisecond)
	pc.Disconnect(context.Background()) // now: once the server is gone it would wait for it
	p.StopT(t, syscall.SIGKILL)

	rep, err := storage.Inspect(context.Background(), primaryDir, storage.InspectOptions{Check: true, Language: server.StorageLanguage()})
	if err != nil {
		t.Fatal(err)
	}
	db := rep.Databases[0]
	if db.Err != nil || db.Check == nil || len(db.Check.Problems) != 0 {
		t.Fatalf("the primary after the kill: %+v, check %+v", db, db.Check)
	}
	var head string
	for _, b := range db.Branches {
		if b.Name == "main" {
			head = b.Head
		}
	}
	if head != first && head != second {
		t.Fatalf("the primary's main is at %s, neither %s nor %s", head, first, second)
	}

	p = dumboproc.StartT(t, primaryDir, "--httpAddress", httpAddr)
	app = client(t, p).Database("app")
	mustCmd(t, copyDB, push)
	if n, err := app.Collection("c").CountDocuments(context.Background(), bson.D{}); err != nil || n != 32000 {
		t.Fatalf("the primary after the push done again holds %d documents (%v), want 32000", n, err)
	}

	// The pusher killed under its push: the primary stays at a commit.
	qDir := t.TempDir()
	q2 := dumboproc.StartT(t, qDir)
	q2c := client(t, q2)
	pusher := q2c.Database("app")
	mustCmd(t, pusher, bson.D{{Key: "dumboClone", Value: 1}, {Key: "url", Value: "http://" + httpAddr + "/app"}})
	insertDocs(t, pusher.Collection("c"), 32000, 20000)
	third := commitIn(t, pusher, "third")
	go pusher.RunCommand(context.Background(), push) // killed under it
	time.Sleep(time.Duration(rand.IntN(60)) * time.Millisecond)
	q2c.Disconnect(context.Background())
	q2.StopT(t, syscall.SIGKILL)
	var log struct{ Commits []struct{ CommitID string } }
	if err := app.RunCommand(context.Background(), bson.D{{Key: "dumboLog", Value: 1}}).Decode(&log); err != nil {
		t.Fatal(err)
	}
	if h := log.Commits[0].CommitID; h != second && h != third {
		t.Fatalf("after the pusher's kill the primary's main is at %s, neither %s nor %s", h, second, third)
	}
	q2 = dumboproc.StartT(t, qDir)
	mustCmd(t, client(t, q2).Database("app"), push)
	if n, err := app.Collection("c").CountDocuments(context.Background(), bson.D{}); err != nil || n != 52000 {
		t.Fatalf("the primary after the push done again holds %d documents (%v), want 52000", n, err)
	}

	r := dumboproc.StartT(t, t.TempDir(), "--replicaOf", "http://"+httpAddr+"/", "--replicaPollSeconds", "600")
	replica := client(t, r).Database("app")
	waitCount := func(want int64) {
		t.Helper()
		deadline := time.Now().Add(testload.Timeout(30 * time.Second))
		for {
			n, err := replica.Collection("c").CountDocuments(context.Background(), bson.D{})
			if err == nil && n == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the replica holds %d documents (%v), want %d", n, err, want)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitCount(52000)
	insertDocs(t, app.Collection("c"), 52000, 10)
	commitIn(t, app, "fourth")
	waitCount(52010)
}

// BenchmarkReplicaLagHTTP measures how long a commit takes to show on a
// read replica of an HTTP primary (two server processes on this
// machine): each iteration inserts a document, commits, and polls the
// replica until it reads it. It reports the median and the 99th
// percentile (run it with -benchtime=100x for 100 commits).
func BenchmarkReplicaLagHTTP(b *testing.B) {
	p, httpAddr := startHTTPNode(b, b.TempDir())
	app := client(b, p).Database("app")
	r := dumboproc.StartT(b, b.TempDir(), "--replicaOf", "http://"+httpAddr+"/", "--replicaPollSeconds", "600")
	replica := client(b, r).Database("app")
	ctx := context.Background()
	lags := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		if _, err := app.Collection("c").InsertOne(ctx, bson.M{"_id": i}); err != nil {
			b.Fatal(err)
		}
		if err := app.RunCommand(ctx, bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "lag"}}).Err(); err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		for replica.Collection("c").FindOne(ctx, bson.M{"_id": i}).Err() != nil {
			if time.Since(start) > time.Minute {
				b.Fatalf("commit %d did not reach the replica in a minute", i)
			}
			time.Sleep(2 * time.Millisecond)
		}
		lags = append(lags, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(lags)
	b.ReportMetric(float64(lags[len(lags)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lags[len(lags)*99/100].Microseconds())/1000, "p99-ms")
}
