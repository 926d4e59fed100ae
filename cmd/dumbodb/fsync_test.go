package main

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/dumbodb/dumbodb/internal/dumboproc"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// copyDataDir copies a data directory file by file, as cp -a would.
func copyDataDir(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(path string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, path)
		if de.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func runAdmin(t *testing.T, c *mongo.Client, cmd bson.D) bson.M {
	t.Helper()
	var out bson.M
	if err := c.Database("admin").RunCommand(context.Background(), cmd).Decode(&out); err != nil {
		t.Fatalf("%v: %v", cmd, err)
	}
	return out
}

// TestFsyncLockBackup is the README's whole-directory backup: fsyncLock,
// copy the data directory, fsyncUnlock. Writes wait while it is locked,
// reads go on, locks nest, and the copy starts as a server of its own
// with what was written before the lock and nothing after it.
func TestFsyncLockBackup(t *testing.T) {
	dir := t.TempDir()
	p := dumboproc.StartT(t, dir)
	c := client(t, p)
	ctx := context.Background()
	orders, logs := c.Database("shop").Collection("orders"), c.Database("ops").Collection("logs")
	for i := range 50 {
		if _, err := orders.InsertOne(ctx, bson.M{"_id": i, "v": "before"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := logs.InsertOne(ctx, bson.M{"_id": "started"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Database("shop").RunCommand(ctx, bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "fifty"}}).Err(); err != nil {
		t.Fatal(err)
	}

	if got := runAdmin(t, c, bson.D{{Key: "fsync", Value: 1}}); got["numFiles"] != int32(1) {
		t.Fatalf("fsync: %v", got)
	}
	got := runAdmin(t, c, bson.D{{Key: "fsync", Value: 1}, {Key: "lock", Value: true}})
	if got["lockCount"] != int64(1) || !strings.Contains(got["info"].(string), "now locked against writes") {
		t.Fatalf("fsync lock: %v", got)
	}
	if got := runAdmin(t, c, bson.D{{Key: "fsync", Value: 1}, {Key: "lock", Value: true}}); got["lockCount"] != int64(2) {
		t.Fatalf("a second lock: %v", got)
	}
	wrote := make(chan error, 3)
	go func() {
		_, err := orders.InsertOne(ctx, bson.M{"_id": "late", "v": "during"})
		wrote <- err
	}()
	// Files written outside the storage engine wait too: the users file,
	// the settings file.
	go func() {
		wrote <- c.Database("shop").RunCommand(ctx, bson.D{{Key: "createUser", Value: "late"},
			{Key: "pwd", Value: "secret"}, {Key: "roles", Value: bson.A{}}}).Err()
	}()
	go func() {
		wrote <- c.Database("admin").RunCommand(ctx, bson.D{{Key: "setDefaultRWConcern", Value: 1},
			{Key: "defaultReadConcern", Value: bson.M{"level": "majority"}}}).Err()
	}()
	// A write with a time limit gives up at it (a client of no time limit
	// of its own, which would add a second maxTimeMS).
	plain, err := mongo.Connect(options.Client().ApplyURI(p.URL()))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Disconnect(ctx)
	limited := plain.Database("ops").RunCommand(ctx, bson.D{{Key: "insert", Value: "logs"},
		{Key: "documents", Value: bson.A{bson.M{"_id": "limited"}}}, {Key: "maxTimeMS", Value: 200}}).Err()
	var ce mongo.CommandError
	if !errors.As(limited, &ce) || ce.Code != 50 {
		t.Fatalf("a write with maxTimeMS while locked: %v", limited)
	}
	if got := runAdmin(t, c, bson.D{{Key: "currentOp", Value: 1}}); got["fsyncLock"] != true {
		t.Fatalf("currentOp while locked: %v", got)
	}
	if n, err := orders.CountDocuments(ctx, bson.M{}); err != nil || n != 50 {
		t.Fatalf("a read while locked: %d %v", n, err)
	}
	copied := t.TempDir()
	copyDataDir(t, dir, copied)
	if got := runAdmin(t, c, bson.D{{Key: "fsyncUnlock", Value: 1}}); got["lockCount"] != int64(1) || got["info"] != "fsyncUnlock completed" {
		t.Fatalf("fsyncUnlock: %v", got)
	}
	select {
	case err := <-wrote:
		t.Fatalf("a write went through while still locked once: %v", err)
	default:
	}
	runAdmin(t, c, bson.D{{Key: "fsyncUnlock", Value: 1}})
	for range 3 {
		if err := <-wrote; err != nil {
			t.Fatalf("a write waiting for the unlock: %v", err)
		}
	}
	err = c.Database("admin").RunCommand(ctx, bson.D{{Key: "fsyncUnlock", Value: 1}}).Err()
	if !errors.As(err, &ce) || ce.Code != 20 || ce.Message != "fsyncUnlock called when not locked" {
		t.Fatalf("fsyncUnlock when not locked: %v", err)
	}

	backup := dumboproc.StartT(t, copied)
	bc, err := mongo.Connect(options.Client().ApplyURI(backup.URL()))
	if err != nil {
		t.Fatal(err)
	}
	defer bc.Disconnect(ctx)
	if n, err := bc.Database("shop").Collection("orders").CountDocuments(ctx, bson.M{"v": "before"}); err != nil || n != 50 {
		t.Fatalf("the copy's orders: %d %v", n, err)
	}
	if n, _ := bc.Database("shop").Collection("orders").CountDocuments(ctx, bson.M{"_id": "late"}); n != 0 {
		t.Fatal("the copy holds a write made after the lock")
	}
	var users bson.M
	if err := bc.Database("shop").RunCommand(ctx, bson.D{{Key: "usersInfo", Value: 1}}).Decode(&users); err != nil || len(users["users"].(bson.A)) != 0 {
		t.Fatalf("the copy's users: %v %v", users, err)
	}
	if n, err := bc.Database("ops").Collection("logs").CountDocuments(ctx, bson.M{}); err != nil || n != 1 {
		t.Fatalf("the copy's other database: %d %v", n, err)
	}
	var log struct{ Commits []struct{ Message string } }
	if err := bc.Database("shop").RunCommand(ctx, bson.D{{Key: "dumboLog", Value: 1}}).Decode(&log); err != nil ||
		len(log.Commits) != 2 || log.Commits[0].Message != "fifty" {
		t.Fatalf("the copy's history: %v %v", log, err)
	}
	if code := backup.StopT(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("the copy's server exited %d", code)
	}
	for _, line := range strings.Split(backup.Output(), "\n") {
		if strings.Contains(line, `"s":"E"`) || strings.Contains(line, `"s":"F"`) || strings.Contains(line, `"s":"W"`) {
			t.Errorf("the copy's server logged: %s", line)
		}
	}
}
