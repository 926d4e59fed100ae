package main

import (
	"context"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/dumbodb/dumbodb/internal/dumboproc"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// TestInspectSubcommand: `dumbodb inspect` refuses a directory a server
// runs on, and after the server is killed prints its databases, branches,
// collections, index maps and the log records the checkpoint had not
// taken, and its check finds no problem.
func TestInspectSubcommand(t *testing.T) {
	dir := t.TempDir()
	p := dumboproc.StartT(t, dir)
	db := client(t, p).Database("app")
	ctx := context.Background()
	if _, err := db.Collection("c").Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "v", Value: 1}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Collection("c").InsertMany(ctx, []any{bson.M{"_id": 1, "v": 1}, bson.M{"_id": 2, "v": 2}}); err != nil {
		t.Fatal(err)
	}
	if err := db.RunCommand(ctx, bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "two"}}).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Collection("c").InsertOne(ctx, bson.M{"_id": 3, "v": 3}); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(dumboproc.Binary(t), "inspect", dir).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "a server is running on it") {
		t.Fatalf("inspect beside a running server: %v\n%s", err, out)
	}
	p.StopT(t, syscall.SIGKILL)

	out, err = exec.Command(dumboproc.Binary(t), "inspect", "--check", dir).CombinedOutput()
	if err != nil {
		t.Fatalf("inspect --check: %v\n%s", err, out)
	}
	t.Logf("dumbodb inspect --check:\n%s", out)
	for _, want := range []string{
		"database app: table files",
		"branch main: head ",
		"working root version 2",
		"collection c: 2 documents",
		`index v_1 {"v":1}: 2 entries`,
		"branch main: put c x1",
		" 0 problems",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("inspect output lacks %q:\n%s", want, out)
		}
	}
}
