package server_test

import (
	"crypto/x509"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/dumbodb/dumbodb/internal/testpki"
	"github.com/dumbodb/dumbodb/server"
)

// newTestPKI makes a CA and a server certificate.
func newTestPKI(t *testing.T) (*testpki.PKI, string) {
	t.Helper()
	p, err := testpki.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	serverFile, err := p.Issue("server", x509.ExtKeyUsageServerAuth)
	if err != nil {
		t.Fatal(err)
	}
	return p, serverFile
}

// tlsClient connects over TLS, trusting the CA, with a client certificate
// when certFile is set.
func (ts *testServer) tlsClient(p *testpki.PKI, certFile string) *mongo.Client {
	ts.t.Helper()
	cfg, err := p.ClientConfig(certFile)
	if err != nil {
		ts.t.Fatal(err)
	}
	return ts.client(options.Client().SetTLSConfig(cfg).SetTimeout(5 * time.Second))
}

// TestTLSModes: requireTLS serves TLS clients and refuses plain ones;
// allowTLS serves both on one port; with a CA file a client must present
// a certificate the CA signed, unless connections without one are
// allowed.
func TestTLSModes(t *testing.T) {
	p, serverFile := newTestPKI(t)
	clientFile, err := p.Issue("client", x509.ExtKeyUsageClientAuth)
	if err != nil {
		t.Fatal(err)
	}
	require := startServer(t, func(c *server.Config) {
		c.TLS = server.TLSConfig{Mode: server.TLSRequire, CertificateKeyFile: serverFile}
	})
	if err := require.tlsClient(p, "").Ping(ctx, nil); err != nil {
		t.Fatalf("a TLS client of requireTLS: %v", err)
	}
	cfg, _ := p.ClientConfig("")
	compressed := require.client(options.Client().SetTLSConfig(cfg).SetCompressors([]string{"zstd"})).Database("z").Collection("c")
	if _, err := compressed.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "s", Value: strings.Repeat("x", 4096)}}); err != nil {
		t.Fatalf("OP_COMPRESSED inside TLS: %v", err)
	}
	if n, err := compressed.CountDocuments(ctx, bson.D{}); err != nil || n != 1 {
		t.Fatalf("OP_COMPRESSED inside TLS: %d, %v", n, err)
	}
	if err := require.client(options.Client().SetTimeout(2*time.Second)).Ping(ctx, nil); err == nil {
		t.Fatal("requireTLS served a plain client")
	}
	allow := startServer(t, func(c *server.Config) {
		c.TLS = server.TLSConfig{Mode: server.TLSAllow, CertificateKeyFile: serverFile}
	})
	for name, c := range map[string]*mongo.Client{"TLS": allow.tlsClient(p, ""), "plain": allow.client()} {
		if err := c.Ping(ctx, nil); err != nil {
			t.Fatalf("a %s client of allowTLS: %v", name, err)
		}
	}
	verify := startServer(t, func(c *server.Config) {
		c.TLS = server.TLSConfig{Mode: server.TLSRequire, CertificateKeyFile: serverFile, CAFile: p.CAFile}
	})
	if err := verify.tlsClient(p, clientFile).Ping(ctx, nil); err != nil {
		t.Fatalf("a client with a certificate of the CA: %v", err)
	}
	if err := verify.tlsClient(p, "").Ping(ctx, nil); err == nil {
		t.Fatal("a client without a certificate was served although the CA file asks for one")
	}
	optional := startServer(t, func(c *server.Config) {
		c.TLS = server.TLSConfig{Mode: server.TLSRequire, CertificateKeyFile: serverFile, CAFile: p.CAFile,
			AllowConnectionsWithoutCertificates: true}
	})
	if err := optional.tlsClient(p, "").Ping(ctx, nil); err != nil {
		t.Fatalf("a client without a certificate, allowed: %v", err)
	}
}

// TestX509Authentication: a client whose certificate the server verified
// logs in as the $external user named by the certificate's subject, with
// that user's roles; a certificate with no such user is refused.
func TestX509Authentication(t *testing.T) {
	p, serverFile := newTestPKI(t)
	clientFile, err := p.Issue("client", x509.ExtKeyUsageClientAuth)
	if err != nil {
		t.Fatal(err)
	}
	strangerFile, err := p.Issue("stranger", x509.ExtKeyUsageClientAuth)
	if err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, withAuth, func(c *server.Config) {
		c.TLS = server.TLSConfig{Mode: server.TLSRequire, CertificateKeyFile: serverFile, CAFile: p.CAFile}
	})
	anon := ts.tlsClient(p, clientFile)
	mustRun(t, anon.Database("admin"), bson.D{{Key: "createUser", Value: "root"}, {Key: "pwd", Value: "rootpw"}, {Key: "roles", Value: bson.A{"root"}}})
	rootCfg, _ := p.ClientConfig(clientFile)
	root := ts.client(options.Client().SetTLSConfig(rootCfg).SetAuth(options.Credential{Username: "root", Password: "rootpw", AuthSource: "admin"}))
	mustRun(t, root.Database("$external"), bson.D{{Key: "createUser", Value: "CN=client,O=DumboDB"},
		{Key: "roles", Value: bson.A{bson.D{{Key: "role", Value: "readWrite"}, {Key: "db", Value: "shop"}}}}})
	_, err = run(t, root.Database("$external"), bson.D{{Key: "createUser", Value: "CN=x"}, {Key: "pwd", Value: "p"}, {Key: "roles", Value: bson.A{}}})
	wantCode(t, err, 2, "BadValue")

	x509Client := func(certFile string) *mongo.Client {
		cfg, err := p.ClientConfig(certFile)
		if err != nil {
			t.Fatal(err)
		}
		return ts.client(options.Client().SetTLSConfig(cfg).SetTimeout(5 * time.Second).
			SetAuth(options.Credential{AuthMechanism: "MONGODB-X509", AuthSource: "$external"}))
	}
	c := x509Client(clientFile)
	if _, err := c.Database("shop").Collection("c").InsertOne(ctx, bson.D{{Key: "_id", Value: 1}}); err != nil {
		t.Fatalf("the x.509 user writing shop: %v", err)
	}
	status := mustRun(t, c.Database("admin"), bson.D{{Key: "connectionStatus", Value: 1}})
	if users := get(status, "authInfo", "authenticatedUsers").(bson.A); len(users) != 1 || get(users[0], "user") != "CN=client,O=DumboDB" {
		t.Fatalf("connectionStatus: %v", status)
	}
	if _, err := c.Database("other").Collection("c").InsertOne(ctx, bson.D{}); err == nil {
		t.Fatal("the x.509 user wrote a database its roles do not grant")
	}
	if err := x509Client(strangerFile).Ping(ctx, nil); err == nil {
		t.Fatal("a certificate with no $external user logged in")
	}
}
