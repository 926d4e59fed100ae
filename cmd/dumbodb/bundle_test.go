package main

import (
	"context"
	"crypto/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dumbodb/dumbodb/internal/dumboproc"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

func bundleRun(t *testing.T, args ...string) (string, int) {
	t.Helper()
	out, err := exec.Command(dumboproc.Binary(t), append([]string{"bundle"}, args...)...).CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), code
}

func runVC(t *testing.T, db *mongo.Database, cmd bson.D) bson.M {
	t.Helper()
	var res bson.M
	if err := db.RunCommand(context.Background(), cmd).Decode(&res); err != nil {
		t.Fatalf("%v: %v", cmd, err)
	}
	return res
}

// heads maps each branch and tag of db to its commit id.
func heads(t *testing.T, db *mongo.Database) map[string]any {
	t.Helper()
	out := map[string]any{}
	field := func(d any, name string) any {
		for _, e := range d.(bson.D) {
			if e.Key == name {
				return e.Value
			}
		}
		return nil
	}
	for _, b := range runVC(t, db, bson.D{{Key: "dumboBranch", Value: 1}})["branches"].(bson.A) {
		out[field(b, "name").(string)] = field(b, "commitId")
	}
	for _, tag := range runVC(t, db, bson.D{{Key: "dumboTag", Value: 1}})["tags"].(bson.A) {
		out["tag "+field(tag, "name").(string)] = field(tag, "commitId")
	}
	return out
}

// TestBundleSubcommand: a database with branches, a tag and 12 MiB of
// incompressible documents goes to another server through a bundle file
// (several pieces each way) with every commit id kept; an incremental
// bundle then carries a later commit, much smaller; and a bundle that
// is no bundle is refused with the server's message.
func TestBundleSubcommand(t *testing.T) {
	ctx := context.Background()
	a := dumboproc.StartT(t, t.TempDir())
	b := dumboproc.StartT(t, t.TempDir())
	shop := client(t, a).Database("shop")
	var docs []any
	for i := range 1200 {
		blob := make([]byte, 10<<10)
		rand.Read(blob)
		docs = append(docs, bson.M{"_id": i, "blob": blob})
	}
	if _, err := shop.Collection("items").InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	runVC(t, shop, bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "load"}})
	runVC(t, shop, bson.D{{Key: "dumboBranch", Value: 1}, {Key: "branch", Value: "feature"}})
	runVC(t, shop, bson.D{{Key: "dumboTag", Value: "v1"}})

	dir := t.TempDir()
	full, inc := filepath.Join(dir, "shop.bundle"), filepath.Join(dir, "shop-2.bundle")
	if out, code := bundleRun(t, "create", "--uri", a.URL(), "--db", "shop", full); code != 0 || !strings.Contains(out, "full bundle of shop, 3 refs") {
		t.Fatalf("bundle create: exit %d: %s", code, out)
	}
	if out, code := bundleRun(t, "restore", "--uri", b.URL(), full); code != 0 {
		t.Fatalf("bundle restore: exit %d: %s", code, out)
	}
	copyShop := client(t, b).Database("shop")
	want, got := heads(t, shop), heads(t, copyShop)
	if len(got) != 3 || len(want) != 3 || got["main"] != want["main"] || got["feature"] != want["feature"] || got["tag v1"] != want["tag v1"] {
		t.Fatalf("restored refs %v, made %v", got, want)
	}
	if n, err := copyShop.Collection("items").CountDocuments(ctx, bson.M{}); err != nil || n != 1200 {
		t.Fatalf("restored documents: %d %v", n, err)
	}

	if _, err := shop.Collection("items").UpdateOne(ctx, bson.M{"_id": 7}, bson.M{"$set": bson.M{"seen": true}}); err != nil {
		t.Fatal(err)
	}
	runVC(t, shop, bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "mark"}})
	out, code := bundleRun(t, "create", "--uri", a.URL(), "--db", "shop", "--since", full, inc)
	if code != 0 || !strings.Contains(out, "incremental bundle of shop") {
		t.Fatalf("incremental bundle create: exit %d: %s", code, out)
	}
	if out, code := bundleRun(t, "restore", "--uri", b.URL(), "--db", "other", inc); code != 1 || !strings.Contains(out, "incremental bundle restores onto the database that holds its base") {
		t.Errorf("an incremental bundle into a new database: exit %d: %s", code, out)
	}
	if out, code := bundleRun(t, "restore", "--uri", b.URL(), inc); code != 0 || !strings.Contains(out, "1 refs moved") {
		t.Fatalf("incremental restore: exit %d: %s", code, out)
	}
	if heads(t, copyShop)["main"] != heads(t, shop)["main"] {
		t.Error("main did not move to the incremental bundle's commit")
	}
	var d bson.M
	if err := copyShop.Collection("items").FindOne(ctx, bson.M{"_id": 7}).Decode(&d); err != nil || d["seen"] != true {
		t.Errorf("document 7 after the incremental restore: %v %v", d["seen"], err)
	}

	data, err := os.ReadFile(full)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0xff
	damaged := writeFile(t, "damaged.bundle", string(data))
	if out, code := bundleRun(t, "restore", "--uri", b.URL(), "--db", "damaged", damaged); code != 1 || !strings.Contains(out, "(BadValue) not a valid bundle: chunk record") {
		t.Errorf("a damaged bundle: exit %d: %s", code, out)
	}
	if names, err := client(t, b).ListDatabaseNames(ctx, bson.M{"name": "damaged"}); err != nil || len(names) != 0 {
		t.Errorf("a damaged bundle left databases %v (%v)", names, err)
	}
	if out, code := bundleRun(t, "create", "--uri", a.URL(), full); code != 2 {
		t.Errorf("create without --db: exit %d: %s", code, out)
	}
}
