package storage

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// smallDisk mounts an 8 MiB tmpfs for the test, so that it can fill it.
func smallDisk(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a small tmpfs to fill needs root")
	}
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=8m"); err != nil {
		t.Skipf("cannot mount a tmpfs to fill: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	return dir
}

// fillDisk writes a file until the disk is full, then gives leave bytes
// back; it returns the file's path.
func fillDisk(t *testing.T, disk string, leave int64) string {
	t.Helper()
	path := filepath.Join(disk, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	for len(buf) > 0 {
		if _, err := f.Write(buf); errors.Is(err, syscall.ENOSPC) {
			buf = buf[:len(buf)/2]
		} else if err != nil {
			t.Fatal(err)
		}
	}
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(max(0, st.Size()-leave)); err != nil {
		t.Fatal(err)
	}
	return path
}

// diskOpts are small log segments, so that writes soon need a new one,
// and no periodic checkpoints.
var diskOpts = Options{WALSegmentSize: 64 << 10, CheckpointInterval: time.Hour}

// randomPad is n bytes that do not compress.
func randomPad(n int) string {
	b := make([]byte, n/2)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func insertDoc(d *Database, wctx context.Context, id int32) error {
	return d.Write(wctx, func(tx *Tx) error {
		if _, err := tx.EnsureCollection(wctx, "c"); err != nil {
			return err
		}
		return tx.Insert(wctx, "c", docKV(id, "v", randomPad(1000)))
	})
}

// checkExactly fails unless the collection holds exactly the ids in want.
func checkExactly(t *testing.T, d *Database, want map[int32]bool) {
	t.Helper()
	got := contents(t, d, "c")
	if n, _ := mainSnapshot(t, d).Count("c"); n != len(want) || len(got) != len(want) {
		t.Fatalf("count %d, scan %d, acknowledged %d", n, len(got), len(want))
	}
	for id := range want {
		if _, ok := got[id]; !ok {
			t.Fatalf("acknowledged document %d is missing", id)
		}
	}
}

func notVisible(t *testing.T, d *Database, id int32) {
	t.Helper()
	if _, found, err := mainSnapshot(t, d).Get(ctx, "c", idValue(id)); err != nil || found {
		t.Errorf("document %d of a failed write: found %v, err %v", id, found, err)
	}
}

// TestFullDiskFailsWritesUntilSpaceIsBack: on a full disk writes fail with
// ErrOutOfDiskSpace and nothing of them is visible, even to writers that
// built on them in the same group commit; reads go on; once there is space
// writes work again without a restart, and a reopen (after a crash or a
// clean shutdown) holds exactly the acknowledged documents.
func TestFullDiskFailsWritesUntilSpaceIsBack(t *testing.T) {
	disk := smallDisk(t)
	dir := filepath.Join(disk, "data")
	e := openEngine(t, dir, diskOpts)
	d, _ := e.Database(ctx, "db", true)
	var mu sync.Mutex
	acked := map[int32]bool{}
	var next atomic.Int32
	for range 50 {
		id := next.Add(1)
		if err := insertDoc(d, ctx, id); err != nil {
			t.Fatal(err)
		}
		acked[id] = true
	}
	filler := fillDisk(t, disk, 0)

	// Writers in parallel, so that records of several share the sync that
	// fails, each published on top of the others.
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for failed := 0; failed < 3; {
				id := next.Add(1)
				if id > 20000 {
					t.Error("writes to a full disk never failed")
					return
				}
				switch err := insertDoc(d, ctx, id); {
				case err == nil:
					mu.Lock()
					acked[id] = true
					mu.Unlock()
				case errors.Is(err, ErrOutOfDiskSpace):
					failed++
					notVisible(t, d, id)
				default:
					t.Errorf("write %d: %v, want ErrOutOfDiskSpace", id, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	checkExactly(t, d, acked)

	// Writes that do not wait for the log (w: 0) publish on top of each
	// other; the sync that fails under a waiting write loses them all. (The
	// background sync may fail first: then the second one already fails.)
	a, b, c := next.Add(1), next.Add(1), next.Add(1)
	for _, id := range []int32{a, b} {
		if err := insertDoc(d, NoSync(ctx), id); err != nil && !errors.Is(err, ErrOutOfDiskSpace) {
			t.Fatalf("unsynced write %d: %v", id, err)
		}
	}
	if err := insertDoc(d, ctx, c); !errors.Is(err, ErrOutOfDiskSpace) {
		t.Fatalf("write on top of unsynced ones: %v, want ErrOutOfDiskSpace", err)
	}
	for _, id := range []int32{a, b, c} {
		notVisible(t, d, id)
	}
	checkExactly(t, d, acked)

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	for range 200 { // several new log segments
		id := next.Add(1)
		if err := insertDoc(d, ctx, id); err != nil {
			t.Fatalf("write %d with space back: %v", id, err)
		}
		acked[id] = true
	}
	checkExactly(t, d, acked)

	crashed := openEngine(t, crashCopy(t, dir), diskOpts)
	cd, _ := crashed.Database(ctx, "db", false)
	checkExactly(t, cd, acked)
	crashed.Close()
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e = openEngine(t, dir, diskOpts)
	defer e.Close()
	d, _ = e.Database(ctx, "db", false)
	checkExactly(t, d, acked)
}

// dbFiles lists a database directory's files, the log aside.
func dbFiles(t *testing.T, d *Database) []string {
	t.Helper()
	names, err := d.dirNames()
	if err != nil {
		t.Fatal(err)
	}
	delete(names, "wal")
	return slices.Sorted(maps.Keys(names))
}

// loadDocs inserts n documents that do not compress and checkpoints them.
func loadDocs(t *testing.T, d *Database, n int32) map[int32]bool {
	t.Helper()
	ids := map[int32]bool{}
	for id := range n {
		if err := insertDoc(d, NoSync(ctx), id); err != nil {
			t.Fatal(err)
		}
		ids[id] = true
	}
	if err := d.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	return ids
}

// TestGCOnFullDiskLeavesNothingBehind: a GC without room for what it
// writes fails with ErrOutOfDiskSpace and removes it, whether it failed
// writing its new table file or the manifest after it; the database stays
// as it was and usable.
func TestGCOnFullDiskLeavesNothingBehind(t *testing.T) {
	disk := smallDisk(t)
	e := openEngine(t, filepath.Join(disk, "data"), diskOpts)
	defer e.Close()
	d, _ := e.Database(ctx, "db", true)
	ids := loadDocs(t, d, 1000)
	// A first GC tells the size of the table file the next one writes.
	if _, _, err := d.GC(ctx); err != nil {
		t.Fatal(err)
	}
	size := tableFileBytes(t, d)
	ids[1000] = true
	if err := insertDoc(d, ctx, 1000); err != nil { // something to collect
		t.Fatal(err)
	}
	if err := d.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	before := dbFiles(t, d)
	// Far too little room, then page by page up to enough: on the way, the
	// table file fits but the manifest does not.
	leaves := []int64{256 << 10}
	for leave := size - 16<<10; leave < size+64<<10; leave += 4 << 10 {
		leaves = append(leaves, leave)
	}
	var failedTable, failedManifest bool
	for i, leave := range leaves {
		filler := fillDisk(t, disk, leave)
		_, _, err := d.GC(ctx)
		os.Remove(filler)
		if err == nil {
			break
		}
		if i == len(leaves)-1 || !errors.Is(err, ErrOutOfDiskSpace) {
			t.Fatalf("GC with %d bytes free: %v", leave, err)
		}
		// The error names the file it could not write.
		if strings.Contains(err.Error(), doltTableTempPrefix) {
			failedTable = true
		} else {
			failedManifest = true
		}
		if got := dbFiles(t, d); !slices.Equal(got, before) {
			t.Fatalf("GC with %d bytes free failed (%v) and left %v, had %v", leave, err, got, before)
		}
		checkExactly(t, d, ids)
	}
	if !failedTable || !failedManifest {
		t.Fatalf("GC failed writing its table file: %v, writing the manifest: %v; want both", failedTable, failedManifest)
	}
	checkExactly(t, d, ids)
	if err := insertDoc(d, ctx, 1001); err != nil {
		t.Fatal(err)
	}
}

// tableFileBytes is the size of a database's table files.
func tableFileBytes(t *testing.T, d *Database) int64 {
	t.Helper()
	var n int64
	for _, name := range dbFiles(t, d) {
		if isTableFileName(name) {
			st, err := os.Stat(filepath.Join(d.dir, name))
			if err != nil {
				t.Fatal(err)
			}
			n += st.Size()
		}
	}
	return n
}

// TestCheckpointOnFullDiskLeavesNothingBehind: checkpoints on a full disk
// fail with ErrOutOfDiskSpace and leave no file of theirs behind; the
// edits stay in memory and in the log, and once there is room a checkpoint
// writes them.
func TestCheckpointOnFullDiskLeavesNothingBehind(t *testing.T) {
	disk := smallDisk(t)
	dir := filepath.Join(disk, "data")
	e := openEngine(t, dir, diskOpts)
	d, _ := e.Database(ctx, "db", true)
	ids := loadDocs(t, d, 300)
	// After a GC Dolt has no journal: the next checkpoint makes one and
	// writes the manifest, which on a full disk fails in more ways.
	if _, _, err := d.GC(ctx); err != nil {
		t.Fatal(err)
	}
	for id := int32(300); id < 320; id++ {
		if err := insertDoc(d, ctx, id); err != nil {
			t.Fatal(err)
		}
		ids[id] = true
	}
	filler := fillDisk(t, disk, 0)
	// Dolt's journal, made by the first attempt, is in use: it may stay.
	allowed := append(dbFiles(t, d), doltJournalName, "journal.idx")
	for i := range 3 {
		if err := d.Checkpoint(ctx); !errors.Is(err, ErrOutOfDiskSpace) {
			t.Fatalf("checkpoint %d on a full disk: %v, want ErrOutOfDiskSpace", i, err)
		}
		for _, f := range dbFiles(t, d) {
			if !slices.Contains(allowed, f) {
				t.Fatalf("checkpoint %d failed and left %s", i, f)
			}
		}
		checkExactly(t, d, ids)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if err := d.Checkpoint(ctx); err != nil {
		t.Fatalf("checkpoint with space back: %v", err)
	}
	if st := d.loadedBranch(DefaultBranch).state.Load(); !st.checkpointed {
		t.Fatal("the checkpoint with space back did not write the edits")
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e = openEngine(t, dir, diskOpts)
	defer e.Close()
	d, _ = e.Database(ctx, "db", false)
	checkExactly(t, d, ids)
}

// TestCreationOnAFullDisk: with no room for a new database's files, a
// creation fails with ErrOutOfDiskSpace and leaves no database, while a
// spare made before still makes one, whose writes fail until there is
// room and then work.
func TestCreationOnAFullDisk(t *testing.T) {
	disk := smallDisk(t)
	dir := filepath.Join(disk, "data")
	e := openClosing(t, dir, diskOpts)
	fillDatabase(t, e, "first", 1)
	e.spares.wait()
	filler := fillDisk(t, disk, 0)
	for i := range spareDatabases {
		if _, err := e.Database(ctx, fmt.Sprint("spare", i), true); err != nil {
			t.Fatalf("creating from a spare on a full disk: %v", err)
		}
	}
	e.spares.wait()
	if _, err := e.Database(ctx, "none", true); !errors.Is(err, ErrOutOfDiskSpace) {
		t.Fatalf("creating with no spare on a full disk: %v, want ErrOutOfDiskSpace", err)
	}
	if names, _ := e.DatabaseNames(); slices.Contains(names, "none") {
		t.Fatalf("a failed creation left a database: %v", names)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	d := fillDatabase(t, e, "spare0", 2)
	wantContents(t, d, 2)
	d = fillDatabase(t, e, "none", 2)
	wantContents(t, d, 2)
}

// TestAutoGCOnFullDiskWaitsForTheNextDoubling: an automatic GC that fails
// for want of room counts growth from the store's size at the failure, so
// the checkpoints after it do not try again until the store doubles; the
// documents stay as they were.
func TestAutoGCOnFullDiskWaitsForTheNextDoubling(t *testing.T) {
	disk := smallDisk(t)
	opts := diskOpts
	opts.AutoGCMinBytes = 1
	e := openEngine(t, filepath.Join(disk, "data"), opts)
	defer e.Close()
	d, _ := e.Database(ctx, "db", true)
	ids := loadDocs(t, d, 1000) // 1 MB that does not compress
	awaitAutoGC(e)
	d.gcBase.Store(1)                    // any growth is due: the next checkpoint collects
	filler := fillDisk(t, disk, 256<<10) // room for a checkpoint, not for a GC's copy
	defer os.Remove(filler)
	for round := range int32(3) {
		id := 1000 + round
		if err := insertDoc(d, ctx, id); err != nil {
			t.Fatal(err)
		}
		ids[id] = true
		if err := d.Checkpoint(ctx); err != nil {
			t.Fatal(err)
		}
		awaitAutoGC(e)
		if base, size := d.gcBase.Load(), d.storeSize(); round == 0 && base != size {
			t.Fatalf("after the failed automatic GC the base is %d, the store %d bytes", base, size)
		} else if round > 0 && base == size {
			t.Fatalf("checkpoint %d: the automatic GC was tried again before the store doubled", round)
		}
	}
	if gcs := e.DatabaseStats().AutoGCs; gcs != 0 {
		t.Fatalf("%d automatic GCs succeeded on a full disk", gcs)
	}
	checkExactly(t, d, ids)
}
