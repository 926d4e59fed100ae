package server_test

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/dumbodb/dumbodb/server"
	"github.com/dumbodb/dumbodb/storage"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestOutOfDiskSpaceReachesTheClient: on a full disk writes fail with
// MongoDB's OutOfDiskSpace (14031), reads go on and count only what was
// acknowledged, and writes work again once there is space.
func TestOutOfDiskSpaceReachesTheClient(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a small tmpfs to fill needs root")
	}
	disk := t.TempDir()
	if err := syscall.Mount("tmpfs", disk, "tmpfs", 0, "size=8m"); err != nil {
		t.Skipf("cannot mount a tmpfs to fill: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(disk, syscall.MNT_DETACH) })
	ts := &testServer{t: t, dir: filepath.Join(disk, "data"), opts: storage.Options{WALSegmentSize: 64 << 10},
		cfg: server.Config{BindIPs: []string{"127.0.0.1"}}}
	ts.start()
	t.Cleanup(ts.stop)
	db := ts.client().Database("db")
	coll := db.Collection("c")
	pad := string(make([]byte, 1000))
	acked := int64(0)
	insert := func(id int) error {
		_, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "pad", Value: pad}})
		if err == nil {
			acked++
		}
		return err
	}
	if err := insert(0); err != nil {
		t.Fatal(err)
	}
	filler := fillFile(t, filepath.Join(disk, "filler"))
	var err error
	for id := 1; err == nil; id++ {
		if id > 5000 {
			t.Fatal("inserts to a full disk never failed")
		}
		err = insert(id)
	}
	// The batch is one transaction that could not be logged: the command
	// fails, as a whole.
	wantCode(t, err, 14031, "OutOfDiskSpace")
	_, err = run(t, db, bson.D{{Key: "create", Value: "other"}})
	wantCode(t, err, 14031, "OutOfDiskSpace")
	if n, err := coll.CountDocuments(ctx, bson.D{}); err != nil || n != acked {
		t.Fatalf("count on a full disk: %d, %v; acknowledged %d", n, err, acked)
	}
	os.Remove(filler)
	if err := insert(-1); err != nil {
		t.Fatalf("insert with space back: %v", err)
	}
	if n, err := coll.CountDocuments(ctx, bson.D{}); err != nil || n != acked {
		t.Fatalf("count with space back: %d, %v; acknowledged %d", n, err, acked)
	}
}

// fillFile writes path until the disk is full and returns it.
func fillFile(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for buf := make([]byte, 1<<20); len(buf) > 0; {
		if _, err := f.Write(buf); errors.Is(err, syscall.ENOSPC) {
			buf = buf[:len(buf)/2]
		} else if err != nil {
			t.Fatal(err)
		}
	}
	return path
}
