package server_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/dumbodb/dumbodb/auth"
	"github.com/dumbodb/dumbodb/server"
)

func withAuth(c *server.Config) { c.Auth = true }

// authClient connects as a user of authDB with a mechanism ("": the
// driver's choice).
func (ts *testServer) authClient(user, pwd, authDB, mech string) *mongo.Client {
	ts.t.Helper()
	cred := options.Credential{Username: user, Password: pwd, AuthSource: authDB, AuthMechanism: mech}
	return ts.client(options.Client().SetAuth(cred))
}

// createRoot makes the first user through the localhost exception.
func createRoot(t *testing.T, ts *testServer) {
	t.Helper()
	mustRun(t, ts.client().Database("admin"), bson.D{{Key: "createUser", Value: "root"}, {Key: "pwd", Value: "rootpw"},
		{Key: "roles", Value: bson.A{"root"}}})
}

// TestSCRAMAuthentication: with --auth, the first user is created through
// the localhost exception, which then ends; both SCRAM mechanisms log in;
// a wrong password and an unknown user fail with AuthenticationFailed;
// without a login every command but the handshake is refused.
func TestSCRAMAuthentication(t *testing.T) {
	ts := startServer(t, withAuth)
	anon := ts.client().Database("admin")
	createRoot(t, ts)
	_, err := run(t, anon, bson.D{{Key: "createUser", Value: "second"}, {Key: "pwd", Value: "x"}, {Key: "roles", Value: bson.A{}}})
	wantCode(t, err, 13, "Unauthorized")
	_, err = run(t, ts.client().Database("shop"), bson.D{{Key: "find", Value: "c"}})
	wantCode(t, err, 13, "Unauthorized")
	mustRun(t, anon, bson.D{{Key: "ping", Value: 1}})

	for _, mech := range []string{"SCRAM-SHA-256", "SCRAM-SHA-1", ""} {
		c := ts.authClient("root", "rootpw", "admin", mech)
		if _, err := c.Database("shop").Collection("c").InsertOne(ctx, bson.D{{Key: "m", Value: mech}}); err != nil {
			t.Fatalf("%q: %v", mech, err)
		}
		status := mustRun(t, c.Database("admin"), bson.D{{Key: "connectionStatus", Value: 1}})
		if users := get(status, "authInfo", "authenticatedUsers").(bson.A); len(users) != 1 || get(users[0], "user") != "root" {
			t.Fatalf("%q: connectionStatus %v", mech, status)
		}
	}
	for _, bad := range []struct{ user, pwd string }{{"root", "wrong"}, {"nobody", "rootpw"}} {
		err := ts.authClient(bad.user, bad.pwd, "admin", "SCRAM-SHA-256").Ping(ctx, nil)
		var ce mongo.CommandError
		if !errors.As(err, &ce) || ce.Code != 18 {
			t.Fatalf("%s/%s: %v, want AuthenticationFailed", bad.user, bad.pwd, err)
		}
	}
	hello := mustRun(t, anon, bson.D{{Key: "hello", Value: 1}, {Key: "saslSupportedMechs", Value: "admin.root"}})
	if mechs, _ := hello["saslSupportedMechs"].(bson.A); len(mechs) != 2 {
		t.Fatalf("saslSupportedMechs: %v", hello["saslSupportedMechs"])
	}
	first := bson.Binary{Data: []byte("n,,n=root,r=clientnonce0123")}
	hello = mustRun(t, anon, bson.D{{Key: "hello", Value: 1}, {Key: "speculativeAuthenticate", Value: bson.D{{Key: "saslStart", Value: 1},
		{Key: "mechanism", Value: "SCRAM-SHA-256"}, {Key: "payload", Value: first}, {Key: "db", Value: "admin"}}}})
	payload, _ := get(hello, "speculativeAuthenticate", "payload").(bson.Binary)
	if get(hello, "speculativeAuthenticate", "conversationId") != int32(1) || !strings.HasPrefix(string(payload.Data), "r=clientnonce0123") {
		t.Fatalf("speculativeAuthenticate: %v", hello["speculativeAuthenticate"])
	}
}

// TestBuiltinRolesAllowAndRefuse: each built-in role allows its commands
// and refuses the others, version control included.
func TestBuiltinRolesAllowAndRefuse(t *testing.T) {
	ts := startServer(t, withAuth)
	createRoot(t, ts)
	root := ts.authClient("root", "rootpw", "admin", "")
	shop := root.Database("shop")
	shop.Collection("c").InsertOne(ctx, bson.D{{Key: "_id", Value: 1}})
	for _, u := range []struct {
		name string
		role bson.D
	}{
		{"reader", bson.D{{Key: "role", Value: "read"}, {Key: "db", Value: "shop"}}},
		{"writer", bson.D{{Key: "role", Value: "readWrite"}, {Key: "db", Value: "shop"}}},
		{"dba", bson.D{{Key: "role", Value: "dbAdmin"}, {Key: "db", Value: "shop"}}},
		{"monitor", bson.D{{Key: "role", Value: "clusterMonitor"}, {Key: "db", Value: "admin"}}},
	} {
		mustRun(t, root.Database("admin"), bson.D{{Key: "createUser", Value: u.name}, {Key: "pwd", Value: "pw"}, {Key: "roles", Value: bson.A{u.role}}})
	}
	cases := []struct {
		user, db string
		cmd      bson.D
		allowed  bool
	}{
		{"reader", "shop", bson.D{{Key: "find", Value: "c"}}, true},
		{"reader", "shop", bson.D{{Key: "dumboLog", Value: 1}}, true},
		{"reader", "shop", bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{}}}}, false},
		{"reader", "shop", bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "m"}}, false},
		{"reader", "other", bson.D{{Key: "find", Value: "c"}}, false},
		{"writer", "shop", bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{}}}}, true},
		{"writer", "shop", bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "m"}}, true},
		{"writer", "shop", bson.D{{Key: "dumboGC", Value: 1}}, false},
		{"writer", "shop", bson.D{{Key: "dumboBranch", Value: "feat"}}, true},
		{"writer", "shop", bson.D{{Key: "dumboBranch", Value: "feat"}, {Key: "delete", Value: true}}, false},
		{"writer", "shop", bson.D{{Key: "dumboReset", Value: 1}, {Key: "hard", Value: true}}, false},
		{"reader", "shop", bson.D{{Key: "dumboBranch", Value: 1}}, true},
		{"reader", "shop", bson.D{{Key: "dumboBranch", Value: "other"}}, false},
		{"reader", "shop", bson.D{{Key: "aggregate", Value: "c"}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$out", Value: "copy"}}}}, {Key: "cursor", Value: bson.D{}}}, false},
		{"writer", "shop", bson.D{{Key: "aggregate", Value: "c"}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$out", Value: "copy"}}}}, {Key: "cursor", Value: bson.D{}}}, true},
		{"dba", "shop", bson.D{{Key: "dumboBranch", Value: "feat"}, {Key: "delete", Value: true}}, true},
		{"writer", "shop", bson.D{{Key: "dropDatabase", Value: 1}}, false},
		{"dba", "shop", bson.D{{Key: "collStats", Value: "c"}}, true},
		{"dba", "shop", bson.D{{Key: "dumboGC", Value: 1}}, true},
		{"dba", "shop", bson.D{{Key: "find", Value: "c"}}, false},
		{"monitor", "admin", bson.D{{Key: "serverStatus", Value: 1}}, true},
		{"monitor", "shop", bson.D{{Key: "find", Value: "c"}}, false},
		{"monitor", "admin", bson.D{{Key: "createUser", Value: "x"}, {Key: "pwd", Value: "x"}, {Key: "roles", Value: bson.A{}}}, false},
	}
	writer := ts.authClient("writer", "pw", "admin", "").Database("shop")
	mustRun(t, writer, bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "by writer"}})
	logged := mustRun(t, writer, bson.D{{Key: "dumboLog", Value: 1}, {Key: "limit", Value: 1}})
	if author := get(logged["commits"].(bson.A)[0], "author"); author != "writer <writer@admin>" {
		t.Errorf("the commit's author is %v, want the authenticated user", author)
	}
	_, err := run(t, writer, bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "m"}, {Key: "author", Value: "Eve <eve@example.com>"}})
	wantCode(t, err, 13, "Unauthorized")
	dbs := mustRun(t, ts.authClient("reader", "pw", "admin", "").Database("admin"), bson.D{{Key: "listDatabases", Value: 1}, {Key: "nameOnly", Value: true}})
	if list := dbs["databases"].(bson.A); len(list) != 1 || get(list[0], "name") != "shop" {
		t.Errorf("listDatabases for a reader of shop: %v", dbs)
	}
	for _, c := range cases {
		_, err := run(t, ts.authClient(c.user, "pw", "admin", "").Database(c.db), c.cmd)
		switch {
		case c.allowed && err != nil:
			t.Errorf("%s on %s: %v, want allowed", c.user, c.cmd[0].Key, err)
		case !c.allowed:
			var ce mongo.CommandError
			if !errors.As(err, &ce) || ce.Code != 13 {
				t.Errorf("%s on %s.%s: %v, want Unauthorized", c.user, c.db, c.cmd[0].Key, err)
			}
		}
	}
}

// TestUserAdministration: usersInfo, updateUser (a new password replaces
// the old), grant and revoke, dropUser, and users surviving a restart.
func TestUserAdministration(t *testing.T) {
	ts := startServer(t, withAuth)
	createRoot(t, ts)
	admin := ts.authClient("root", "rootpw", "admin", "").Database("admin")
	shop := admin.Client().Database("shop")
	mustRun(t, shop, bson.D{{Key: "createUser", Value: "ann"}, {Key: "pwd", Value: "one"}, {Key: "roles", Value: bson.A{"read"}},
		{Key: "customData", Value: bson.D{{Key: "team", Value: "x"}}}})
	_, err := run(t, shop, bson.D{{Key: "createUser", Value: "ann"}, {Key: "pwd", Value: "one"}, {Key: "roles", Value: bson.A{}}})
	wantCode(t, err, 51003, "")
	_, err = run(t, shop, bson.D{{Key: "createUser", Value: "bob"}, {Key: "pwd", Value: "one"}, {Key: "roles", Value: bson.A{"readAnyDatabase"}}})
	wantCode(t, err, 31, "RoleNotFound")

	info := mustRun(t, shop, bson.D{{Key: "usersInfo", Value: "ann"}, {Key: "showPrivileges", Value: true}})
	users := info["users"].(bson.A)
	if len(users) != 1 || get(users[0], "_id") != "shop.ann" || get(users[0], "credentials") != nil ||
		get(users[0], "customData", "team") != "x" || get(users[0], "inheritedPrivileges") == nil {
		t.Fatalf("usersInfo: %v", info)
	}
	mustRun(t, shop, bson.D{{Key: "updateUser", Value: "ann"}, {Key: "pwd", Value: "two"}})
	if err := ts.authClient("ann", "one", "shop", "").Ping(ctx, nil); err == nil {
		t.Fatal("the old password still works")
	}
	mustRun(t, shop, bson.D{{Key: "grantRolesToUser", Value: "ann"}, {Key: "roles", Value: bson.A{"readWrite"}}})
	if _, err := ts.authClient("ann", "two", "shop", "").Database("shop").Collection("c").InsertOne(ctx, bson.D{}); err != nil {
		t.Fatalf("after grantRolesToUser: %v", err)
	}
	mustRun(t, shop, bson.D{{Key: "revokeRolesFromUser", Value: "ann"}, {Key: "roles", Value: bson.A{"readWrite"}}})
	_, err = ts.authClient("ann", "two", "shop", "").Database("shop").Collection("c").InsertOne(ctx, bson.D{})
	var ce mongo.CommandError
	if !errors.As(err, &ce) || ce.Code != 13 {
		t.Fatalf("after revokeRolesFromUser: %v", err)
	}

	// Users are not versioned data: a hard reset of their database to a
	// commit made before them leaves them.
	before := mustRun(t, shop, bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "before bob"}})["commitId"]
	mustRun(t, shop, bson.D{{Key: "createUser", Value: "bob"}, {Key: "pwd", Value: "pw"}, {Key: "roles", Value: bson.A{"read"}}})
	shop.Collection("c").InsertOne(ctx, bson.D{{Key: "_id", Value: "after"}})
	mustRun(t, shop, bson.D{{Key: "dumboReset", Value: 1}, {Key: "to", Value: before}, {Key: "hard", Value: true}})
	if err := ts.authClient("bob", "pw", "shop", "").Ping(ctx, nil); err != nil {
		t.Fatalf("bob after a hard reset of shop: %v", err)
	}
	ts.restart()
	if err := ts.authClient("ann", "two", "shop", "").Ping(ctx, nil); err != nil {
		t.Fatalf("after a restart: %v", err)
	}
	admin = ts.authClient("root", "rootpw", "admin", "").Database("admin")
	mustRun(t, admin.Client().Database("shop"), bson.D{{Key: "dropUser", Value: "ann"}})
	_, err = run(t, admin.Client().Database("shop"), bson.D{{Key: "dropUser", Value: "ann"}})
	wantCode(t, err, 11, "UserNotFound")
}

// TestFailedLoginsSlowDown: with --auth, after a few failed logins from
// one source, each further failure is answered late; without it, none.
func TestFailedLoginsSlowDown(t *testing.T) {
	ts := startServer(t, withAuth)
	createRoot(t, ts)
	nc := ts.dial()
	garbage := bson.D{{Key: "saslStart", Value: 1}, {Key: "mechanism", Value: "SCRAM-SHA-256"},
		{Key: "payload", Value: bson.Binary{Data: []byte("not scram")}}, {Key: "$db", Value: "admin"}}
	for range 5 {
		wantRawCode(t, raw(t, nc, garbage), 18)
	}
	start := time.Now()
	wantRawCode(t, raw(t, nc, garbage), 18)
	if took := time.Since(start); took < 350*time.Millisecond {
		t.Fatalf("the sixth failure in a row was answered after %v, want at least 400 ms", took)
	}
	// Without --auth no password guards anything: failures answer at once,
	// as mongod's.
	open := startServer(t).dial()
	for i := range 8 {
		start := time.Now()
		wantRawCode(t, raw(t, open, garbage), 18)
		if took := time.Since(start); took > 750*time.Millisecond { // throttled, the 7th would wait 800 ms
			t.Fatalf("failure %d without --auth answered after %v, want at once", i+1, took)
		}
	}
}

// TestUserDefinedRoles: a role with a privilege on one collection grants
// just that; grants and revokes apply to connections already logged in;
// roles inherit roles (no cycles); a database's role may not reach past
// it; dropping a role takes it from its users; roles survive a restart.
func TestUserDefinedRoles(t *testing.T) {
	ts := startServer(t, withAuth)
	createRoot(t, ts)
	shop := ts.authClient("root", "rootpw", "admin", "").Database("shop")
	onOrders := func(actions ...string) bson.A {
		return bson.A{bson.D{{Key: "resource", Value: bson.D{{Key: "db", Value: "shop"}, {Key: "collection", Value: "orders"}}},
			{Key: "actions", Value: actions}}}
	}
	mustRun(t, shop, bson.D{{Key: "createRole", Value: "auditor"}, {Key: "privileges", Value: onOrders("find")}, {Key: "roles", Value: bson.A{}}})
	mustRun(t, shop, bson.D{{Key: "createUser", Value: "aud"}, {Key: "pwd", Value: "pw"}, {Key: "roles", Value: bson.A{"auditor"}}})
	aud := ts.authClient("aud", "pw", "shop", "").Database("shop")
	allowed := func(cmd bson.D, want bool) {
		t.Helper()
		_, err := run(t, aud, cmd)
		var ce mongo.CommandError
		if want && err != nil || !want && (!errors.As(err, &ce) || ce.Code != 13) {
			t.Fatalf("%v: %v (want allowed %v)", cmd, err, want)
		}
	}
	insertOrder := bson.D{{Key: "insert", Value: "orders"}, {Key: "documents", Value: bson.A{bson.D{}}}}
	allowed(bson.D{{Key: "find", Value: "orders"}}, true)
	allowed(bson.D{{Key: "find", Value: "other"}}, false)
	allowed(insertOrder, false)
	mustRun(t, shop, bson.D{{Key: "grantPrivilegesToRole", Value: "auditor"}, {Key: "privileges", Value: onOrders("insert")}})
	allowed(insertOrder, true) // the same connection, without logging in again
	mustRun(t, shop, bson.D{{Key: "revokePrivilegesFromRole", Value: "auditor"}, {Key: "privileges", Value: onOrders("insert")}})
	allowed(insertOrder, false)

	mustRun(t, shop, bson.D{{Key: "createRole", Value: "lead"}, {Key: "privileges", Value: bson.A{}}, {Key: "roles", Value: bson.A{"auditor"}}})
	mustRun(t, shop, bson.D{{Key: "grantRolesToRole", Value: "lead"}, {Key: "roles", Value: bson.A{"readWrite"}}})
	_, err := run(t, shop, bson.D{{Key: "updateRole", Value: "auditor"}, {Key: "roles", Value: bson.A{"lead"}}})
	wantCode(t, err, 49, "InvalidRoleModification")
	_, err = run(t, shop, bson.D{{Key: "createRole", Value: "wide"}, {Key: "roles", Value: bson.A{}},
		{Key: "privileges", Value: bson.A{bson.D{{Key: "resource", Value: bson.D{{Key: "cluster", Value: true}}}, {Key: "actions", Value: bson.A{"serverStatus"}}}}}})
	wantCode(t, err, 2, "BadValue")
	_, err = run(t, shop, bson.D{{Key: "createRole", Value: "auditor"}, {Key: "privileges", Value: bson.A{}}, {Key: "roles", Value: bson.A{}}})
	wantCode(t, err, 51002, "")

	info := mustRun(t, shop, bson.D{{Key: "rolesInfo", Value: "lead"}, {Key: "showPrivileges", Value: true}})
	roles := info["roles"].(bson.A)
	if len(roles) != 1 || get(roles[0], "isBuiltin") != false || len(get(roles[0], "inheritedRoles").(bson.A)) != 2 {
		t.Fatalf("rolesInfo lead: %v", info)
	}
	ts.restart()
	shop = ts.authClient("root", "rootpw", "admin", "").Database("shop")
	if n := len(mustRun(t, shop, bson.D{{Key: "rolesInfo", Value: 1}})["roles"].(bson.A)); n != 2 {
		t.Fatalf("%d roles after a restart, want 2", n)
	}
	aud = ts.authClient("aud", "pw", "shop", "").Database("shop")
	allowed(bson.D{{Key: "find", Value: "orders"}}, true)
	mustRun(t, shop, bson.D{{Key: "dropRole", Value: "auditor"}})
	allowed(bson.D{{Key: "find", Value: "orders"}}, false)
	users := mustRun(t, shop, bson.D{{Key: "usersInfo", Value: "aud"}})["users"].(bson.A)
	if n := len(get(users[0], "roles").(bson.A)); n != 0 {
		t.Fatalf("aud still has %d roles after dropRole", n)
	}
}

// TestProtectedBranches: a protected branch takes writes and moves only
// from holders of its roles; others work on a branch of their own, which
// a holder merges; a read-only user reads any revision.
func TestProtectedBranches(t *testing.T) {
	ts := startServer(t, withAuth)
	createRoot(t, ts)
	root := ts.authClient("root", "rootpw", "admin", "").Database("shop")
	root.Collection("c").InsertOne(ctx, bson.D{{Key: "_id", Value: 1}})
	mustRun(t, root, bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "base"}})
	mustRun(t, root, bson.D{{Key: "createRole", Value: "release"}, {Key: "privileges", Value: bson.A{}}, {Key: "roles", Value: bson.A{}}})
	mustRun(t, root, bson.D{{Key: "dumboProtectBranch", Value: "main"}, {Key: "roles", Value: bson.A{"release"}}})
	for _, u := range []struct {
		name  string
		roles bson.A
	}{
		{"dev", bson.A{"readWrite"}}, {"lead", bson.A{"readWrite", "release"}}, {"viewer", bson.A{"read"}},
	} {
		mustRun(t, root, bson.D{{Key: "createUser", Value: u.name}, {Key: "pwd", Value: "pw"}, {Key: "roles", Value: u.roles}})
	}
	dev := ts.authClient("dev", "pw", "shop", "")
	_, err := dev.Database("shop").Collection("c").InsertOne(ctx, bson.D{{Key: "_id", Value: 2}})
	var ce mongo.CommandError
	if !errors.As(err, &ce) || ce.Code != 13 {
		t.Fatalf("dev writing main: %v, want Unauthorized", err)
	}
	_, err = run(t, dev.Database("shop"), bson.D{{Key: "dumboReset", Value: 1}, {Key: "to", Value: "HEAD"}})
	wantCode(t, err, 13, "Unauthorized")
	mustRun(t, dev.Database("shop"), bson.D{{Key: "dumboBranch", Value: "feature"}})
	if _, err := dev.Database("shop@feature").Collection("c").InsertOne(ctx, bson.D{{Key: "_id", Value: 2}}); err != nil {
		t.Fatalf("dev writing its own branch: %v", err)
	}
	mustRun(t, dev.Database("shop@feature"), bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "feature"}})
	_, err = run(t, dev.Database("shop"), bson.D{{Key: "dumboMerge", Value: 1}, {Key: "mergeIn", Value: "feature"}})
	wantCode(t, err, 13, "Unauthorized")
	lead := ts.authClient("lead", "pw", "shop", "").Database("shop")
	mustRun(t, lead, bson.D{{Key: "dumboMerge", Value: 1}, {Key: "mergeIn", Value: "feature"}})
	if n, _ := lead.Collection("c").CountDocuments(ctx, bson.D{}); n != 2 {
		t.Fatalf("main after the lead's merge: %d documents", n)
	}
	viewer := ts.authClient("viewer", "pw", "shop", "")
	if n, err := viewer.Database("shop@feature").Collection("c").CountDocuments(ctx, bson.D{}); err != nil || n != 2 {
		t.Fatalf("viewer reading shop@feature: %d, %v", n, err)
	}
	listed := mustRun(t, viewer.Database("shop"), bson.D{{Key: "dumboProtectedBranches", Value: 1}})
	if b := listed["branches"].(bson.A); len(b) != 1 || get(b[0], "branch") != "main" {
		t.Fatalf("dumboProtectedBranches: %v", listed)
	}
	mustRun(t, root, bson.D{{Key: "dumboProtectBranch", Value: "main"}, {Key: "unprotect", Value: true}})
	if _, err := dev.Database("shop").Collection("c").InsertOne(ctx, bson.D{{Key: "_id", Value: 3}}); err != nil {
		t.Fatalf("dev writing main once unprotected: %v", err)
	}
}

// TestProtectedBranchesSayWhoMayWrite: dumboProtectedBranches tells each
// caller whether it may write each protected branch, holding one of its
// roles directly or through a role that inherits it.
func TestProtectedBranchesSayWhoMayWrite(t *testing.T) {
	ts := startServer(t, withAuth)
	createRoot(t, ts)
	root := ts.authClient("root", "rootpw", "admin", "").Database("shop")
	root.Collection("c").InsertOne(ctx, bson.D{{Key: "_id", Value: 1}})
	mustRun(t, root, bson.D{{Key: "dumboBranch", Value: "release"}})
	mustRun(t, root, bson.D{{Key: "createRole", Value: "release"}, {Key: "privileges", Value: bson.A{}}, {Key: "roles", Value: bson.A{}}})
	mustRun(t, root, bson.D{{Key: "createRole", Value: "senior"}, {Key: "privileges", Value: bson.A{}}, {Key: "roles", Value: bson.A{"release"}}})
	mustRun(t, root, bson.D{{Key: "dumboProtectBranch", Value: "main"}, {Key: "roles", Value: bson.A{"release"}}})
	mustRun(t, root, bson.D{{Key: "dumboProtectBranch", Value: "release"}, {Key: "roles", Value: bson.A{bson.D{{Key: "role", Value: "root"}, {Key: "db", Value: "admin"}}}}})
	for _, u := range []struct {
		name  string
		roles bson.A
	}{
		{"dev", bson.A{"readWrite"}}, {"lead", bson.A{"readWrite", "release"}}, {"elder", bson.A{"readWrite", "senior"}}, {"viewer", bson.A{"read"}},
	} {
		mustRun(t, root, bson.D{{Key: "createUser", Value: u.name}, {Key: "pwd", Value: "pw"}, {Key: "roles", Value: u.roles}})
	}
	for _, c := range []struct {
		user, want string
	}{
		{"dev", "main:false release:false"},
		{"lead", "main:true release:false"},
		{"elder", "main:true release:false"},
		{"viewer", "main:false release:false"},
	} {
		listed := mustRun(t, ts.authClient(c.user, "pw", "shop", "").Database("shop"), bson.D{{Key: "dumboProtectedBranches", Value: 1}})
		var got []string
		for _, b := range listed["branches"].(bson.A) {
			got = append(got, fmt.Sprintf("%v:%v", get(b, "branch"), get(b, "writable")))
		}
		slices.Sort(got)
		if s := strings.Join(got, " "); s != c.want {
			t.Errorf("%s: dumboProtectedBranches says %s, want %s", c.user, s, c.want)
		}
	}
	listed := mustRun(t, ts.authClient("root", "rootpw", "admin", "").Database("shop"), bson.D{{Key: "dumboProtectedBranches", Value: 1}})
	for _, b := range listed["branches"].(bson.A) {
		if get(b, "writable") != (get(b, "branch") == "release") {
			t.Errorf("root: %v", b)
		}
	}
}

// TestEveryBuiltinRole: each of the 16 built-in roles allows a command
// of what it is for and refuses one it is not for.
func TestEveryBuiltinRole(t *testing.T) {
	ts := startServer(t, withAuth)
	createRoot(t, ts)
	root := ts.authClient("root", "rootpw", "admin", "")
	for _, db := range []string{"shop", "other"} {
		root.Database(db).Collection("c").InsertOne(ctx, bson.D{{Key: "_id", Value: 1}})
	}
	find := bson.D{{Key: "find", Value: "c"}}
	insert := bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{}}}}
	createUser := func(name string) bson.D {
		return bson.D{{Key: "createUser", Value: name}, {Key: "pwd", Value: "x"}, {Key: "roles", Value: bson.A{}}}
	}
	type use struct {
		db  string
		cmd bson.D
	}
	cases := []struct {
		role, roleDB    string
		allowed, denied use
	}{
		{"read", "shop", use{"shop", find}, use{"shop", insert}},
		{"readWrite", "shop", use{"shop", insert}, use{"shop", bson.D{{Key: "dropDatabase", Value: 1}}}},
		{"dbAdmin", "shop", use{"shop", bson.D{{Key: "collStats", Value: "c"}}}, use{"shop", find}},
		{"dbOwner", "shop", use{"shop", createUser("o1")}, use{"other", find}},
		{"userAdmin", "shop", use{"shop", createUser("u1")}, use{"shop", find}},
		{"readAnyDatabase", "admin", use{"other", find}, use{"other", insert}},
		{"readWriteAnyDatabase", "admin", use{"other", insert}, use{"other", createUser("u2")}},
		{"userAdminAnyDatabase", "admin", use{"other", createUser("u3")}, use{"other", find}},
		{"dbAdminAnyDatabase", "admin", use{"other", bson.D{{Key: "collStats", Value: "c"}}}, use{"other", insert}},
		{"clusterMonitor", "admin", use{"admin", bson.D{{Key: "serverStatus", Value: 1}}}, use{"shop", insert}},
		{"clusterManager", "admin", use{"admin", bson.D{{Key: "replSetGetConfig", Value: 1}}}, use{"shop", find}},
		{"clusterAdmin", "admin", use{"admin", bson.D{{Key: "currentOp", Value: 1}}}, use{"shop", insert}},
		{"hostManager", "admin", use{"admin", bson.D{{Key: "setParameter", Value: 1}, {Key: "transactionLifetimeLimitSeconds", Value: 60}}},
			use{"admin", bson.D{{Key: "serverStatus", Value: 1}}}},
		{"backup", "admin", use{"other", find}, use{"other", insert}},
		{"restore", "admin", use{"other", insert}, use{"other", find}},
		{"root", "admin", use{"other", bson.D{{Key: "dropDatabase", Value: 1}}}, use{}},
	}
	if len(cases) != len(auth.BuiltinRoleNames()) {
		t.Fatalf("%d cases for %d built-in roles", len(cases), len(auth.BuiltinRoleNames()))
	}
	for _, c := range cases {
		mustRun(t, root.Database("admin"), bson.D{{Key: "createUser", Value: c.role + "User"}, {Key: "pwd", Value: "pw"},
			{Key: "roles", Value: bson.A{bson.D{{Key: "role", Value: c.role}, {Key: "db", Value: c.roleDB}}}}})
		client := ts.authClient(c.role+"User", "pw", "admin", "")
		if _, err := run(t, client.Database(c.allowed.db), c.allowed.cmd); err != nil {
			t.Errorf("%s: %s on %s refused: %v", c.role, c.allowed.cmd[0].Key, c.allowed.db, err)
		}
		if c.denied.cmd == nil {
			continue
		}
		_, err := run(t, client.Database(c.denied.db), c.denied.cmd)
		var ce mongo.CommandError
		if !errors.As(err, &ce) || ce.Code != 13 {
			t.Errorf("%s: %s on %s: %v, want Unauthorized", c.role, c.denied.cmd[0].Key, c.denied.db, err)
		}
	}
}
