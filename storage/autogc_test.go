package storage

import (
	"fmt"
	"maps"
	"testing"
	"time"
)

// insertPadded inserts n documents, each with a value of pad digits,
// into coll in one write.
func insertPadded(t *testing.T, d *Database, coll string, n int32, pad int) {
	t.Helper()
	mustWrite(t, d, func(tx *Tx) error {
		if _, err := tx.EnsureCollection(ctx, coll); err != nil {
			return err
		}
		for i := range n {
			if err := tx.Insert(ctx, coll, doc(i, fmt.Sprintf("%0*d", pad, i))); err != nil {
				return err
			}
		}
		return nil
	})
}

// writeUntilStopped calls write with 0, 1, 2, ... on a goroutine of its
// own until the returned stop is called, which waits for it to end.
func writeUntilStopped(write func(i int32)) (stop func()) {
	done, ended := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ended)
		for i := int32(0); ; i++ {
			select {
			case <-done:
				return
			default:
				write(i)
			}
		}
	}()
	return func() { close(done); <-ended }
}

// awaitAutoGC returns once no automatic GC runs. A checkpoint that finds
// one due takes the engine's slot before it returns, so after it this
// waits for that GC.
func awaitAutoGC(e *Engine) {
	e.autoGC <- struct{}{}
	<-e.autoGC
}

// rewriteRounds rewrites a tenth of n documents of c with new values and
// checkpoints, rounds times, waiting for any automatic GC after each
// checkpoint. It returns the collection's expected contents.
func rewriteRounds(t *testing.T, d *Database, n, rounds int32) map[int32]string {
	t.Helper()
	model := map[int32]string{}
	write := func(from, count int32, round int32) {
		mustWrite(t, d, func(tx *Tx) error {
			if _, err := tx.EnsureCollection(ctx, "c"); err != nil {
				return err
			}
			for i := from; i < from+count; i++ {
				v := fmt.Sprintf("round %d %0100d", round, i)
				model[i%n] = v
				if err := tx.Replace(ctx, "c", doc(i%n, v)); err != nil {
					return err
				}
			}
			return nil
		})
	}
	write(0, n, 0)
	for r := range rounds {
		write(r*n/10, n/10, r+1)
		if err := d.Checkpoint(ctx); err != nil {
			t.Fatal(err)
		}
		awaitAutoGC(d.engine)
	}
	return model
}

// TestAutoGCCollectsWhatCheckpointsReplaced: a database whose documents
// are rewritten checkpoint after checkpoint is collected on its own, its
// store stays a fraction of what the same writes leave without automatic
// GC, and writers beside the GCs lose nothing.
func TestAutoGCCollectsWhatCheckpointsReplaced(t *testing.T) {
	const n, rounds = 4000, 40
	sizes := map[bool]int64{}
	for _, on := range []bool{false, true} {
		opts := Options{CheckpointInterval: time.Hour, AutoGCMinBytes: 256 << 10}
		if !on {
			opts.AutoGCMaxBytes = -1
		}
		d := openDatabase(t, opts)
		others := map[int32]string{}
		stop := writeUntilStopped(func(i int32) { // a writer beside the checkpoints and GCs
			v := fmt.Sprint("w", i)
			mustWrite(t, d, func(tx *Tx) error {
				if _, err := tx.EnsureCollection(ctx, "w"); err != nil {
					return err
				}
				return tx.Replace(ctx, "w", doc(i%500, v))
			})
			others[i%500] = v
		})
		model := rewriteRounds(t, d, n, rounds)
		stop()
		if got := contents(t, d, "c"); !maps.Equal(got, model) {
			t.Fatalf("auto GC %v: %d documents of c differ from the model's %d", on, len(got), len(model))
		}
		if got := contents(t, d, "w"); !maps.Equal(got, others) {
			t.Fatalf("auto GC %v: the writer's %d documents differ from its %d", on, len(got), len(others))
		}
		gcs := d.engine.DatabaseStats().AutoGCs
		if on != (gcs > 0) {
			t.Fatalf("auto GC %v: %d automatic GCs", on, gcs)
		}
		sizes[on] = d.storeSize()
		t.Logf("auto GC %v: %d automatic GCs, store %d bytes", on, gcs, sizes[on])
	}
	if sizes[true]*2 > sizes[false] {
		t.Fatalf("store with automatic GC %d bytes, without %d: want less than half", sizes[true], sizes[false])
	}
}

// TestAutoGCLeavesStoresOverTheLimit: a store larger than AutoGCMaxBytes
// is not collected on its own, however much it grew.
func TestAutoGCLeavesStoresOverTheLimit(t *testing.T) {
	d := openDatabase(t, Options{CheckpointInterval: time.Hour, AutoGCMinBytes: 64 << 10, AutoGCMaxBytes: 128 << 10})
	rewriteRounds(t, d, 4000, 10)
	if size := d.storeSize(); size <= 128<<10 {
		t.Fatalf("store of %d bytes: the test needs one over the limit", size)
	}
	if gcs := d.engine.DatabaseStats().AutoGCs; gcs != 0 {
		t.Fatalf("%d automatic GCs of a store over the limit", gcs)
	}
}

// TestAutoGCWaitsForTheStoreToDouble: growth past AutoGCMinBytes but
// under the size after the last GC does not collect.
func TestAutoGCWaitsForTheStoreToDouble(t *testing.T) {
	d := openDatabase(t, Options{CheckpointInterval: time.Hour, AutoGCMinBytes: 1})
	insertPadded(t, d, "big", 20_000, 200)
	if err := d.Checkpoint(ctx); err != nil { // notes the size
		t.Fatal(err)
	}
	awaitAutoGC(d.engine)
	base := d.gcBase.Load()
	rewriteRounds(t, d, 1000, 5)
	size := d.storeSize()
	if size <= base || size-base >= base {
		t.Fatalf("store %d bytes after the first checkpoint, %d after the rewrites: the test needs it grown, not doubled", base, size)
	}
	if gcs := d.engine.DatabaseStats().AutoGCs; gcs != 0 {
		t.Fatalf("%d automatic GCs of a store that grew from %d to %d bytes", gcs, base, size)
	}
}

// TestAutoGCAmongWritersKeepsWhatTheyWrite: a writer goes on between
// automatic GCs (waiting while each runs), creating collections (each a
// new empty map in the store, which no ref reaches until a checkpoint)
// and writing documents; everything it wrote reads back, before and after
// the engine reopens from disk, so no GC removed a chunk it held.
func TestAutoGCAmongWritersKeepsWhatTheyWrite(t *testing.T) {
	dir := t.TempDir()
	opts := Options{CheckpointInterval: time.Hour, AutoGCMinBytes: 64 << 10}
	e := openEngine(t, dir, opts)
	d, err := e.Database(ctx, "db", true)
	if err != nil {
		t.Fatal(err)
	}
	made := map[string]string{}
	stop := writeUntilStopped(func(i int32) { // creates a collection and writes into it
		name, v := fmt.Sprint("n", i), fmt.Sprint("v", i)
		mustWrite(t, d, func(tx *Tx) error {
			if _, err := tx.EnsureCollection(ctx, name); err != nil {
				return err
			}
			return tx.Insert(ctx, name, doc(i, v))
		})
		made[name] = v
	})
	model := rewriteRounds(t, d, 4000, 30)
	stop()
	gcs := d.engine.DatabaseStats().AutoGCs
	if gcs == 0 {
		t.Fatal("no automatic GC ran: the test needs some")
	}
	check := func(d *Database, when string) {
		t.Helper()
		if got := contents(t, d, "c"); !maps.Equal(got, model) {
			t.Fatalf("%s: %d documents of c differ from the model's %d", when, len(got), len(model))
		}
		for name, v := range made {
			var id int32
			fmt.Sscanf(name, "n%d", &id)
			if got := contents(t, d, name); len(got) != 1 || got[id] != v {
				t.Fatalf("%s: collection %s holds %v, want {%d: %s}", when, name, got, id, v)
			}
		}
	}
	check(d, "live")
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e = openEngine(t, dir, opts)
	defer e.Close()
	d, err = e.Database(ctx, "db", false)
	if err != nil {
		t.Fatal(err)
	}
	check(d, "reopened")
	t.Logf("%d automatic GCs among the writes of a writer that made %d collections", gcs, len(made))
}
