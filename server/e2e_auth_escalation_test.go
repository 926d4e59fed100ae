package server_test

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// The escalation suite: with --auth, a user tries each way around its
// privileges and is refused, and a user who holds the right succeeds.

// authUsers starts an --auth server, creates the root user and the users
// named (name -> roles, each created on the database the role's db names
// first, or on admin), and returns the server and root's client.
func authServer(t *testing.T) (*testServer, *mongo.Client) {
	t.Helper()
	ts := startServer(t, withAuth)
	createRoot(t, ts)
	return ts, ts.authClient("root", "rootpw", "admin", "")
}

// addUser creates user name on database db with roles, through root.
func addUser(t *testing.T, root *mongo.Client, db, name string, roles bson.A) {
	t.Helper()
	mustRun(t, root.Database(db), bson.D{{Key: "createUser", Value: name}, {Key: "pwd", Value: "pw"}, {Key: "roles", Value: roles}})
}

func role(name, db string) bson.D { return bson.D{{Key: "role", Value: name}, {Key: "db", Value: db}} }

// TestUserAdminCannotEscalate: a user administrator of one database cannot
// give itself, or a user it creates, a role of another database (root
// among them), directly, through a role it creates or changes, or through
// a role that holds a protected branch; each attempt is refused and leaves
// it unable to read another database.
func TestUserAdminCannotEscalate(t *testing.T) {
	ts, root := authServer(t)
	mustRun(t, root.Database("hr"), bson.D{{Key: "insert", Value: "salaries"}, {Key: "documents", Value: bson.A{bson.D{{Key: "pay", Value: 1}}}}})
	mustRun(t, root.Database("admin"), bson.D{{Key: "createRole", Value: "empty"}, {Key: "privileges", Value: bson.A{}}, {Key: "roles", Value: bson.A{}}})
	mustRun(t, root.Database("shop"), bson.D{{Key: "createRole", Value: "release"}, {Key: "privileges", Value: bson.A{}}, {Key: "roles", Value: bson.A{}}})
	mustRun(t, root.Database("shop"), bson.D{{Key: "dumboProtectBranch", Value: "main"}, {Key: "roles", Value: bson.A{"release"}}})
	addUser(t, root, "team", "teamadmin", bson.A{"userAdmin"})
	addUser(t, root, "team", "member", bson.A{"read"})
	admin := ts.authClient("teamadmin", "pw", "team", "")
	team, adminDB := admin.Database("team"), admin.Database("admin")

	clusterPriv := bson.A{bson.D{{Key: "resource", Value: bson.D{{Key: "cluster", Value: true}}}, {Key: "actions", Value: bson.A{"shutdown"}}}}
	hrPriv := bson.A{bson.D{{Key: "resource", Value: bson.D{{Key: "db", Value: "hr"}, {Key: "collection", Value: ""}}}, {Key: "actions", Value: bson.A{"find"}}}}
	refused := []struct {
		name string
		db   *mongo.Database
		cmd  bson.D
		code int32
	}{
		{"grant root@admin to itself", team, bson.D{{Key: "grantRolesToUser", Value: "teamadmin"}, {Key: "roles", Value: bson.A{role("root", "admin")}}}, 13},
		{"grant read@hr to itself", team, bson.D{{Key: "grantRolesToUser", Value: "teamadmin"}, {Key: "roles", Value: bson.A{role("read", "hr")}}}, 13},
		{"grant the protected branch's role", team, bson.D{{Key: "grantRolesToUser", Value: "teamadmin"}, {Key: "roles", Value: bson.A{role("release", "shop")}}}, 13},
		{"create a user with read@hr", team, bson.D{{Key: "createUser", Value: "spy"}, {Key: "pwd", Value: "pw"}, {Key: "roles", Value: bson.A{role("read", "hr")}}}, 13},
		{"create a user with root", team, bson.D{{Key: "createUser", Value: "spy"}, {Key: "pwd", Value: "pw"}, {Key: "roles", Value: bson.A{role("root", "admin")}}}, 13},
		{"update itself to root", team, bson.D{{Key: "updateUser", Value: "teamadmin"}, {Key: "roles", Value: bson.A{role("root", "admin")}}}, 13},
		{"create a role inheriting root", team, bson.D{{Key: "createRole", Value: "r1"}, {Key: "privileges", Value: bson.A{}}, {Key: "roles", Value: bson.A{role("root", "admin")}}}, 2},
		{"create a role inheriting read@hr", team, bson.D{{Key: "createRole", Value: "r2"}, {Key: "privileges", Value: bson.A{}}, {Key: "roles", Value: bson.A{role("read", "hr")}}}, 2},
		{"create a role with privileges on hr", team, bson.D{{Key: "createRole", Value: "r3"}, {Key: "privileges", Value: hrPriv}, {Key: "roles", Value: bson.A{}}}, 2},
		{"make an admin role inherit root", adminDB, bson.D{{Key: "grantRolesToRole", Value: "empty"}, {Key: "roles", Value: bson.A{role("root", "admin")}}}, 13},
		{"give an admin role cluster privileges", adminDB, bson.D{{Key: "grantPrivilegesToRole", Value: "empty"}, {Key: "privileges", Value: clusterPriv}}, 13},
		{"give an admin role privileges on hr", adminDB, bson.D{{Key: "grantPrivilegesToRole", Value: "empty"}, {Key: "privileges", Value: hrPriv}}, 13},
		{"replace an admin role's roles", adminDB, bson.D{{Key: "updateRole", Value: "empty"}, {Key: "roles", Value: bson.A{role("root", "admin")}}}, 13},
	}
	for _, c := range refused {
		_, err := run(t, c.db, c.cmd)
		if err == nil {
			t.Fatalf("%s: allowed", c.name)
		}
		wantCode(t, err, c.code, "")
	}
	if _, err := run(t, admin.Database("hr"), bson.D{{Key: "find", Value: "salaries"}}); err == nil {
		t.Fatal("the user administrator of team reads hr.salaries")
	}
	info := mustRun(t, root.Database("team"), bson.D{{Key: "usersInfo", Value: "teamadmin"}})
	if roles := get(get(info, "users").(bson.A)[0], "roles").(bson.A); len(roles) != 1 {
		t.Fatalf("teamadmin's roles changed: %v", roles)
	}

	// What its own database's roles allow still works.
	mustRun(t, team, bson.D{{Key: "grantRolesToUser", Value: "member"}, {Key: "roles", Value: bson.A{"readWrite"}}})
	mustRun(t, team, bson.D{{Key: "createUser", Value: "helper"}, {Key: "pwd", Value: "pw"}, {Key: "roles", Value: bson.A{"read"}}})
	mustRun(t, team, bson.D{{Key: "createRole", Value: "teamReader"}, {Key: "privileges", Value: bson.A{}}, {Key: "roles", Value: bson.A{"read"}}})
	mustRun(t, team, bson.D{{Key: "updateUser", Value: "member"}, {Key: "roles", Value: bson.A{"read", "teamReader"}}})
	// And those who hold the right may grant across databases.
	addUser(t, root, "admin", "anyadmin", bson.A{"userAdminAnyDatabase"})
	any := ts.authClient("anyadmin", "pw", "admin", "")
	mustRun(t, any.Database("admin"), bson.D{{Key: "grantPrivilegesToRole", Value: "empty"}, {Key: "privileges", Value: clusterPriv}})
	mustRun(t, any.Database("team"), bson.D{{Key: "grantRolesToUser", Value: "member"}, {Key: "roles", Value: bson.A{role("read", "hr")}}})
	mustRun(t, root.Database("team"), bson.D{{Key: "grantRolesToUser", Value: "teamadmin"}, {Key: "roles", Value: bson.A{role("release", "shop")}}})
}

// TestProtectedBranchWhateverTheSpelling: a protected branch refuses a
// writer without its roles however the revision names it, through a
// client bulkWrite (the whole command refused before any op runs), and
// its rule cannot be lifted by a version administrator who lacks them.
func TestProtectedBranchWhateverTheSpelling(t *testing.T) {
	ts, root := authServer(t)
	shop := root.Database("shop")
	mustRun(t, shop, bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: 0}}}}})
	mustRun(t, shop, bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "start"}})
	mustRun(t, shop, bson.D{{Key: "dumboBranch", Value: "feature"}})
	mustRun(t, shop, bson.D{{Key: "createRole", Value: "release"}, {Key: "privileges", Value: bson.A{}}, {Key: "roles", Value: bson.A{}}})
	mustRun(t, shop, bson.D{{Key: "dumboProtectBranch", Value: "main"}, {Key: "roles", Value: bson.A{"release"}}})
	addUser(t, root, "shop", "dev", bson.A{"readWrite", "dbAdmin"})
	dev := ts.authClient("dev", "pw", "shop", "")

	insert := bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "x", Value: 1}}}}}
	for _, db := range []string{"shop", "shop@main", "shop@HEAD", "shop@refs/heads/main", "shop@HEAD~0"} {
		if _, err := run(t, dev.Database(db), insert); err == nil {
			t.Fatalf("insert into %s: allowed", db)
		}
	}
	for _, nsInfo := range []bson.A{
		{bson.D{{Key: "ns", Value: "shop.c"}}},
		{bson.D{{Key: "ns", Value: "shop@feature.c"}}, bson.D{{Key: "ns", Value: "shop@HEAD.c"}}},
	} {
		ops := bson.A{bson.D{{Key: "insert", Value: 0}, {Key: "document", Value: bson.D{{Key: "y", Value: 1}}}}}
		if len(nsInfo) == 2 {
			ops = append(ops, bson.D{{Key: "insert", Value: 1}, {Key: "document", Value: bson.D{{Key: "y", Value: 2}}}})
		}
		_, err := run(t, dev.Database("admin"), bson.D{{Key: "bulkWrite", Value: 1}, {Key: "ops", Value: ops}, {Key: "nsInfo", Value: nsInfo}})
		wantCode(t, err, 13, "Unauthorized")
	}
	_, err := run(t, dev.Database("shop"), bson.D{{Key: "dumboProtectBranch", Value: "main"}, {Key: "unprotect", Value: true}})
	wantCode(t, err, 13, "Unauthorized")
	for _, db := range []string{"shop@main", "shop@feature"} {
		n, err := root.Database(db).Collection("c").CountDocuments(ctx, bson.D{})
		if err != nil || n != 1 {
			t.Fatalf("%s holds %d documents (%v), want the 1 it started with", db, n, err)
		}
	}
	// The branch of its own takes its writes, and so does main for a holder.
	mustRun(t, dev.Database("shop@feature"), insert)
	mustRun(t, root.Database("shop"), bson.D{{Key: "grantRolesToUser", Value: "dev"}, {Key: "roles", Value: bson.A{"release"}}})
	mustRun(t, dev.Database("shop@HEAD"), insert)
}

// TestCursorsBelongToTheirUser: another user can neither read nor kill a
// cursor (its killCursors is refused); its owner can.
func TestCursorsBelongToTheirUser(t *testing.T) {
	ts, root := authServer(t)
	root.Database("shop").Collection("c").InsertMany(ctx, []any{bson.D{{Key: "a", Value: 1}}, bson.D{{Key: "a", Value: 2}}, bson.D{{Key: "a", Value: 3}}})
	addUser(t, root, "shop", "alice", bson.A{"read"})
	addUser(t, root, "shop", "bob", bson.A{"read"})
	alice := ts.authClient("alice", "pw", "shop", "").Database("shop")
	bob := ts.authClient("bob", "pw", "shop", "").Database("shop")
	sess, err := alice.Client().StartSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.EndSession(ctx)
	sc := mongo.NewSessionContext(ctx, sess)
	var first bson.M
	if err := alice.RunCommand(sc, bson.D{{Key: "find", Value: "c"}, {Key: "batchSize", Value: 1}}).Decode(&first); err != nil {
		t.Fatal(err)
	}
	id := get(first, "cursor", "id").(int64)
	_, err = run(t, bob, bson.D{{Key: "getMore", Value: id}, {Key: "collection", Value: "c"}})
	wantCode(t, err, 13, "Unauthorized")
	_, err = run(t, bob, bson.D{{Key: "killCursors", Value: "c"}, {Key: "cursors", Value: bson.A{id}}})
	wantCode(t, err, 13, "Unauthorized")
	var killed bson.M
	var next bson.M
	if err := alice.RunCommand(sc, bson.D{{Key: "getMore", Value: id}, {Key: "collection", Value: "c"}, {Key: "batchSize", Value: 1}}).Decode(&next); err != nil {
		t.Fatalf("alice's getMore of her cursor: %v", err)
	}
	if batch := get(next, "cursor", "nextBatch").(bson.A); len(batch) != 1 {
		t.Fatalf("alice's next batch: %v", next)
	}
	if err := alice.RunCommand(sc, bson.D{{Key: "killCursors", Value: "c"}, {Key: "cursors", Value: bson.A{id}}}).Decode(&killed); err != nil {
		t.Fatal(err)
	}
	if len(killed["cursorsKilled"].(bson.A)) != 1 {
		t.Fatalf("alice's killCursors: %v", killed)
	}
}

// TestSessionsBelongToTheirUser: another user naming a session's id acts
// on a session of its own: it cannot abort or commit the owner's
// transaction, nor end or kill the session; killAllSessions takes
// killAnySession.
func TestSessionsBelongToTheirUser(t *testing.T) {
	ts, root := authServer(t)
	addUser(t, root, "shop", "alice", bson.A{"readWrite"})
	addUser(t, root, "shop", "bob", bson.A{"readWrite"})
	alice := ts.authClient("alice", "pw", "shop", "")
	bob := ts.authClient("bob", "pw", "shop", "").Database("admin")
	sess, err := alice.StartSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.EndSession(ctx)
	if err := sess.StartTransaction(); err != nil {
		t.Fatal(err)
	}
	sc := mongo.NewSessionContext(ctx, sess)
	if _, err := alice.Database("shop").Collection("c").InsertOne(sc, bson.D{{Key: "_id", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	lsid := bson.D{{Key: "id", Value: sess.ID().Lookup("id")}}
	for _, cmd := range []bson.D{
		{{Key: "abortTransaction", Value: 1}, {Key: "lsid", Value: lsid}, {Key: "txnNumber", Value: int64(1)}, {Key: "autocommit", Value: false}},
		{{Key: "commitTransaction", Value: 1}, {Key: "lsid", Value: lsid}, {Key: "txnNumber", Value: int64(1)}, {Key: "autocommit", Value: false}},
		{{Key: "endSessions", Value: bson.A{lsid}}},
		{{Key: "killSessions", Value: bson.A{lsid}}},
		{{Key: "killSessions", Value: bson.A{}}},
	} {
		run(t, bob, cmd) // answered for bob's own session, if any
	}
	_, err = run(t, bob, bson.D{{Key: "killAllSessions", Value: bson.A{}}})
	wantCode(t, err, 13, "Unauthorized")
	_, err = run(t, bob, bson.D{{Key: "killAllSessionsByPattern", Value: bson.A{}}})
	wantCode(t, err, 13, "Unauthorized")
	if err := sess.CommitTransaction(ctx); err != nil {
		t.Fatalf("alice's commit after bob's attempts: %v", err)
	}
	if n, _ := root.Database("shop").Collection("c").CountDocuments(ctx, bson.D{}); n != 1 {
		t.Fatalf("%d documents after alice's commit, want 1", n)
	}
}

// TestRefusedStatementAbortsItsTransaction: a statement of a transaction
// refused by authorization aborts the transaction, as any failed
// statement does.
func TestRefusedStatementAbortsItsTransaction(t *testing.T) {
	ts, root := authServer(t)
	addUser(t, root, "shop", "alice", bson.A{"readWrite"})
	alice := ts.authClient("alice", "pw", "shop", "")
	sess, err := alice.StartSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.EndSession(ctx)
	sess.StartTransaction()
	sc := mongo.NewSessionContext(ctx, sess)
	if _, err := alice.Database("shop").Collection("c").InsertOne(sc, bson.D{{Key: "_id", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	_, err = alice.Database("hr").Collection("c").InsertOne(sc, bson.D{{Key: "_id", Value: 1}})
	wantCode(t, err, 13, "Unauthorized")
	err = sess.CommitTransaction(ctx)
	wantCode(t, err, 251, "NoSuchTransaction")
	if n, _ := root.Database("shop").Collection("c").CountDocuments(ctx, bson.D{}); n != 0 {
		t.Fatalf("%d documents of the aborted transaction", n)
	}
}

// anyUserCommands are the commands any logged-in user may run (their
// handlers authorize what they name: server/authz_table_test.go).
var anyUserCommands = map[string]bool{
	"bulkWrite": true, "getMore": true, "killCursors": true, "listDatabases": true, "startSession": true,
	"endSessions": true, "refreshSessions": true, "killSessions": true, "commitTransaction": true,
	"abortTransaction": true, "updateUser": true, "grantRolesToUser": true, "revokeRolesFromUser": true,
	"updateRole": true, "grantPrivilegesToRole": true, "revokePrivilegesFromRole": true, "grantRolesToRole": true,
	"revokeRolesFromRole": true, "convertShardKeyToHashed": true,
}

// TestEveryCommandRefusesWithoutPrivileges walks every command the server
// lists: each that requires authentication refuses a client that has not
// logged in, and each but those any user may run refuses a user without
// roles, on a database and on a branch of it.
func TestEveryCommandRefusesWithoutPrivileges(t *testing.T) {
	ts, root := authServer(t)
	mustRun(t, root.Database("shop"), bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{}}}})
	addUser(t, root, "shop", "nobody", bson.A{})
	anon := ts.client()
	nobody := ts.authClient("nobody", "pw", "shop", "")
	listed := mustRun(t, root.Database("admin"), bson.D{{Key: "listCommands", Value: 1}})
	n := 0
	for _, e := range listed["commands"].(bson.D) {
		if get(e.Value, "requiresAuth") != true {
			continue
		}
		n++
		db := "shop"
		if get(e.Value, "adminOnly") == true {
			db = "admin"
		}
		cmd := bson.D{{Key: e.Key, Value: "c"}}
		_, err := run(t, anon.Database(db), cmd)
		wantCode(t, err, 13, "Unauthorized")
		if anyUserCommands[e.Key] {
			continue
		}
		for _, at := range []string{db, db + "@HEAD"} {
			_, err = run(t, nobody.Database(at), cmd)
			if err == nil {
				t.Fatalf("%s on %s: allowed for a user without roles", e.Key, at)
			}
			wantCode(t, err, 13, "Unauthorized")
		}
	}
	if n < 100 {
		t.Fatalf("only %d commands require authentication", n)
	}
}

// TestDroppedCollectionsCursorsNoLongerOpen: cursors killed by a drop of
// their collection no longer count as open in serverStatus (they stay only
// to tell their next getMore why).
func TestDroppedCollectionsCursorsNoLongerOpen(t *testing.T) {
	ts := startServer(t)
	db := ts.client().Database("shop")
	db.Collection("c").InsertMany(ctx, []any{bson.D{}, bson.D{}, bson.D{}})
	open := func() int64 {
		n, _ := get(mustRun(t, db, bson.D{{Key: "serverStatus", Value: 1}}), "metrics", "cursor", "open", "total").(int64)
		return n
	}
	before := open()
	var ids []int64
	sc := oneSession(t, db)
	for range 20 {
		ids = append(ids, get(mustRunIn(t, sc, db, bson.D{{Key: "find", Value: "c"}, {Key: "batchSize", Value: 1}}), "cursor", "id").(int64))
	}
	if n := open(); n != before+20 {
		t.Fatalf("%d cursors open with 20 opened, want %d", n, before+20)
	}
	mustRun(t, db, bson.D{{Key: "drop", Value: "c"}})
	if n := open(); n != before {
		t.Fatalf("%d cursors open after the drop, want %d", n, before)
	}
	_, err := runIn(sc, db, bson.D{{Key: "getMore", Value: ids[0]}, {Key: "collection", Value: "c"}})
	wantCode(t, err, 175, "QueryPlanKilled")
}
