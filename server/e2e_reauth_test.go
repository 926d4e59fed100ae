package server_test

import (
	"net"
	"testing"

	"github.com/xdg-go/scram"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// scramReply runs a SCRAM-SHA-256 conversation on a raw connection as
// user of db and returns the server's last reply: the final one, or the
// first error. Each command of the conversation carries extra.
func scramReply(t *testing.T, nc net.Conn, user, pwd, db string, extra ...bson.E) bson.M {
	t.Helper()
	client, err := scram.SHA256.NewClient(user, pwd, "")
	if err != nil {
		t.Fatal(err)
	}
	conv := client.NewConversation()
	out, err := conv.Step("")
	if err != nil {
		t.Fatal(err)
	}
	reply := raw(t, nc, append(bson.D{{Key: "saslStart", Value: 1}, {Key: "mechanism", Value: "SCRAM-SHA-256"},
		{Key: "payload", Value: bson.Binary{Data: []byte(out)}}, {Key: "$db", Value: db}}, extra...))
	for reply["ok"] == 1.0 && reply["done"] != true {
		payload, _ := reply["payload"].(bson.Binary)
		out = ""
		if !conv.Done() {
			if out, err = conv.Step(string(payload.Data)); err != nil {
				t.Fatal(err)
			}
		}
		reply = raw(t, nc, append(bson.D{{Key: "saslContinue", Value: 1}, {Key: "conversationId", Value: reply["conversationId"]},
			{Key: "payload", Value: bson.Binary{Data: []byte(out)}}, {Key: "$db", Value: db}}, extra...))
	}
	return reply
}

// wantLoggedInAs checks connectionStatus's one authenticated user.
func wantLoggedInAs(t *testing.T, nc net.Conn, user, db string) {
	t.Helper()
	status := raw(t, nc, bson.D{{Key: "connectionStatus", Value: 1}, {Key: "$db", Value: "admin"}})
	users, _ := get(status, "authInfo", "authenticatedUsers").(bson.A)
	if len(users) != 1 || get(users[0], "user") != user || get(users[0], "db") != db {
		t.Fatalf("logged in as %v, want %s@%s", users, user, db)
	}
}

// TestAuthenticateAgain: a connection that is authenticated may start
// another SASL conversation; it stays logged in as its user meanwhile,
// and after one that fails. It may authenticate as the same user again,
// but not as another user, which mongod refuses with codes of its own:
// 5626702 for another user of the same database, 5626701 for a user of
// another database. Under the Stable API's apiStrict even the same user
// is refused (5626703). After logout another user may log in.
func TestAuthenticateAgain(t *testing.T) {
	ts, root := authServer(t)
	addUser(t, root, "shop", "alice", bson.A{"read"})
	addUser(t, root, "shop", "bob", bson.A{"read"})
	nc := ts.dial()
	rawLogin(t, nc, "alice", "pw", "shop")
	find := bson.D{{Key: "find", Value: "c"}, {Key: "$db", Value: "shop"}}

	start := bson.D{{Key: "saslStart", Value: 1}, {Key: "mechanism", Value: "SCRAM-SHA-256"},
		{Key: "payload", Value: bson.Binary{Data: []byte("n,,n=alice,r=Y0iJqJu58tGDrUdtqS7+m0oMe4sau3f6")}},
		{Key: "autoAuthorize", Value: 1}, {Key: "options", Value: bson.D{{Key: "skipEmptyExchange", Value: true}}}, {Key: "$db", Value: "shop"}}
	for range 2 {
		if reply := raw(t, nc, start); reply["ok"] != 1.0 || reply["done"] != false {
			t.Fatalf("saslStart on an authenticated connection: %v", reply)
		}
		wantLoggedInAs(t, nc, "alice", "shop")
		if reply := raw(t, nc, find); reply["ok"] != 1.0 {
			t.Fatalf("find during a second conversation: %v", reply)
		}
	}

	if reply := scramReply(t, nc, "alice", "pw", "shop"); reply["ok"] != 1.0 {
		t.Fatalf("authenticating again as the same user: %v", reply)
	}
	wantLoggedInAs(t, nc, "alice", "shop")
	strict := []bson.E{{Key: "apiVersion", Value: "1"}, {Key: "apiStrict", Value: true}}
	wantRawError(t, scramReply(t, nc, "alice", "pw", "shop", strict...), 5626703,
		"Each client connection may only be authenticated once")
	wantLoggedInAs(t, nc, "alice", "shop")

	wantRawError(t, scramReply(t, nc, "alice", "wrong", "shop"), 18, "Authentication failed.")
	wantLoggedInAs(t, nc, "alice", "shop")

	wantRawError(t, scramReply(t, nc, "bob", "pw", "shop"), 5626702,
		"Client has attempted to authenticate on multiple databases.Already authenticated as: alice@shop")
	wantLoggedInAs(t, nc, "alice", "shop")
	wantRawError(t, scramReply(t, nc, "root", "rootpw", "admin"), 5626701,
		"Each client connection may only be authenticated once. Previously authenticated as: alice@shop")
	wantLoggedInAs(t, nc, "alice", "shop")
	if reply := raw(t, nc, find); reply["ok"] != 1.0 {
		t.Fatalf("find after refused logins: %v", reply)
	}

	raw(t, nc, bson.D{{Key: "logout", Value: 1}, {Key: "$db", Value: "shop"}})
	if reply := scramReply(t, nc, "bob", "pw", "shop"); reply["ok"] != 1.0 {
		t.Fatalf("login after logout: %v", reply)
	}
	wantLoggedInAs(t, nc, "bob", "shop")

	// Through the driver, on connections it authenticated itself.
	db := ts.authClient("alice", "pw", "shop", "SCRAM-SHA-256").Database("shop")
	driverStart := start[:len(start)-1]
	for range 2 {
		mustRun(t, db, driverStart)
		status := mustRun(t, db, bson.D{{Key: "connectionStatus", Value: 1}})
		if users := get(status, "authInfo", "authenticatedUsers").(bson.A); len(users) != 1 || get(users[0], "user") != "alice" {
			t.Fatalf("connectionStatus after saslStart: %v", status)
		}
	}
}
