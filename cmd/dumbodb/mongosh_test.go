package main

import (
	"crypto/x509"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/dumbodb/dumbodb/internal/dumboproc"
	"github.com/dumbodb/dumbodb/internal/testpki"
)

// mongoshPath finds the mongosh that `make test` installs from npm.
func mongoshPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("DUMBODB_MONGOSH"); p != "" {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath("mongosh"); err == nil {
		return p
	}
	if p, err := filepath.Abs("../../.tools/node_modules/.bin/mongosh"); err == nil {
		if _, err := os.Stat(p); err == nil {
			return p // installed by `make tools`
		}
	}
	if testing.Short() {
		t.Skip("mongosh not installed (run `make test`, which installs it)")
	}
	t.Fatal("mongosh not found: run `make test` (it installs mongosh from npm) or set DUMBODB_MONGOSH")
	return ""
}

func mongosh(t *testing.T, bin string, port int, script string, flags ...string) string {
	t.Helper()
	args := append([]string{"--quiet", "--norc", fmt.Sprintf("mongodb://127.0.0.1:%d/shop", port)}, flags...)
	cmd := exec.Command(bin, append(args, "--eval", script)...)
	cmd.Env = append(os.Environ(), "MONGOSH_NO_TELEMETRY=1", "HOME="+t.TempDir())
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("mongosh: %v\nstdout: %s\nstderr: %s", err, out, stderr.String())
	}
	if s := strings.TrimSpace(stderr.String()); s != "" {
		t.Errorf("mongosh wrote to stderr: %s", s)
	}
	return strings.TrimSpace(string(out))
}

// TestMongoshSmoke drives the real shell: insert, find, update, delete,
// restart, read back.
func TestMongoshSmoke(t *testing.T) {
	bin := mongoshPath(t)
	dir := t.TempDir()
	p := dumboproc.StartT(t, dir)
	out := mongosh(t, bin, p.Port(), `
		db.items.insertMany([{_id: 1, name: "apple", qty: 5}, {_id: 2, name: "pear", qty: 0}, {_id: 3, name: "fig", qty: 7}]);
		db.items.updateOne({_id: 1}, {$inc: {qty: 1}, $set: {tag: "fresh"}});
		db.items.deleteOne({qty: 0});
		print(JSON.stringify(db.items.find({}, {_id: 1, qty: 1, tag: 1}).sort({qty: -1}).toArray()));
		print(db.items.countDocuments({qty: {$gt: 5}}));
		print(db.getCollectionNames().join(","));
	`)
	want := `[{"_id":3,"qty":7},{"_id":1,"qty":6,"tag":"fresh"}]
2
items`
	if out != want {
		t.Fatalf("mongosh output:\n%s\nwant:\n%s", out, want)
	}
	if code := p.StopT(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("exit %d", code)
	}
	p = dumboproc.StartT(t, dir)
	out = mongosh(t, bin, p.Port(), `print(JSON.stringify(db.items.findOne({_id: 1})))`)
	if out != `{"_id":1,"name":"apple","qty":6,"tag":"fresh"}` {
		t.Fatalf("after restart: %s", out)
	}
}

// TestMongoshStartsCleanly checks that the interactive shell's start-up
// commands (hello, buildInfo, getLog, getParameter, ...) raise no error or
// warning.
func TestMongoshStartsCleanly(t *testing.T) {
	bin := mongoshPath(t)
	p := dumboproc.StartT(t, t.TempDir())
	out := mongosh(t, bin, p.Port(), `print(db.version()); print(db.adminCommand({getLog: "startupWarnings"}).ok); print(db.serverStatus().ok); print(db.stats().ok); print(db.hostInfo().ok)`)
	if out != "8.0.4\n1\n1\n1\n1" {
		t.Fatalf("output %q", out)
	}
}

// TestMongoshReplicaSet: mongosh (the Node driver) discovers the
// one-member set from a plain URL, and rs.status(), rs.conf() and
// rs.initiate() work as on a freshly initiated mongod.
func TestMongoshReplicaSet(t *testing.T) {
	bin := mongoshPath(t)
	p := dumboproc.StartT(t, t.TempDir())
	out := mongosh(t, bin, p.Port(), `print(rs.status().members[0].stateStr); print(rs.conf()._id); print(rs.initiate().ok);
		print(db.hello().setName); db.c.insertOne({_id: 1}); print(db.c.countDocuments({}))`)
	if out != "PRIMARY\nrs0\n1\nrs0\n1" {
		t.Fatalf("output %q", out)
	}
}

// TestMongoshAuth: with --auth, mongosh creates the first user through
// the localhost exception, logs in with -u -p --authenticationDatabase and
// with db.auth(), and is refused before logging in.
func TestMongoshAuth(t *testing.T) {
	bin := mongoshPath(t)
	p := dumboproc.StartT(t, t.TempDir(), "--auth")
	out := mongosh(t, bin, p.Port(), `db.getSiblingDB("admin").createUser({user: "ada", pwd: "lovelace", roles: ["root"]}); print("made");
		try { db.c.findOne() } catch (e) { print(e.codeName) }
		print(db.getSiblingDB("admin").auth("ada", "lovelace").ok); db.c.insertOne({_id: 1}); print(db.c.countDocuments({}))`)
	if out != "made\nUnauthorized\n1\n1" {
		t.Fatalf("output %q", out)
	}
	out = mongosh(t, bin, p.Port(), `print(db.runCommand({connectionStatus: 1}).authInfo.authenticatedUsers[0].user); print(db.c.countDocuments({}))`,
		"-u", "ada", "-p", "lovelace", "--authenticationDatabase", "admin")
	if out != "ada\n1" {
		t.Fatalf("output %q", out)
	}
}

// TestMongoshTLS: mongosh connects with --tls, the test CA and a client
// certificate to a server that requires TLS and verifies client
// certificates (allowing clients without one, as the readiness ping is),
// and the Unix socket stays plain for local administration.
func TestMongoshTLS(t *testing.T) {
	bin := mongoshPath(t)
	pki, err := testpki.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	serverFile, err := pki.Issue("server", x509.ExtKeyUsageServerAuth)
	if err != nil {
		t.Fatal(err)
	}
	clientFile, err := pki.Issue("client", x509.ExtKeyUsageClientAuth)
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(t.TempDir(), "dumbodb.sock")
	p := dumboproc.StartT(t, t.TempDir(), "--tlsMode", "requireTLS", "--tlsCertificateKeyFile", serverFile,
		"--tlsCAFile", pki.CAFile, "--tlsAllowConnectionsWithoutCertificates", "--unixSocket", sock)
	out := mongosh(t, bin, p.Port(), `db.c.insertOne({_id: 1}); print(db.c.countDocuments({}))`,
		"--tls", "--tlsCAFile", pki.CAFile, "--tlsCertificateKeyFile", clientFile)
	if out != "1" {
		t.Fatalf("output %q", out)
	}
	cmd := exec.Command(bin, "--quiet", "--norc", "mongodb://"+url.PathEscape(sock)+"/shop", "--eval", "print(db.c.countDocuments({}))")
	cmd.Env = append(os.Environ(), "MONGOSH_NO_TELEMETRY=1", "HOME="+t.TempDir())
	if got, err := cmd.Output(); err != nil || strings.TrimSpace(string(got)) != "1" {
		t.Fatalf("over the Unix socket: %q, %v", got, err)
	}
}

// TestMongoshTransaction: a session's transaction in mongosh commits
// writes to two collections together, and an aborted one leaves nothing.
func TestMongoshTransaction(t *testing.T) {
	bin := mongoshPath(t)
	p := dumboproc.StartT(t, t.TempDir())
	out := mongosh(t, bin, p.Port(), `
		db.acct.insertOne({_id: 1, bal: 10});
		const s = db.getMongo().startSession();
		const sdb = s.getDatabase("shop");
		s.startTransaction();
		sdb.acct.updateOne({_id: 1}, {$inc: {bal: -3}});
		sdb.log.insertOne({_id: "t1", amount: 3});
		print(db.log.countDocuments({}));
		s.commitTransaction();
		s.startTransaction();
		sdb.log.insertOne({_id: "t2"});
		s.abortTransaction();
		print(db.acct.findOne({_id: 1}).bal, db.log.countDocuments({}));
	`)
	if out != "0\n7 1" {
		t.Fatalf("output %q", out)
	}
}

// readmeBlock returns the fenced block that follows marker in README.md.
func readmeBlock(t *testing.T, marker string) string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(b), "<!-- "+marker+" -->")
	if !ok {
		t.Fatalf("README.md has no %s block", marker)
	}
	_, body, _ := strings.Cut(after, "\n```")
	_, body, _ = strings.Cut(body, "\n")
	body, _, _ = strings.Cut(body, "\n```")
	return strings.TrimSpace(body)
}

// TestReadmeWalkthrough runs the README's version-control walkthrough in
// mongosh and compares its output with the README's.
func TestReadmeWalkthrough(t *testing.T) {
	bin := mongoshPath(t)
	p := dumboproc.StartT(t, t.TempDir())
	script := filepath.Join(t.TempDir(), "walkthrough.js")
	if err := os.WriteFile(script, []byte(readmeBlock(t, "walkthrough:script")), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--quiet", "--norc", fmt.Sprintf("mongodb://127.0.0.1:%d/shop", p.Port()), script)
	cmd.Env = append(os.Environ(), "MONGOSH_NO_TELEMETRY=1", "HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("mongosh: %v\n%s", err, out)
	}
	if got, want := strings.TrimSpace(string(out)), readmeBlock(t, "walkthrough:output"); got != want {
		t.Fatalf("walkthrough output:\n%s\nREADME says:\n%s", got, want)
	}
}

// TestMongoshJavaScript: what mongosh users write for server-side
// JavaScript — $where with a function (sent as BSON code), $function,
// db.c.mapReduce — works, and --noscripting refuses it as mongod does.
func TestMongoshJavaScript(t *testing.T) {
	bin := mongoshPath(t)
	p := dumboproc.StartT(t, t.TempDir())
	out := mongosh(t, bin, p.Port(), `
		db.c.insertMany([{_id: 1, tags: ["a", "b"]}, {_id: 2, tags: ["b"]}]);
		print(JSON.stringify(db.c.find({$where: function() { return this.tags.length > 1 }}).toArray()));
		print(JSON.stringify(db.c.aggregate([{$project: {n: {$function: {body: function(t) { return t.join("+") }, args: ["$tags"], lang: "js"}}}}]).toArray()));
		var r = db.c.mapReduce(function() { this.tags.forEach(t => emit(t, 1)) }, function(k, vals) { return Array.sum(vals) }, {out: {inline: 1}});
		print(JSON.stringify(r.results));
		db.c.mapReduce(function() { emit(this._id, this.tags.length) }, function(k, vals) { return Array.sum(vals) }, {out: "counts"});
		print(JSON.stringify(db.counts.find().toArray()));
	`)
	// (mongosh warns that mapReduce is deprecated, on stdout, once)
	want := `[{"_id":1,"tags":["a","b"]}]
[{"_id":1,"n":"a+b"},{"_id":2,"n":"b"}]
DeprecationWarning: Collection.mapReduce() is deprecated. Use an aggregation instead.
See https://mongodb.com/docs/manual/core/map-reduce for details.
[{"_id":"a","value":1},{"_id":"b","value":2}]
[{"_id":1,"value":2},{"_id":2,"value":1}]`
	if out != want {
		t.Fatalf("mongosh output:\n%s\nwant:\n%s", out, want)
	}
	p = dumboproc.StartT(t, t.TempDir(), "--noscripting")
	out = mongosh(t, bin, p.Port(), `
		db.c.insertOne({_id: 1});
		try { db.c.find({$where: function() { return true }}).toArray() } catch (e) { print(e.code + " " + e.message) }
	`)
	if want := "6108304 no globalScriptEngine in $where parsing"; out != want {
		t.Fatalf("--noscripting: %q, want %q", out, want)
	}
}

// TestMongoshVersionControlHelpers loads shell/dumbo.js into mongosh and
// drives a branch, a conflicting merge and its resolution with the
// helpers, checking the tables they print.
func TestMongoshVersionControlHelpers(t *testing.T) {
	bin := mongoshPath(t)
	helpers, err := filepath.Abs("../../shell/dumbo.js")
	if err != nil {
		t.Fatal(err)
	}
	p := dumboproc.StartT(t, t.TempDir())
	out := mongosh(t, bin, p.Port(), `load(`+strconv.Quote(helpers)+`);
		db.items.insertMany([{_id: 1, name: "apple", qty: 5}, {_id: 2, name: "pear", qty: 3}]);
		db.commit("stock");
		db.branch("feature");
		db.checkout("feature");
		print("db is " + db.getName());
		db.items.updateOne({_id: 1}, {$set: {qty: 9}});
		db.commit("more apples");
		db.checkout("main");
		db.items.updateOne({_id: 1}, {$set: {qty: 7}});
		db.commit("fewer apples");
		db.branches();
		db.log({limit: 2});
		db.diff("main", "feature");
		db.merge("feature");
		db.resolve("items", 1, "theirs");
		db.merge({continue: 1});
		db.runCommand({dumboTag: 1, name: "v1", message: "first release"});
		db.tags();
		print("apple " + db.items.findOne({_id: 1}).qty);
		db.checkout("feature");
		db.items.updateOne({_id: 2}, {$set: {qty: 4}});
		db.commit("four pears");
		db.checkout("main");
		db.items.updateOne({_id: 2}, {$set: {qty: 6}});
		db.commit("six pears");
		db.merge("feature");
		db.resolve("items", 2, {_id: 2, name: "pear", qty: 5, note: "halfway"});
		db.merge({continue: 1});
		const pear = db.items.findOne({_id: 2});
		print("pear " + pear.qty + " " + pear.note);
	`)
	for _, want := range []string{
		"committed ", "on main: stock", "switched to shop@feature", "db is shop@feature", "on feature: more apples",
		"branch   head      ahead / behind main  message", "feature  ", "1 / 1                more apples", "*  main ",
		"(main) fewer apples", "more: db.log({after:",
		"items       ~  1    qty: 7 -> 9",
		"merge stopped on conflicts", `items       1    {"_id":1,"name":"apple","qty":7}  {"_id":1,"name":"apple","qty":9}`,
		"settled items 1 with theirs", "merged: ",
		"v1   ", "first release", "apple 9",
		`items       2    {"_id":2,"name":"pear","qty":6}  {"_id":2,"name":"pear","qty":4}`,
		"settled items 2 with custom", "pear 5 halfway",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the helpers' output lacks %q:\n%s", want, out)
		}
	}
}
