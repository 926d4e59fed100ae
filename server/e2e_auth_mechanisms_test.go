package server_test

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/dumbodb/dumbodb/server"
)

// TestAuthenticationMechanisms: with authenticationMechanisms set to
// SCRAM-SHA-256 alone, a SCRAM-SHA-1 login is refused with mongod's
// MechanismUnavailable even for a user that holds SHA-1 credentials,
// hello advertises SCRAM-SHA-256 alone (so a driver left to choose logs
// in), getParameter reports the list as settable at startup only, and
// setParameter refuses to change it.
func TestAuthenticationMechanisms(t *testing.T) {
	ts := startServer(t, withAuth, func(c *server.Config) { c.AuthMechanisms = []string{"SCRAM-SHA-256"} })
	createRoot(t, ts)
	nc := ts.dial()
	reply := raw(t, nc, bson.D{{Key: "saslStart", Value: 1}, {Key: "mechanism", Value: "SCRAM-SHA-1"},
		{Key: "payload", Value: bson.Binary{Data: []byte("n,,n=root,r=abc")}}, {Key: "$db", Value: "admin"}})
	wantRawError(t, reply, 334, "Received authentication for mechanism SCRAM-SHA-1 which is not enabled")

	hello := raw(t, nc, bson.D{{Key: "hello", Value: 1}, {Key: "saslSupportedMechs", Value: "admin.root"}, {Key: "$db", Value: "admin"}})
	if mechs, _ := hello["saslSupportedMechs"].(bson.A); len(mechs) != 1 || mechs[0] != "SCRAM-SHA-256" {
		t.Fatalf("saslSupportedMechs: %v", hello["saslSupportedMechs"])
	}
	if err := ts.authClient("root", "rootpw", "admin", "SCRAM-SHA-1").Ping(ctx, nil); err == nil {
		t.Fatal("a SCRAM-SHA-1 login was accepted")
	}
	root := ts.authClient("root", "rootpw", "admin", "")
	admin := root.Database("admin")
	got := mustRun(t, admin, bson.D{{Key: "getParameter", Value: bson.D{{Key: "showDetails", Value: true}}},
		{Key: "authenticationMechanisms", Value: 1}})
	if v, _ := get(got, "authenticationMechanisms", "value").(bson.A); len(v) != 1 || v[0] != "SCRAM-SHA-256" ||
		get(got, "authenticationMechanisms", "settableAtStartup") != true || get(got, "authenticationMechanisms", "settableAtRuntime") != false {
		t.Fatalf("getParameter: %v", got)
	}
	_, err := run(t, admin, bson.D{{Key: "setParameter", Value: 1}, {Key: "authenticationMechanisms", Value: bson.A{"SCRAM-SHA-1"}}})
	wantCode(t, err, 20, "IllegalOperation")
}

// TestAuthenticationMechanismsByDefault: mongod's default list, and a
// name this build does not offer refused at start.
func TestAuthenticationMechanismsByDefault(t *testing.T) {
	admin := startServer(t).client().Database("admin")
	got := mustRun(t, admin, bson.D{{Key: "getParameter", Value: 1}, {Key: "authenticationMechanisms", Value: 1}})
	if v, _ := got["authenticationMechanisms"].(bson.A); len(v) != len(server.DefaultAuthMechanisms()) || v[0] != "MONGODB-X509" {
		t.Fatalf("getParameter: %v", got)
	}
	srv := startServer(t).srv // no client: nothing reads the list meanwhile
	for _, list := range []string{"PLAIN", "SCRAM-SHA-256,GSSAPI", ""} {
		if err := srv.SetAuthMechanisms(list); err == nil {
			t.Errorf("authenticationMechanisms=%q was taken", list)
		}
	}
	if err := srv.SetAuthMechanisms("SCRAM-SHA-256, MONGODB-X509"); err != nil {
		t.Fatal(err)
	}
}
