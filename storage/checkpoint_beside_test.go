package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"runtime"
	"sort"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/index"
)

// holdFolds makes checkpoint folds wait at their "checkpoint.fold" step
// until release is called; held is closed when the first one waits there.
// Later folds, and every fold after release, pass.
func holdFolds(t *testing.T, e *Engine) (held <-chan struct{}, release func()) {
	t.Helper()
	heldCh, releaseCh := make(chan struct{}), make(chan struct{})
	var once, releaseOnce sync.Once
	e.panics.mu.Lock()
	e.panics.hook = func(step string) {
		if step == "checkpoint.fold" {
			once.Do(func() { close(heldCh); <-releaseCh })
		}
	}
	e.panics.mu.Unlock()
	e.panics.armed.Store(true)
	release = func() {
		releaseOnce.Do(func() {
			close(releaseCh)
			e.panics.mu.Lock()
			e.panics.hook = nil
			e.panics.mu.Unlock()
			e.panics.armed.Store(false)
		})
	}
	t.Cleanup(release)
	return heldCh, release
}

// await waits for a result that must come; the bound only keeps a broken
// build from hanging the test run, it is not a measure of speed.
func await[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(2 * time.Minute):
		t.Fatalf("%s never came", what)
		panic("unreachable")
	}
}

// checkpointAsync runs d.Checkpoint on a goroutine of its own.
func checkpointAsync(d *Database) <-chan error {
	done := make(chan error, 1)
	go func() { done <- d.Checkpoint(ctx) }()
	return done
}

// ckModel is what collections "a" and "b" hold: _id -> v.
type ckModel map[string]map[int32]string

var vIndex = []bsoncore.Document{indexSpec("v_1", false, "v")}

// createIndexed creates the collections of model, each with the index v_1.
func createIndexed(t *testing.T, d *Database, m ckModel) {
	t.Helper()
	for c := range m {
		mustWrite(t, d, func(tx *Tx) error {
			if _, err := tx.EnsureCollection(ctx, c); err != nil {
				return err
			}
			return tx.SetIndexes(ctx, c, vIndex)
		})
	}
}

// checkCkModel compares d's main branch with the model: documents, counts,
// the entries of every collection's index v_1 (in the index's order), and
// the edit budget's count of what the branch holds.
func checkCkModel(t *testing.T, d *Database, m ckModel, when string) {
	t.Helper()
	snap := mainSnapshot(t, d)
	for c, want := range m {
		got := map[int32]string{}
		for id, doc := range scanDocs(t, snap, c) {
			got[id] = doc.Lookup("v").StringValue()
		}
		if len(got) != len(want) {
			t.Fatalf("%s: %s has %d documents, the model %d", when, c, len(got), len(want))
		}
		for id, v := range want {
			if got[id] != v {
				t.Fatalf("%s: %s _id %d = %q, want %q", when, c, id, got[id], v)
			}
			doc, found, err := snap.Get(ctx, c, idValue(id))
			if err != nil || !found || doc.Lookup("v").StringValue() != v {
				t.Fatalf("%s: get %s %d: %v %v", when, c, id, found, err)
			}
		}
		if n, _ := snap.Count(c); n != len(want) {
			t.Fatalf("%s: count of %s %d, want %d", when, c, n, len(want))
		}
		checkVIndex(t, snap, c, want, when)
	}
	checkEditAccounts(t, d, when)
}

// checkVIndex checks that index v_1 holds one entry per document, in
// (v, _id) order.
func checkVIndex(t *testing.T, snap *Snapshot, coll string, want map[int32]string, when string) {
	t.Helper()
	ids := make([]int32, 0, len(want))
	for id := range want {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool {
		if want[ids[i]] != want[ids[j]] {
			return want[ids[i]] < want[ids[j]]
		}
		return ids[i] < ids[j]
	})
	it, err := snap.IndexScan(ctx, coll, "v_1", index.Interval{Start: []byte{1}, Stop: []byte{0xFF, 0xFF}})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		_, idKey, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			if i != len(ids) {
				t.Fatalf("%s: index of %s has %d entries, want %d", when, coll, i, len(ids))
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if i >= len(ids) || !bytes.Equal(idKey, index.EncodeKey(nil, idValue(ids[i]))) {
			t.Fatalf("%s: index of %s, entry %d: _id key %x, want _id %v", when, coll, i, idKey, ids[min(i, len(ids)-1)])
		}
	}
}

// checkEditAccounts checks that the edit budget counts exactly what the
// database's only branch holds, every layer of its edit sets included.
func checkEditAccounts(t *testing.T, d *Database, when string) {
	t.Helper()
	b := d.loadedBranch(DefaultBranch)
	b.writeMu.Lock()
	defer b.writeMu.Unlock()
	st := b.state.Load()
	if got, want := d.engine.editBytes.Load(), st.editBytes(); got != want {
		t.Fatalf("%s: the budget counts %d bytes of edits, the state holds %d", when, got, want)
	}
	for name, c := range st.colls.all() {
		var held int64
		count := func(e *edit) { held += editSize(e) }
		if c.edits != nil {
			c.edits.eachHeld(count)
		}
		for _, ix := range c.indexes {
			if ix.edits != nil {
				ix.edits.eachHeld(count)
			}
		}
		if held != c.editBytes {
			t.Fatalf("%s: %s holds %d bytes of edits, counted %d", when, name, held, c.editBytes)
		}
	}
}

// ckWriter makes random changes to the model's collections, on the keys
// every writer shares, until stop is closed.
func ckWriter(t *testing.T, d *Database, seed int64, m ckModel, pause *sync.RWMutex, stop <-chan struct{}, errs chan<- error) {
	rng := rand.New(rand.NewSource(seed))
	colls := []string{"a", "b"}
	for step := 0; ; step++ {
		select {
		case <-stop:
			errs <- nil
			return
		default:
		}
		c, id := colls[rng.Intn(2)], int32(rng.Intn(120))
		v := fmt.Sprintf("w%d-%d-%d", seed, step, rng.Intn(5)) // few distinct prefixes: index keys collide
		op := rng.Intn(10)
		pause.RLock()
		err := d.Write(ctx, func(tx *Tx) error {
			// Under the branch's writer lock: the model changes in commit order.
			_, exists := m[c][id]
			switch {
			case op < 4:
				err := tx.Insert(ctx, c, doc(id, v))
				switch {
				case exists && errors.Is(err, ErrDuplicateKey):
					return nil
				case err != nil || exists:
					return fmt.Errorf("insert %s %d (exists %v): %v", c, id, exists, err)
				}
				m[c][id] = v
			case op < 7:
				if !exists {
					return nil
				}
				if err := tx.Replace(ctx, c, doc(id, v)); err != nil {
					return err
				}
				m[c][id] = v
			default:
				if err := tx.Delete(ctx, c, idValue(id)); err != nil {
					return err
				}
				delete(m[c], id)
			}
			return nil
		})
		pause.RUnlock()
		if err != nil {
			errs <- err
			return
		}
	}
}

// TestCheckpointsBesideWritersMatchAModel: writers change two indexed
// collections (inserts, replaces, deletes, often of the same keys) while
// checkpoints run beside them, forced by a small edit budget and run in a
// loop; after each checkpoint, at the end, after a crash and after a
// clean reopen, the documents, counts and index entries are the model's.
func TestCheckpointsBesideWritersMatchAModel(t *testing.T) {
	dir := t.TempDir()
	opts := Options{CacheBytes: 48 << 10, WALSegmentSize: 32 << 10}
	e := openEngine(t, dir, opts)
	defer func() { e.Close() }()
	d, _ := e.Database(ctx, "db", true)
	m := ckModel{"a": {}, "b": {}}
	createIndexed(t, d, m)

	var pause sync.RWMutex // a check stops the writers
	stop, errs := make(chan struct{}), make(chan error, 4)
	for w := range 4 {
		go ckWriter(t, d, int64(w+1), m, &pause, stop, errs)
	}
	for round := range 12 {
		if err := d.Checkpoint(ctx); err != nil {
			t.Fatal(err)
		}
		pause.Lock()
		checkCkModel(t, d, m, fmt.Sprintf("after checkpoint %d", round))
		pause.Unlock()
	}
	close(stop)
	for range 4 {
		if err := await(t, errs, "a writer's end"); err != nil {
			t.Fatal(err)
		}
	}
	checkCkModel(t, d, m, "at the end")

	// A fold held while more writes come: the branch is rebased on the
	// folded maps with the later writes as edits (unless the budget's
	// checkpoint, which they may start, folds those too).
	// A write first: a budget checkpoint after the writers' last writes
	// may have folded them all, and a checkpoint of a folded state has
	// nothing to fold (the test waited for its fold in vain). If a budget
	// checkpoint folds this write, its fold is the one held.
	held, release := holdFolds(t, e)
	mustWrite(t, d, func(tx *Tx) error { return tx.Insert(ctx, "a", doc(200, "late")) })
	m["a"][200] = "late"
	done := checkpointAsync(d)
	await(t, held, "the fold")
	for id := int32(201); id < 260; id++ {
		mustWrite(t, d, func(tx *Tx) error { return tx.Insert(ctx, "a", doc(id, "late")) })
		m["a"][id] = "late"
	}
	mustWrite(t, d, func(tx *Tx) error { return tx.Delete(ctx, "b", idValue(firstID(m["b"]))) })
	delete(m["b"], firstID(m["b"]))
	release()
	if err := await(t, done, "the checkpoint"); err != nil {
		t.Fatal(err)
	}
	checkCkModel(t, d, m, "after a fold beside writes")

	// The copy is not atomic, as a crash is: the budget's checkpoint,
	// which the late writes may have started, must not write table files
	// while it is made. A few writes after it leave the log something to
	// replay.
	awaitBudgetCheckpoint(d)
	for id := int32(300); id < 305; id++ {
		mustWrite(t, d, func(tx *Tx) error { return tx.Insert(ctx, "b", doc(id, "last")) })
		m["b"][id] = "last"
	}
	awaitBudgetCheckpoint(d)
	crashed := crashCopy(t, dir)
	e2 := openEngine(t, crashed, opts)
	d2, _ := e2.Database(ctx, "db", false)
	checkCkModel(t, d2, m, "after a crash")
	e2.Close()

	e.Close()
	e = openEngine(t, dir, opts)
	d, _ = e.Database(ctx, "db", false)
	checkCkModel(t, d, m, "after a clean reopen")
}

func firstID(docs map[int32]string) int32 {
	first := int32(1 << 30)
	for id := range docs {
		first = min(first, id)
	}
	return first
}

// TestWriterIsNotBlockedByAFold: while a checkpoint's fold is held, writes
// to the branch complete; the checkpoint then swaps its fold in under
// them.
func TestWriterIsNotBlockedByAFold(t *testing.T) {
	dir := t.TempDir()
	e := openEngine(t, dir, Options{})
	defer e.Close()
	d, _ := e.Database(ctx, "db", true)
	m := ckModel{"a": {}}
	createIndexed(t, d, m)
	for id := range int32(100) {
		mustWrite(t, d, func(tx *Tx) error { return tx.Insert(ctx, "a", doc(id, "before")) })
		m["a"][id] = "before"
	}
	held, release := holdFolds(t, d.engine)
	done := checkpointAsync(d)
	await(t, held, "the fold")
	b := d.loadedBranch(DefaultBranch)
	frozenLSN := b.state.Load().lsn

	wrote := make(chan error, 1)
	go func() {
		wrote <- d.Write(ctx, func(tx *Tx) error {
			if err := tx.Replace(ctx, "a", doc(7, "during")); err != nil {
				return err
			}
			return tx.Insert(ctx, "a", doc(1000, "during"))
		})
	}()
	if err := await(t, wrote, "the write during the fold"); err != nil {
		t.Fatal(err)
	}
	m["a"][7], m["a"][1000] = "during", "during"
	select {
	case err := <-done:
		t.Fatalf("the checkpoint ended (%v) while its fold was held", err)
	default:
	}
	checkCkModel(t, d, m, "during the fold")
	release()
	if err := await(t, done, "the checkpoint"); err != nil {
		t.Fatal(err)
	}
	st := b.state.Load()
	if st.ckptLSN != frozenLSN || st.checkpointed {
		t.Fatalf("checkpoint LSN %d (checkpointed %v), want %d with edits after it", st.ckptLSN, st.checkpointed, frozenLSN)
	}
	a := st.colls.get("a")
	if frozenOf(a.edits) != nil || countEdits(a.edits) != 2 {
		t.Fatalf("rebased edits: frozen layer %v, %d edits, want the write's 2", frozenOf(a.edits) != nil, countEdits(a.edits))
	}
	checkCkModel(t, d, m, "after the swap")

	// A crash now recovers the checkpoint and replays the write on it.
	e2 := openEngine(t, crashCopy(t, dir), Options{})
	defer e2.Close()
	d2, _ := e2.Database(ctx, "db", false)
	checkCkModel(t, d2, m, "after a crash")
}

func countEdits(ed *edits) int {
	n := 0
	ed.Ascend(func(*edit) bool { n++; return true })
	return n
}

// TestDDLDuringAFold: catalog changes while a fold runs beside the writers
// leave correct contents: the checkpoint gives up its fold for the one
// under the lock, or is cancelled by the drop of its database.
func TestDDLDuringAFold(t *testing.T) {
	cases := []struct {
		name string
		ddl  func(t *testing.T, d *Database, m ckModel)
	}{
		{"drop a collection", func(t *testing.T, d *Database, m ckModel) {
			mustWrite(t, d, func(tx *Tx) error { return tx.DropCollection("a") })
			delete(m, "a")
		}},
		{"create an index", func(t *testing.T, d *Database, m ckModel) {
			both := append(append([]bsoncore.Document(nil), vIndex...), indexSpec("x_1", false, "x"))
			mustWrite(t, d, func(tx *Tx) error { return tx.SetIndexes(ctx, "b", both) })
		}},
		{"drop an index and create it again", func(t *testing.T, d *Database, m ckModel) {
			mustWrite(t, d, func(tx *Tx) error { return tx.SetIndexes(ctx, "b", nil) })
			mustWrite(t, d, func(tx *Tx) error { return tx.SetIndexes(ctx, "b", vIndex) })
		}},
		{"drop and re-create a collection", func(t *testing.T, d *Database, m ckModel) {
			mustWrite(t, d, func(tx *Tx) error { return tx.DropCollection("a") })
			createIndexed(t, d, ckModel{"a": nil})
			m["a"] = map[int32]string{}
		}},
		{"create a collection", func(t *testing.T, d *Database, m ckModel) {
			m["c"] = map[int32]string{}
			createIndexed(t, d, ckModel{"c": nil})
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			e := openEngine(t, dir, Options{})
			defer func() { e.Close() }()
			d, _ := e.Database(ctx, "db", true)
			m := ckModel{"a": {}, "b": {}}
			createIndexed(t, d, m)
			writeSome(t, d, m, 0, 50, "before")
			held, release := holdFolds(t, e)
			done := checkpointAsync(d)
			await(t, held, "the fold")
			tc.ddl(t, d, m)
			writeSome(t, d, m, 40, 80, "during")
			release()
			if err := await(t, done, "the checkpoint"); err != nil {
				t.Fatal(err)
			}
			checkCkModel(t, d, m, "after the checkpoint")
			writeSome(t, d, m, 70, 90, "after")
			if err := d.Checkpoint(ctx); err != nil {
				t.Fatal(err)
			}
			writeSome(t, d, m, 85, 95, "last")
			checkCkModel(t, d, m, "after another checkpoint")

			crashed := crashCopy(t, dir)
			e2 := openEngine(t, crashed, Options{})
			d2, _ := e2.Database(ctx, "db", false)
			checkCkModel(t, d2, m, "after a crash")
			e2.Close()
			e.Close()
			e = openEngine(t, dir, Options{})
			d, _ = e.Database(ctx, "db", false)
			checkCkModel(t, d, m, "after a clean reopen")
		})
	}
}

// writeSome replaces or inserts documents from..to-1 in every collection
// of the model.
func writeSome(t *testing.T, d *Database, m ckModel, from, to int32, v string) {
	t.Helper()
	for c := range m {
		for id := from; id < to; id++ {
			mustWrite(t, d, func(tx *Tx) error {
				if _, ok := m[c][id]; ok {
					return tx.Replace(ctx, c, doc(id, v))
				}
				return tx.Insert(ctx, c, doc(id, v))
			})
			m[c][id] = v
		}
	}
}

// TestDropDatabaseDuringAFold: dropping the database cancels the fold
// running beside its writers; the checkpoint ends, the budget no longer
// counts the database's edits, and a database made again under the name
// is empty.
func TestDropDatabaseDuringAFold(t *testing.T) {
	e := openEngine(t, t.TempDir(), Options{})
	defer e.Close()
	d, _ := e.Database(ctx, "db", true)
	m := ckModel{"a": {}}
	createIndexed(t, d, m)
	writeSome(t, d, m, 0, 50, "before")
	held, release := holdFolds(t, e)
	done := checkpointAsync(d)
	await(t, held, "the fold")
	dropped := make(chan error, 1)
	go func() { dropped <- e.DropDatabase("db") }()
	for !d.closed.Load() { // the drop has begun, and waits for the fold
		runtime.Gosched()
	}
	release()
	if err := await(t, done, "the checkpoint"); err != nil && !errors.Is(err, ErrClosed) && !errors.Is(err, context.Canceled) {
		t.Fatalf("checkpoint during a drop: %v", err)
	}
	if err := await(t, dropped, "the drop"); err != nil {
		t.Fatal(err)
	}
	if n := e.editBytes.Load(); n != 0 {
		t.Fatalf("the budget still counts %d bytes of a dropped database", n)
	}
	d, err := e.Database(ctx, "db", true)
	if err != nil {
		t.Fatal(err)
	}
	if infos := mainSnapshot(t, d).Collections(); len(infos) != 0 {
		t.Fatalf("a database made again after its drop has %d collections", len(infos))
	}
}

// TestBudgetCheckpointRunsBesideTheWriter: the writer that makes a
// checkpoint due does not fold the edits itself; a background checkpoint
// does, and writers past the budget wait for it, so the edits stay
// within it.
func TestBudgetCheckpointRunsBesideTheWriter(t *testing.T) {
	e := openEngine(t, t.TempDir(), Options{CacheBytes: 32 << 10})
	defer e.Close()
	d, _ := e.Database(ctx, "db", true)
	m := ckModel{"a": {}}
	createIndexed(t, d, m)
	held, release := holdFolds(t, e)
	big := string(make([]byte, 900))
	id := int32(0)
	for ; !e.checkpointDue(e.editBytes.Load()); id++ {
		mustWrite(t, d, func(tx *Tx) error { return tx.Insert(ctx, "a", doc(id, big)) })
		m["a"][id] = big
	}
	// The writer that made the checkpoint due returned; the fold it
	// started is held, and a write within the budget still completes.
	await(t, held, "the budget's fold")
	mustWrite(t, d, func(tx *Tx) error { return tx.Insert(ctx, "a", doc(id, big)) })
	m["a"][id] = big
	release()

	// The budget, and one write's edits: the document and the two index
	// entries (old key deleted, new one added) its value keys.
	bound := e.opts.CacheBytes + 8<<10
	for i := range int32(400) {
		id := i % 150
		mustWrite(t, d, func(tx *Tx) error { return tx.Replace(ctx, "a", doc(id, fmt.Sprint(big, i))) }) // or inserts
		m["a"][id] = fmt.Sprint(big, i)
		if b := e.editBytes.Load(); b > bound {
			t.Fatalf("edits hold %d bytes over a %d-byte budget", b, e.opts.CacheBytes)
		}
	}
	awaitBudgetCheckpoint(d)
	checkCkModel(t, d, m, "after the budget's checkpoints")
}

// awaitBudgetCheckpoint waits for the budget's background checkpoint of
// d, if one is running.
func awaitBudgetCheckpoint(d *Database) {
	d.budget.mu.Lock()
	done := d.budget.done
	d.budget.mu.Unlock()
	if done != nil {
		<-done
	}
}
