package storage

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// holdManifestLock takes the flock of dir's Dolt LOCK file, as another
// program (or a goroutine not run in time) would, and releases it after
// hold.
func holdManifestLock(t *testing.T, dir string, hold time.Duration) <-chan struct{} {
	t.Helper()
	released, err := tryHoldManifestLock(dir, hold)
	if err != nil {
		t.Fatal(err)
	}
	return released
}

func tryHoldManifestLock(dir string, hold time.Duration) (<-chan struct{}, error) {
	f, err := os.OpenFile(filepath.Join(dir, "LOCK"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	released := make(chan struct{})
	go func() {
		defer close(released)
		time.Sleep(hold)
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}()
	return released, nil
}

// TestManifestLockTimeoutsAreRetriedSafely: a checkpoint whose manifest
// lock is held past Dolt's 100 ms wait, more than once, still lands once
// the lock is free, and so do the checkpoints after it: the attempts that
// timed out release their own descriptors, not those of the attempts
// after them.
func TestManifestLockTimeoutsAreRetriedSafely(t *testing.T) {
	dir := t.TempDir()
	e := openEngine(t, dir, idleOpts)
	d := fillDatabase(t, e, "db", 1)
	if err := d.Checkpoint(ctx); err != nil { // writes the store, and LOCK
		t.Fatal(err)
	}
	released := holdManifestLock(t, d.dir, 250*time.Millisecond)
	writeDocs(t, d, 1, 2)
	if err := d.Checkpoint(ctx); err != nil {
		t.Fatalf("checkpoint while the lock was held for 250 ms: %v", err)
	}
	<-released
	for i := int32(2); i < 6; i++ {
		writeDocs(t, d, i, i+1)
		if err := d.Checkpoint(ctx); err != nil {
			t.Fatalf("checkpoint %d after the lock was released: %v", i, err)
		}
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	d, err := openClosing(t, dir, idleOpts).Database(ctx, "db", false)
	if err != nil {
		t.Fatal(err)
	}
	wantContents(t, d, 6)
}

// writeDocs inserts documents from to to (excluded) into d's collection c.
func writeDocs(t testing.TB, d *Database, from, to int32) {
	t.Helper()
	err := d.Write(ctx, func(tx *Tx) error {
		for i := from; i < to; i++ {
			if err := tx.Insert(ctx, "c", doc(i, fmt.Sprint("v", i))); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestManyDatabasesIdleAndCheckpointAtOnce: many databases written,
// checkpointed, closed for idleness and reopened all at once keep every
// acknowledged write, and no checkpoint fails, though now and then one's
// manifest lock is held past Dolt's wait for it.
func TestManyDatabasesIdleAndCheckpointAtOnce(t *testing.T) {
	dir := t.TempDir()
	e := openEngine(t, dir, Options{IdleDatabaseTimeout: time.Millisecond})
	const nDBs, workers, rounds = 200, 8, 60
	dbs := make([]*counted, nDBs)
	for i := range dbs {
		dbs[i] = &counted{name: fmt.Sprint("db", i)}
	}
	stop := make(chan struct{})
	holder := make(chan struct{})
	go func() {
		defer close(holder)
		holdLocksUntil(stop, dir, nDBs)
	}()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 2))
			for range rounds {
				if err := dbs[rng.IntN(nDBs)].writeAndCheckpoint(e); err != nil {
					t.Error(err)
					return
				}
				if rng.IntN(4) == 0 {
					e.closeIdleAll(later())
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	<-holder
	if t.Failed() {
		return
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e = openClosing(t, dir, idleOpts)
	for _, c := range dbs {
		if c.n == 0 {
			continue
		}
		d, err := e.Database(ctx, c.name, false)
		if err != nil {
			t.Fatal(err)
		}
		wantContents(t, d, c.n)
	}
}

// counted is a database whose collection c holds documents 0 to n-1.
type counted struct {
	name string
	mu   sync.Mutex // numbers the documents in the order they are written
	n    int32
}

// writeAndCheckpoint writes the database's next document, then
// checkpoints it beside the other workers' writes.
func (c *counted) writeAndCheckpoint(e *Engine) error {
	d, err := e.Database(ctx, c.name, true)
	if err != nil {
		return err
	}
	c.mu.Lock()
	err = d.Write(ctx, func(tx *Tx) error {
		if _, err := tx.EnsureCollection(ctx, "c"); err != nil {
			return err
		}
		return tx.Insert(ctx, "c", doc(c.n, fmt.Sprint("v", c.n)))
	})
	if err == nil {
		c.n++
	}
	c.mu.Unlock()
	if err != nil {
		return fmt.Errorf("%s: insert: %w", c.name, err)
	}
	if err := d.Checkpoint(ctx); err != nil {
		return fmt.Errorf("%s: checkpoint: %w", c.name, err)
	}
	return nil
}

// holdLocksUntil holds the manifest lock of a random database of the
// nDBs in dir for 150 ms, one after another, until stop is closed.
func holdLocksUntil(stop <-chan struct{}, dir string, nDBs int) {
	rng := rand.New(rand.NewPCG(7, 7))
	for {
		select {
		case <-stop:
			return
		case <-time.After(20 * time.Millisecond):
		}
		// A database not created yet has no directory: nothing to hold.
		if released, err := tryHoldManifestLock(filepath.Join(dir, fmt.Sprint("db", rng.IntN(nDBs))), 150*time.Millisecond); err == nil {
			<-released
		}
	}
}
