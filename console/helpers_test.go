package console_test

import (
	"context"
	"html"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dumbodb/dumbodb/console"
	"github.com/dumbodb/dumbodb/server"
	"github.com/dumbodb/dumbodb/storage"

	"github.com/rs/zerolog"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// fixture is a real server on a temporary data directory with the
// console on its HTTP listener, and a driver client of the wire
// protocol (root's with auth).
type fixture struct {
	t      testing.TB
	base   string // the console's URL
	client *mongo.Client
	srv    *server.Server
}

const rootPassword = "root-secret"

// startConsole starts a server with the console; with auth, the server
// checks users and has a user root.
func startConsole(t testing.TB, auth bool) *fixture {
	t.Helper()
	eng, err := storage.Open(t.TempDir(), storage.Options{Language: server.StorageLanguage()}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	srv := server.New(server.Config{BindIPs: []string{"127.0.0.1"}, HTTPAddress: "127.0.0.1:0", Auth: auth}, eng, zerolog.Nop(), server.NewLogRing(16))
	con, err := console.New(console.Options{Dial: func(context.Context) (net.Conn, error) { return srv.Pipe(), nil }, Auth: auth})
	if err != nil {
		t.Fatal(err)
	}
	srv.HandleHTTP(console.Prefix, con)
	if err := srv.Listen(); err != nil {
		t.Fatal(err)
	}
	srv.Serve()
	f := &fixture{t: t, base: "http://" + srv.HTTPAddr().String() + console.Prefix, srv: srv}
	uri := "mongodb://" + srv.Addrs()[0].String() + "/?directConnection=true"
	if auth {
		f.client = connect(t, uri)
		f.run("admin", bson.D{{Key: "createUser", Value: "root"}, {Key: "pwd", Value: rootPassword}, {Key: "roles", Value: bson.A{"root"}}})
		f.client.Disconnect(context.Background())
		uri = "mongodb://root:" + rootPassword + "@" + srv.Addrs()[0].String() + "/?directConnection=true"
	}
	f.client = connect(t, uri)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		f.client.Disconnect(ctx)
		// The console's clients first: their connections are the
		// server's too, and it would wait for them to end.
		con.Close(ctx)
		srv.Shutdown(ctx)
		if err := eng.Close(); err != nil {
			t.Errorf("close engine: %v", err)
		}
	})
	return f
}

func connect(t testing.TB, uri string) *mongo.Client {
	t.Helper()
	c, err := mongo.Connect(options.Client().ApplyURI(uri))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// run runs a command through the wire protocol and fails the test if
// it fails.
func (f *fixture) run(db string, cmd bson.D) bson.M {
	f.t.Helper()
	var out bson.M
	if err := f.client.Database(db).RunCommand(context.Background(), cmd).Decode(&out); err != nil {
		f.t.Fatalf("%s %v: %v", db, cmd[0].Key, err)
	}
	return out
}

func (f *fixture) insert(db, coll string, docs ...any) {
	f.t.Helper()
	if _, err := f.client.Database(db).Collection(coll).InsertMany(context.Background(), docs); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) commit(db, msg string) string {
	f.t.Helper()
	return f.run(db, bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: msg}})["commitId"].(string)
}

// seedShop makes a database shop: two commits on main, a branch feature
// with one more, a tag v1, and an uncommitted change on main.
func (f *fixture) seedShop() (first, feature string) {
	f.t.Helper()
	f.insert("shop", "items", bson.D{{Key: "_id", Value: 1}, {Key: "name", Value: "apple"}, {Key: "qty", Value: 5}},
		bson.D{{Key: "_id", Value: 2}, {Key: "name", Value: "pear"}, {Key: "qty", Value: 3}})
	first = f.commit("shop", "stock the shelves")
	f.run("shop", bson.D{{Key: "dumboBranch", Value: 1}, {Key: "branch", Value: "feature"}})
	f.run("shop", bson.D{{Key: "dumboTag", Value: 1}, {Key: "name", Value: "v1"}})
	if _, err := f.client.Database("shop@feature").Collection("items").UpdateOne(context.Background(), bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$set", Value: bson.D{{Key: "qty", Value: 9}}}}); err != nil {
		f.t.Fatal(err)
	}
	feature = f.commit("shop@feature", "more apples")
	f.insert("shop", "items", bson.D{{Key: "_id", Value: 3}, {Key: "name", Value: "plum"}})
	return first, feature
}

// browser is an HTTP client with cookies, as a browser keeps them.
type browser struct {
	t    testing.TB
	http *http.Client
	base string
}

func (f *fixture) browser() *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: f.t, base: f.base, http: &http.Client{Jar: jar, Timeout: 60 * time.Second}}
}

// get fetches a console page (path relative to /console/) and returns
// its status and body.
func (b *browser) get(path string) (int, string) {
	b.t.Helper()
	resp, err := b.http.Get(b.base + path)
	if err != nil {
		b.t.Fatalf("GET %s: %v", path, err)
	}
	return readBody(b.t, resp)
}

// post sends a form; csrf, when true, adds the session's token read
// from the console's start page.
func (b *browser) post(path string, form url.Values, csrf bool) (int, string) {
	b.t.Helper()
	if csrf {
		form.Set("csrf", b.csrf())
	}
	resp, err := b.http.PostForm(b.base+path, form)
	if err != nil {
		b.t.Fatalf("POST %s: %v", path, err)
	}
	return readBody(b.t, resp)
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrf is the token the session's forms carry.
func (b *browser) csrf() string {
	b.t.Helper()
	_, body := b.get("db/shop")
	m := csrfField.FindStringSubmatch(body)
	if m == nil {
		b.t.Fatalf("no form token on the database page:\n%s", body)
	}
	return m[1]
}

func readBody(t testing.TB, resp *http.Response) (int, string) {
	t.Helper()
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// mustContain fails unless the page has every text (as it reads, with
// HTML's escapes undone).
func mustContain(t testing.TB, page, body string, texts ...string) {
	t.Helper()
	body = html.UnescapeString(body)
	for _, s := range texts {
		if !strings.Contains(body, s) {
			t.Errorf("%s: %q missing from the page", page, s)
		}
	}
}

// mustLack fails if the page has any of the texts.
func mustLack(t testing.TB, page, body string, texts ...string) {
	t.Helper()
	body = html.UnescapeString(body)
	for _, s := range texts {
		if strings.Contains(body, s) {
			t.Errorf("%s: %q is on the page", page, s)
		}
	}
}
