package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/dumbodb/dumbodb/internal/dumboproc"
)

// nodeDriver finds node and the Node driver `make test` installs.
func nodeDriver(t *testing.T) (node, driver string) {
	t.Helper()
	driver = os.Getenv("DUMBODB_NODE_DRIVER")
	if driver == "" {
		driver, _ = filepath.Abs("../../.tools/node-driver-7.9.0/node_modules/mongodb")
	}
	node, err := exec.LookPath("node")
	if _, serr := os.Stat(driver); err != nil || serr != nil {
		if testing.Short() {
			t.Skip("node or the Node driver is not installed (run `make test`, which installs it)")
		}
		t.Fatalf("node (%v) or the Node driver at %s (%v) missing: run `make test`, which installs them", err, driver, serr)
	}
	return node, driver
}

// TestNodeDriverAuthAndTransactions: an application on the Node driver
// logs in with SCRAM-SHA-256, is refused what its role does not grant, is
// told a wrong password as AuthenticationFailed, and commits a
// withTransaction over two databases.
func TestNodeDriverAuthAndTransactions(t *testing.T) {
	node, driver := nodeDriver(t)
	p := dumboproc.StartT(t, t.TempDir(), "--auth")
	if r := rawCommand(t, p.Addr(), bson.D{{Key: "createUser", Value: "app"}, {Key: "pwd", Value: "s3cret"},
		{Key: "roles", Value: bson.A{"readWriteAnyDatabase"}}, {Key: "$db", Value: "admin"}}); r["ok"] != 1.0 {
		t.Fatalf("createUser: %v", r)
	}
	script := `
const { MongoClient } = require(process.argv[2]);
const base = "mongodb://127.0.0.1:" + process.argv[3] + "/?directConnection=true&authSource=admin&authMechanism=SCRAM-SHA-256";
(async () => {
  const bad = new MongoClient(base.replace("//", "//app:wrong@"), { serverSelectionTimeoutMS: 3000 });
  try { await bad.connect(); await bad.db("x").command({ ping: 1 }); console.log("no error"); }
  catch (e) { console.log(e.codeName || e.code); } finally { await bad.close(); }
  const client = new MongoClient(base.replace("//", "//app:s3cret@"));
  await client.connect();
  const orders = client.db("orders").collection("o"), stock = client.db("stock").collection("s");
  await stock.insertOne({ _id: "x", qty: 5 });
  const session = client.startSession();
  await session.withTransaction(async () => {
    await orders.insertOne({ _id: 1, sku: "x" }, { session });
    await stock.updateOne({ _id: "x" }, { $inc: { qty: -1 } }, { session });
  });
  await session.endSession();
  console.log((await orders.countDocuments()) + " " + (await stock.findOne({ _id: "x" })).qty);
  try { await client.db("admin").command({ createUser: "x", pwd: "y", roles: [] }); console.log("no error"); }
  catch (e) { console.log(e.codeName); }
  await client.close();
})().catch(e => { console.log("error " + e); process.exit(1); });
`
	file := filepath.Join(t.TempDir(), "app.js")
	os.WriteFile(file, []byte(script), 0o600)
	cmd := exec.Command(node, file, driver, strings.TrimPrefix(p.Addr(), "127.0.0.1:"))
	out, err := cmd.CombinedOutput()
	if got := strings.TrimSpace(string(out)); err != nil || got != "AuthenticationFailed\n1 4\nUnauthorized" {
		t.Fatalf("node: %v\n%s\nserver:\n%s", err, out, p.Output())
	}
}
