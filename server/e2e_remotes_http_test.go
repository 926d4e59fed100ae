package server_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dumbodb/dumbodb/server"
	"github.com/dumbodb/dumbodb/storage"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readpref"
)

// withHTTP gives a test server an HTTP listener on a free loopback port.
func withHTTP(c *server.Config) { c.HTTPAddress = "127.0.0.1:0" }

// httpURL is the URL of database db on ts's HTTP listener, with
// credentials when userinfo is set ("user:password").
func (ts *testServer) httpURL(userinfo, db string) string {
	if userinfo != "" {
		userinfo += "@"
	}
	return fmt.Sprintf("http://%s%s/%s", userinfo, ts.srv.HTTPAddr(), db)
}

// TestRemotesOverHTTP: a second server clones a database over HTTP with
// its commits, indexes and collection options; pushes a commit back,
// which moves the first server's live branch and working set; fetches
// and pulls a commit made there; a diverged push is NotFastForward, a
// push over uncommitted changes DirtyWorkingSet, each unless forced; tags
// travel; a remote branch is created and deleted; a one-document push
// sends a few chunks.
func TestRemotesOverHTTP(t *testing.T) {
	as := startServer(t, withHTTP)
	a, b := as.client(), startServer(t).client()
	shop := a.Database("shop")
	mustRun(t, shop, bson.D{{Key: "create", Value: "items"}, {Key: "validator", Value: bson.M{"v": bson.M{"$type": "int"}}}})
	docs := make([]any, 500)
	for i := range docs {
		docs[i] = bson.M{"_id": i, "v": i}
	}
	if _, err := shop.Collection("items").InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	if _, err := shop.Collection("items").Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "v", Value: -1}}}); err != nil {
		t.Fatal(err)
	}
	seed := vc(t, a, "shop", bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "seed"}})
	vc(t, a, "shop", bson.D{{Key: "dumboTag", Value: "v1"}})

	cloned := vc(t, b, "shop", bson.D{{Key: "dumboClone", Value: 1}, {Key: "url", Value: as.httpURL("", "shop")}})
	if cloned["database"] != "shop" || cloned["chunks"].(int64) == 0 {
		t.Fatalf("clone %v", cloned)
	}
	bshop := b.Database("shop")
	if log := vc(t, b, "shop", bson.D{{Key: "dumboLog", Value: 1}}); get(log["commits"].(bson.A)[0], "commitId") != seed["commitId"] {
		t.Fatalf("the clone's log %v, want head %v", log, seed["commitId"])
	}
	if findV(t, b, "shop", 499) != int32(499) || findV(t, b, "shop@v1", 7) != int32(7) {
		t.Fatal("the clone lacks a document or the tag")
	}
	if got, want := listIndexSpecs(t, bshop.Collection("items")), listIndexSpecs(t, shop.Collection("items")); !reflect.DeepEqual(got, want) {
		t.Errorf("indexes %v, want %v", got, want)
	}
	if got, want := collectionInfos(t, bshop), collectionInfos(t, shop); !reflect.DeepEqual(got, want) {
		t.Errorf("collections %v, want %v", got, want)
	}

	// A one-document commit pushed back moves a's main, documents and all.
	if _, err := bshop.Collection("items").UpdateOne(ctx, bson.M{"_id": 3}, bson.M{"$set": bson.M{"v": 3000}}); err != nil {
		t.Fatal(err)
	}
	vc(t, b, "shop", bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "from b"}})
	vc(t, b, "shop", bson.D{{Key: "dumboTag", Value: "v2"}})
	pushed := vc(t, b, "shop", bson.D{{Key: "dumboPush", Value: 1}, {Key: "tags", Value: true}})
	if n := pushed["chunks"].(int64); n == 0 || n > 40 || pushed["bytes"].(int64) > 64<<10 {
		t.Errorf("a one-document push moved %v chunks, %v bytes", pushed["chunks"], pushed["bytes"])
	}
	if findV(t, a, "shop", 3) != int32(3000) || findV(t, a, "shop@v2", 3) != int32(3000) {
		t.Fatalf("the push did not reach a's main or tags (%v)", pushed)
	}
	if st := vc(t, a, "shop", bson.D{{Key: "dumboStatus", Value: 1}}); st["dirty"] != false {
		t.Errorf("a's working set is not the pushed commit: %v", st)
	}

	// A commit on a, fetched and pulled by b.
	if _, err := shop.Collection("items").InsertOne(ctx, bson.M{"_id": 1000, "v": 1000}); err != nil {
		t.Fatal(err)
	}
	vc(t, a, "shop", bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "from a"}})
	vc(t, b, "shop", bson.D{{Key: "dumboFetch", Value: 1}})
	if st := vc(t, b, "shop", bson.D{{Key: "dumboStatus", Value: 1}}); get(st["upstream"], "behind") != int32(1) {
		t.Errorf("b's status after the fetch %v", st)
	}
	if pulled := vc(t, b, "shop", bson.D{{Key: "dumboPull", Value: 1}}); pulled["fastForward"] != true || findV(t, b, "shop", 1000) != int32(1000) {
		t.Fatalf("pull %v", pulled)
	}

	// Diverged histories: refused unless forced.
	for i, c := range []*mongo.Client{a, b} {
		if _, err := c.Database("shop").Collection("items").InsertOne(ctx, bson.M{"_id": 2000 + i, "v": i}); err != nil {
			t.Fatal(err)
		}
		vc(t, c, "shop", bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "diverge"}})
	}
	_, err := run(t, bshop, bson.D{{Key: "dumboPush", Value: 1}})
	wantCode(t, err, 20010, "NotFastForward")
	// Uncommitted changes on a's main: refused unless forced.
	if _, err := shop.Collection("items").InsertOne(ctx, bson.M{"_id": 3000, "v": 1}); err != nil {
		t.Fatal(err)
	}
	vc(t, a, "shop", bson.D{{Key: "dumboReset", Value: 1}, {Key: "to", Value: "HEAD~1"}}) // soft: 2000 stays, uncommitted
	vc(t, b, "shop", bson.D{{Key: "dumboReset", Value: 1}, {Key: "to", Value: "origin/main"}, {Key: "hard", Value: true}})
	if _, err := bshop.Collection("items").InsertOne(ctx, bson.M{"_id": 4000, "v": 4000}); err != nil {
		t.Fatal(err)
	}
	vc(t, b, "shop", bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "over a's edits"}})
	_, err = run(t, bshop, bson.D{{Key: "dumboPush", Value: 1}})
	wantCode(t, err, 20006, "DirtyWorkingSet")
	if findV(t, a, "shop", 3000) != int32(1) {
		t.Fatal("a refused push lost a's uncommitted document")
	}
	vc(t, b, "shop", bson.D{{Key: "dumboPush", Value: 1}, {Key: "force", Value: true}})
	if findV(t, a, "shop", 4000) != int32(4000) || findV(t, a, "shop", 3000) != nil {
		t.Fatal("a forced push did not replace a's main")
	}

	// A new remote branch, then its deletion.
	vc(t, b, "shop", bson.D{{Key: "dumboPush", Value: 1}, {Key: "remoteBranch", Value: "feature"}})
	if findV(t, a, "shop@feature", 4000) != int32(4000) {
		t.Fatal("the pushed branch is not on a")
	}
	vc(t, b, "shop", bson.D{{Key: "dumboPush", Value: 1}, {Key: "remoteBranch", Value: "feature"}, {Key: "delete", Value: true}})
	if bs := vc(t, a, "shop", bson.D{{Key: "dumboBranch", Value: 1}})["branches"].(bson.A); len(bs) != 1 {
		t.Errorf("a's branches after the delete: %v", bs)
	}
}

// TestHTTPRemoteRefusals: requests for a database that does not exist, a
// URL that names none, and malformed bodies get MongoDB's error shape
// and HTTP statuses, and leave the server serving.
func TestHTTPRemoteRefusals(t *testing.T) {
	as := startServer(t, withHTTP)
	a := as.client()
	if _, err := a.Database("shop").Collection("items").InsertOne(ctx, bson.M{"_id": 1, "v": 1}); err != nil {
		t.Fatal(err)
	}
	_, err := run(t, a.Database("copy"), bson.D{{Key: "dumboClone", Value: 1}, {Key: "url", Value: as.httpURL("", "nosuchdb")}})
	wantCode(t, err, 20011, "RemoteNotFound")
	_, err = run(t, a.Database("copy"), bson.D{{Key: "dumboClone", Value: 1}, {Key: "url", Value: as.httpURL("", "")}})
	wantCode(t, err, 2, "BadValue")
	closed, _ := net.Listen("tcp", "127.0.0.1:0")
	closed.Close() // a port nothing listens on
	_, err = run(t, a.Database("copy"), bson.D{{Key: "dumboClone", Value: 1}, {Key: "url", Value: "http://" + closed.Addr().String() + "/shop"}})
	wantCode(t, err, 6, "HostUnreachable")
	base := fmt.Sprintf("http://%s/remote/v1/shop/", as.srv.HTTPAddr())
	// A push's chunks cut off inside a record, as when the pusher dies;
	// a push whose chunks never came.
	missing := "0ihc5nb610gugu2qt8kde5snpqouvp5p"
	cutRecord := strings.Repeat("h", 20) + "\x00\x00\x13\x88" + strings.Repeat("x", 100)
	for _, c := range []struct {
		path, body string
		status     int
	}{
		{"has", "short", http.StatusBadRequest},
		{"chunks", "0123456789012345678", http.StatusBadRequest},
		{"push", "{}", http.StatusNotFound},
		{"push/nothex/has", "", http.StatusNotFound},
		{"push/0123456789abcdef/chunks", cutRecord, http.StatusBadRequest},
		{"push/0123456789abcdef", `{"updates":[{"ref":"refs/heads/main","new":"` + missing + `"}]}`, http.StatusBadRequest},
		{"push/0123456789abcdef", `{bad}`, http.StatusBadRequest},
		{"nothing", "", http.StatusNotFound},
	} {
		resp, err := http.Post(base+c.path, "application/octet-stream", strings.NewReader(c.body))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.status || !strings.Contains(string(body), `"codeName"`) {
			t.Errorf("POST %s: %d %s, want %d in MongoDB's error shape", c.path, resp.StatusCode, body, c.status)
		}
	}
	if findV(t, a, "shop", 1) != int32(1) {
		t.Error("the server does not serve after bad requests")
	}
	if bs := vc(t, a, "shop", bson.D{{Key: "dumboBranch", Value: 1}})["branches"].(bson.A); len(bs) != 1 {
		t.Errorf("branches after the bad pushes: %v", bs)
	}
}

// TestHTTPRemoteUnderAccessControl: with --auth a remote over HTTP needs
// credentials; a reader clones and fetches but cannot push; a readWrite
// user pushes but cannot force or delete, nor push to a protected branch
// whose role it lacks; credentials stay out of dumboRemote's listing.
func TestHTTPRemoteUnderAccessControl(t *testing.T) {
	as := startServer(t, withAuth, withHTTP)
	createRoot(t, as)
	root := as.authClient("root", "rootpw", "admin", "")
	mustRun(t, root.Database("shop"), bson.D{{Key: "insert", Value: "items"}, {Key: "documents", Value: bson.A{bson.M{"_id": 1, "v": 1}}}})
	mustRun(t, root.Database("shop"), bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "start"}})
	addUser(t, root, "shop", "viewer", bson.A{"read"})
	addUser(t, root, "shop", "dev", bson.A{"readWrite"})
	b := startServer(t).client()

	_, err := run(t, b.Database("anon"), bson.D{{Key: "dumboClone", Value: 1}, {Key: "url", Value: as.httpURL("", "shop")}})
	wantCode(t, err, 18, "AuthenticationFailed")
	_, err = run(t, b.Database("anon"), bson.D{{Key: "dumboClone", Value: 1}, {Key: "url", Value: as.httpURL("viewer:wrong", "shop") + "?authSource=shop"}})
	wantCode(t, err, 18, "AuthenticationFailed")
	viewerURL := as.httpURL("viewer:pw", "shop") + "?authSource=shop"
	vc(t, b, "viewed", bson.D{{Key: "dumboClone", Value: 1}, {Key: "url", Value: viewerURL}})
	if findV(t, b, "viewed", 1) != int32(1) {
		t.Fatal("the reader's clone lacks the document")
	}
	if list := vc(t, b, "viewed", bson.D{{Key: "dumboRemote", Value: 1}}); strings.Contains(fmt.Sprint(list), "pw@") {
		t.Errorf("the listing shows credentials: %v", list)
	}
	if _, err := b.Database("viewed").Collection("items").InsertOne(ctx, bson.M{"_id": 2, "v": 2}); err != nil {
		t.Fatal(err)
	}
	vc(t, b, "viewed", bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "two"}})
	_, err = run(t, b.Database("viewed"), bson.D{{Key: "dumboPush", Value: 1}})
	wantCode(t, err, 13, "Unauthorized")

	devURL := as.httpURL("dev:pw", "shop") + "?authSource=shop"
	vc(t, b, "viewed", bson.D{{Key: "dumboRemote", Value: "add"}, {Key: "name", Value: "dev"}, {Key: "url", Value: devURL}})
	vc(t, b, "viewed", bson.D{{Key: "dumboPush", Value: 1}, {Key: "remote", Value: "dev"}})
	if findV(t, root, "shop", 2) != int32(2) {
		t.Fatal("the readWrite user's push did not land")
	}
	if _, err := b.Database("viewed").Collection("items").InsertOne(ctx, bson.M{"_id": 5, "v": 5}); err != nil {
		t.Fatal(err)
	}
	vc(t, b, "viewed", bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "five"}})
	for _, cmd := range []bson.D{
		{{Key: "dumboPush", Value: 1}, {Key: "remote", Value: "dev"}, {Key: "force", Value: true}},
		{{Key: "dumboPush", Value: 1}, {Key: "remote", Value: "dev"}, {Key: "remoteBranch", Value: "main"}, {Key: "delete", Value: true}},
	} {
		_, err := run(t, b.Database("viewed"), cmd)
		wantCode(t, err, 13, "Unauthorized")
	}
	mustRun(t, root.Database("shop"), bson.D{{Key: "createRole", Value: "release"}, {Key: "privileges", Value: bson.A{}}, {Key: "roles", Value: bson.A{}}})
	mustRun(t, root.Database("shop"), bson.D{{Key: "dumboProtectBranch", Value: "main"}, {Key: "roles", Value: bson.A{"release"}}})
	if _, err := b.Database("viewed").Collection("items").InsertOne(ctx, bson.M{"_id": 3, "v": 3}); err != nil {
		t.Fatal(err)
	}
	vc(t, b, "viewed", bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "three"}})
	_, err = run(t, b.Database("viewed"), bson.D{{Key: "dumboPush", Value: 1}, {Key: "remote", Value: "dev"}})
	wantCode(t, err, 13, "Unauthorized")
	mustRun(t, root.Database("shop"), bson.D{{Key: "grantRolesToUser", Value: "dev"}, {Key: "roles", Value: bson.A{"release"}}})
	vc(t, b, "viewed", bson.D{{Key: "dumboPush", Value: 1}, {Key: "remote", Value: "dev"}})
	if findV(t, root, "shop", 3) != int32(3) {
		t.Fatal("the role holder's push did not land")
	}
}

// TestReadReplicaOfAnHTTPPrimary: a replica following a primary's HTTP
// listener clones its databases and takes each commit through the long
// poll, long before its poll interval (ten minutes here) would.
func TestReadReplicaOfAnHTTPPrimary(t *testing.T) {
	ps := startServer(t, withHTTP)
	primary := ps.client()
	shop := primary.Database("shop")
	if _, err := shop.Collection("items").InsertOne(ctx, bson.M{"_id": 1, "v": 1}); err != nil {
		t.Fatal(err)
	}
	vc(t, primary, "shop", bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "one"}})
	rs := startServer(t, withHTTP, func(c *server.Config) {
		c.ReplicaOf, c.ReplicaPoll = fmt.Sprintf("http://%s/", ps.srv.HTTPAddr()), 10*time.Minute
	})
	replica, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + rs.addr + "/?directConnection=true").
		SetReadPreference(readpref.SecondaryPreferred()).
		SetHeartbeatInterval(500 * time.Millisecond)) // see TestReadReplicaFollowsPushes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { replica.Disconnect(ctx) })
	eventually(t, "the replica clones shop", func() bool { return findV(t, replica, "shop", 1) == int32(1) })
	for i := 2; i <= 4; i++ {
		if _, err := shop.Collection("items").InsertOne(ctx, bson.M{"_id": i, "v": i}); err != nil {
			t.Fatal(err)
		}
		// Uncommitted and not checkpointed yet (every 60 s here), the
		// write is not the replica's to show.
		time.Sleep(200 * time.Millisecond)
		if findV(t, replica, "shop", i) != nil {
			t.Fatalf("the replica shows document %d before its commit", i)
		}
		vc(t, primary, "shop", bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "more"}})
		eventually(t, "the replica takes the new commit", func() bool { return findV(t, replica, "shop", i) == int32(i) })
	}
	_, err = replica.Database("shop").Collection("items").InsertOne(ctx, bson.M{"_id": 9})
	wantCode(t, err, 10107, "NotWritablePrimary")

	// The replica's lag in its metrics; ready, as it synced.
	families, status := scrape(t, rs, "", "")
	if status != http.StatusOK || metricValue(families, "dumbodb_replica_lag_seconds", "db", "shop") < 0 ||
		metricValue(families, "dumbodb_replica_polls_total", "outcome", "ok") < 1 {
		t.Errorf("the replica's metrics (%d): lag %v, polls %v", status, metricValue(families, "dumbodb_replica_lag_seconds", "db", "shop"),
			metricValue(families, "dumbodb_replica_polls_total", "outcome", "ok"))
	}
	if got := httpStatusOf(t, fmt.Sprintf("http://%s/readyz", rs.srv.HTTPAddr())); got != http.StatusOK {
		t.Errorf("the synced replica's /readyz: %d", got)
	}
}

// TestHTTPSRemote: a server with a certificate serves its remotes over
// TLS; a client trusting its CA (tlsCAFile) clones, one that does not is
// refused.
func TestHTTPSRemote(t *testing.T) {
	p, serverFile := newTestPKI(t)
	as := startServer(t, withHTTP, func(c *server.Config) {
		c.TLS = server.TLSConfig{Mode: server.TLSRequire, CertificateKeyFile: serverFile}
	})
	a := as.tlsClient(p, "")
	if _, err := a.Database("shop").Collection("items").InsertOne(ctx, bson.M{"_id": 1, "v": 1}); err != nil {
		t.Fatal(err)
	}
	vc(t, a, "shop", bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "one"}})
	b := startServer(t).client()
	url := fmt.Sprintf("https://%s/shop", as.srv.HTTPAddr())
	_, err := run(t, b.Database("untrusting"), bson.D{{Key: "dumboClone", Value: 1}, {Key: "url", Value: url}})
	if err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("a clone that does not trust the server's CA: %v", err)
	}
	vc(t, b, "shop", bson.D{{Key: "dumboClone", Value: 1}, {Key: "url", Value: url + "?tlsCAFile=" + p.CAFile}})
	if findV(t, b, "shop", 1) != int32(1) {
		t.Fatal("the clone over https lacks the document")
	}
}

// TestConcurrentHTTPPushes: two servers push different commits to one
// branch at once: one wins, the other is refused as NotFastForward, and
// the branch is the winner's commit with nothing lost.
func TestConcurrentHTTPPushes(t *testing.T) {
	as := startServer(t, withHTTP)
	a := as.client()
	if _, err := a.Database("shop").Collection("items").InsertOne(ctx, bson.M{"_id": 0, "v": 0}); err != nil {
		t.Fatal(err)
	}
	vc(t, a, "shop", bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "start"}})
	pushers := []*mongo.Client{startServer(t).client(), startServer(t).client()}
	commits := make([]string, len(pushers))
	for i, c := range pushers {
		vc(t, c, "shop", bson.D{{Key: "dumboClone", Value: 1}, {Key: "url", Value: as.httpURL("", "shop")}})
		if _, err := c.Database("shop").Collection("items").InsertOne(ctx, bson.M{"_id": i + 1, "v": i + 1}); err != nil {
			t.Fatal(err)
		}
		commits[i] = vc(t, c, "shop", bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "mine"}})["commitId"].(string)
	}
	errs := make(chan error, len(pushers))
	for _, c := range pushers {
		go func() {
			_, err := c.Database("shop").RunCommand(ctx, bson.D{{Key: "dumboPush", Value: 1}}).Raw()
			errs <- err
		}()
	}
	var refused int
	for range pushers {
		if err := <-errs; err != nil {
			wantCode(t, err, 20010, "NotFastForward")
			refused++
		}
	}
	if refused != 1 {
		t.Fatalf("%d pushes refused, want 1", refused)
	}
	head := get(vc(t, a, "shop", bson.D{{Key: "dumboLog", Value: 1}})["commits"].(bson.A)[0], "commitId")
	winner := slices.Index(commits, head.(string))
	if winner < 0 || findV(t, a, "shop", winner+1) != int32(winner+1) || findV(t, a, "shop", 0) != int32(0) {
		t.Fatalf("a's main is at %v, not a pushed commit with its documents (%v)", head, commits)
	}
}

// noise is 128 bytes that do not compress, different for each i.
func noise(i int) string {
	a := sha256.Sum256([]byte(fmt.Sprint(i)))
	b := sha256.Sum256(a[:])
	return hex.EncodeToString(a[:]) + hex.EncodeToString(b[:])
}

// cutBody ends an answer with an error after n bytes: a connection lost
// mid-transfer.
type cutBody struct {
	io.ReadCloser
	n int
}

func (b *cutBody) Read(p []byte) (int, error) {
	if b.n <= 0 {
		return 0, io.ErrUnexpectedEOF
	}
	if len(p) > b.n {
		p = p[:b.n]
	}
	n, err := b.ReadCloser.Read(p)
	b.n -= n
	return n, err
}

// TestHTTPCloneResumesAfterACut: a clone whose transfer is cut off (a
// proxy in between drops the connection in the middle of its chunk
// answers) fails and leaves no database; the clone done again reads what
// had arrived from its transfer cache (resumedBytes) and receives only
// the rest, and holds every document.
func TestHTTPCloneResumesAfterACut(t *testing.T) {
	as := startServer(t, withHTTP)
	a := as.client()
	docs := make([]any, 1000)
	for j := range 20 {
		for i := range docs {
			docs[i] = bson.M{"_id": j*1000 + i, "v": i, "pad": strings.Repeat("p", 200)}
		}
		if _, err := a.Database("shop").Collection("items").InsertMany(ctx, docs); err != nil {
			t.Fatal(err)
		}
	}
	vc(t, a, "shop", bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "seed"}})

	target, _ := url.Parse(fmt.Sprintf("http://%s", as.srv.HTTPAddr()))
	proxy := httputil.NewSingleHostReverseProxy(target)
	var cut atomic.Bool
	cut.Store(true)
	var chunkAnswers atomic.Int64
	proxy.ModifyResponse = func(resp *http.Response) error {
		if cut.Load() && strings.HasSuffix(resp.Request.URL.Path, "/chunks") && chunkAnswers.Add(1) > 2 {
			resp.Body = &cutBody{ReadCloser: resp.Body, n: 64 << 10}
		}
		return nil
	}
	proxy.ErrorLog = log.New(io.Discard, "", 0)
	front := httptest.NewServer(proxy)
	t.Cleanup(front.Close)
	b := startServer(t).client()
	clone := bson.D{{Key: "dumboClone", Value: 1}, {Key: "url", Value: front.URL + "/shop"}}
	if _, err := run(t, b.Database("shop"), clone); err == nil {
		t.Fatal("a clone whose transfer was cut off succeeded")
	}
	if n, _ := b.Database("shop").Collection("items").CountDocuments(ctx, bson.M{}); n != 0 {
		t.Fatalf("a failed clone left %d documents", n)
	}
	cut.Store(false)
	again := vc(t, b, "shop", clone)
	resumed, total := again["resumedBytes"].(int64), again["bytes"].(int64)
	if resumed <= 0 || resumed >= total {
		t.Errorf("the clone done again resumed %d of %d bytes", resumed, total)
	}
	t.Logf("resumed %d of %d bytes", resumed, total)
	if n, err := b.Database("shop").Collection("items").CountDocuments(ctx, bson.M{}); err != nil || n != 20000 {
		t.Fatalf("the resumed clone holds %d documents (%v)", n, err)
	}
}

// TestHTTPPushResumesAfterACut: a push whose upload is cut off (a proxy
// in between drops the request's body) fails and leaves the receiving
// branch as it was; the push done again sends only what had not arrived
// (resumedBytes) and lands whole.
func TestHTTPPushResumesAfterACut(t *testing.T) {
	as := startServer(t, withHTTP)
	a := as.client()
	if _, err := a.Database("shop").Collection("items").InsertOne(ctx, bson.M{"_id": -1, "v": 0}); err != nil {
		t.Fatal(err)
	}
	start := vc(t, a, "shop", bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "start"}})["commitId"]

	target, _ := url.Parse(fmt.Sprintf("http://%s", as.srv.HTTPAddr()))
	var cut atomic.Bool
	cut.Store(true)
	proxy := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		pr.SetURL(target)
		if path := pr.In.URL.Path; cut.Load() && strings.HasSuffix(path, "/chunks") && strings.Contains(path, "/push/") {
			pr.Out.Body = &cutBody{ReadCloser: pr.Out.Body, n: 1 << 20}
		}
	}}
	proxy.ErrorLog = log.New(io.Discard, "", 0)
	front := httptest.NewServer(proxy)
	t.Cleanup(front.Close)

	b := startServer(t).client()
	vc(t, b, "shop", bson.D{{Key: "dumboClone", Value: 1}, {Key: "url", Value: front.URL + "/shop"}})
	docs := make([]any, 1000)
	for j := range 20 {
		for i := range docs {
			docs[i] = bson.M{"_id": j*1000 + i, "v": i, "pad": noise(j*1000 + i)}
		}
		if _, err := b.Database("shop").Collection("items").InsertMany(ctx, docs); err != nil {
			t.Fatal(err)
		}
	}
	vc(t, b, "shop", bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "many"}})
	push := bson.D{{Key: "dumboPush", Value: 1}}
	if _, err := run(t, b.Database("shop"), push); err == nil {
		t.Fatal("a push whose upload was cut off succeeded")
	}
	if head := vc(t, a, "shop", bson.D{{Key: "dumboLog", Value: 1}})["commits"].(bson.A)[0]; get(head, "commitId") != start {
		t.Fatalf("a cut push moved the branch to %v", head)
	}
	// The receiver keeps what arrived once its handler of the cut request
	// ends, which may be after the pusher saw the failure.
	eventually(t, "the receiver keeps the cut push's chunks", func() bool {
		kept, _ := filepath.Glob(filepath.Join(as.dir, ".transfers", "push-*", "manifest"))
		return len(kept) == 1
	})
	cut.Store(false)
	again := vc(t, b, "shop", push)
	resumed, total := again["resumedBytes"].(int64), again["bytes"].(int64)
	if resumed <= 0 || resumed >= total {
		t.Errorf("the push done again resumed %d of %d bytes", resumed, total)
	}
	t.Logf("resumed %d of %d bytes", resumed, total)
	if n, err := a.Database("shop").Collection("items").CountDocuments(ctx, bson.M{}); err != nil || n != 20001 {
		t.Fatalf("after the push the receiver holds %d documents (%v)", n, err)
	}
}

// TestReplicaShowsTheCheckpointedWorkingSet: a replica of an HTTP primary
// shows the primary's uncommitted writes once the primary checkpoints
// them (here every 100 ms), not before; its branch is then as dirty as
// the primary's.
func TestReplicaShowsTheCheckpointedWorkingSet(t *testing.T) {
	ps := startServerWith(t, storage.Options{CheckpointInterval: 100 * time.Millisecond}, withHTTP)
	primary := ps.client()
	shop := primary.Database("shop")
	if _, err := shop.Collection("items").InsertOne(ctx, bson.M{"_id": 1, "v": 1}); err != nil {
		t.Fatal(err)
	}
	vc(t, primary, "shop", bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "one"}})
	rs := startServer(t, func(c *server.Config) {
		c.ReplicaOf, c.ReplicaPoll = fmt.Sprintf("http://%s/", ps.srv.HTTPAddr()), 10*time.Minute
	})
	replica := rs.client()
	eventually(t, "the replica clones shop", func() bool { return findV(t, replica, "shop", 1) == int32(1) })
	if _, err := shop.Collection("items").InsertOne(ctx, bson.M{"_id": 2, "v": 2}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the replica shows the checkpointed write", func() bool { return findV(t, replica, "shop", 2) == int32(2) })
	if st := vc(t, replica, "shop", bson.D{{Key: "dumboStatus", Value: 1}}); st["dirty"] != true {
		t.Errorf("the replica's status with the primary's uncommitted write: %v", st)
	}
	vc(t, primary, "shop", bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "two"}})
	eventually(t, "the replica takes the commit", func() bool {
		st := vc(t, replica, "shop", bson.D{{Key: "dumboStatus", Value: 1}})
		return st["dirty"] == false
	})
}

// TestHTTPFetchPruneAndPullRebase: over HTTP, a fetch with prune drops
// the tracking ref of a branch deleted on the remote, and a pull with
// rebase replays the local commit onto the remote's, which then pushes
// as a fast-forward.
func TestHTTPFetchPruneAndPullRebase(t *testing.T) {
	as := startServer(t, withHTTP)
	a, b := as.client(), startServer(t).client()
	if _, err := a.Database("shop").Collection("items").InsertOne(ctx, bson.M{"_id": 1, "v": 1}); err != nil {
		t.Fatal(err)
	}
	vc(t, a, "shop", bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "one"}})
	vc(t, a, "shop", bson.D{{Key: "dumboBranch", Value: "feature"}})
	vc(t, b, "shop", bson.D{{Key: "dumboClone", Value: 1}, {Key: "url", Value: as.httpURL("", "shop")}})
	vc(t, a, "shop", bson.D{{Key: "dumboBranch", Value: "feature"}, {Key: "delete", Value: true}})
	fetched := vc(t, b, "shop", bson.D{{Key: "dumboFetch", Value: 1}, {Key: "prune", Value: true}})
	branches := vc(t, b, "shop", bson.D{{Key: "dumboBranch", Value: 1}})["branches"].(bson.A)
	for _, br := range branches {
		if get(br, "name") == "origin/feature" {
			t.Errorf("origin/feature survived a pruning fetch (%v)", fetched)
		}
	}
	for i, c := range []*mongo.Client{a, b} {
		if _, err := c.Database("shop").Collection("items").InsertOne(ctx, bson.M{"_id": 10 + i, "v": 10 + i}); err != nil {
			t.Fatal(err)
		}
		vc(t, c, "shop", bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "mine"}})
	}
	vc(t, b, "shop", bson.D{{Key: "dumboPull", Value: 1}, {Key: "rebase", Value: true}})
	if findV(t, b, "shop", 10) != int32(10) || findV(t, b, "shop", 11) != int32(11) {
		t.Fatal("the rebased branch lacks a side's document")
	}
	vc(t, b, "shop", bson.D{{Key: "dumboPush", Value: 1}})
	if findV(t, a, "shop", 11) != int32(11) {
		t.Fatal("the push after the rebase did not land")
	}
}
