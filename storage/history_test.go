package storage

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// testClock is an engine clock that counts.
func testClock(e *Engine) *atomic.Uint64 {
	var n atomic.Uint64
	n.Store(100)
	e.SetClock(func() uint64 { return n.Add(1) })
	return &n
}

// TestHistoryKeepsPastStates: a branch's state at a past time is readable
// (through BranchSnapshotAt and BeginTxnAt), its trees are GC roots even
// when no ref reaches them, and times before the clock started are too old.
func TestHistoryKeepsPastStates(t *testing.T) {
	e := openEngine(t, t.TempDir(), Options{})
	t.Cleanup(func() { e.Close() })
	clock := testClock(e)
	d, err := e.Database(ctx, "db", true)
	if err != nil {
		t.Fatal(err)
	}
	checkpoint := func() {
		t.Helper()
		if err := d.Checkpoint(ctx); err != nil {
			t.Fatal(err)
		}
	}
	mustWrite(t, d, func(tx *Tx) error { return insertDocs(tx, doc(1, "a")) })
	checkpoint() // the state at t1 reads a tree no ref reaches once the next write is checkpointed
	t1 := clock.Load()
	mustWrite(t, d, func(tx *Tx) error { return tx.Replace(ctx, "c", doc(1, "b")) })
	checkpoint()
	t2 := clock.Load()
	if _, _, err := d.GC(ctx); err != nil {
		t.Fatal(err)
	}
	at1, err := d.BranchSnapshotAt(ctx, DefaultBranch, t1)
	if err != nil {
		t.Fatal(err)
	}
	if got := snapContents(t, at1, "c"); got[1] != "a" {
		t.Fatalf("at t1: %v", got)
	}
	if !slices.Contains(d.historyRoots(), at1.st.colls["c"].base.HashOf()) {
		t.Fatal("GC roots miss the tree of a past state that no ref reaches")
	}
	txn, err := d.BeginTxnAt(ctx, DefaultBranch, t1)
	if err != nil {
		t.Fatal(err)
	}
	if got := snapContents(t, txn.Snapshot(), "c"); got[1] != "a" {
		t.Fatalf("transaction at t1: %v", got)
	}
	txn.Abort()
	at2, _ := d.BranchSnapshotAt(ctx, DefaultBranch, t2)
	if got := snapContents(t, at2, "c"); got[1] != "b" {
		t.Fatalf("at t2: %v", got)
	}
	if _, err := d.BranchSnapshotAt(ctx, DefaultBranch, 50); !errors.Is(err, ErrSnapshotTooOld) {
		t.Fatalf("before the clock started: %v", err)
	}
}

// TestHistoryWindow: states older than the window, or beyond the count
// bound, are dropped (reads there are too old); the current one stays.
func TestHistoryWindow(t *testing.T) {
	e := openEngine(t, t.TempDir(), Options{HistoryWindow: time.Millisecond})
	t.Cleanup(func() { e.Close() })
	clock := testClock(e)
	d, err := e.Database(ctx, "db", true)
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, d, func(tx *Tx) error { return insertDocs(tx, doc(1, "a")) })
	t1 := clock.Load()
	time.Sleep(5 * time.Millisecond)
	mustWrite(t, d, func(tx *Tx) error { return insertDocs(tx, doc(2, "b")) })
	time.Sleep(5 * time.Millisecond)
	mustWrite(t, d, func(tx *Tx) error { return insertDocs(tx, doc(3, "c")) })
	if _, err := d.BranchSnapshotAt(ctx, DefaultBranch, t1); !errors.Is(err, ErrSnapshotTooOld) {
		t.Fatalf("outside the window: %v", err)
	}
	now, err := d.BranchSnapshotAt(ctx, DefaultBranch, clock.Load())
	if err != nil || len(snapContents(t, now, "c")) != 3 {
		t.Fatalf("now: %v", err)
	}
	e2 := openEngine(t, t.TempDir(), Options{})
	t.Cleanup(func() { e2.Close() })
	testClock(e2)
	d2, _ := e2.Database(ctx, "db", true)
	for i := range historyMaxStates + 10 {
		mustWrite(t, d2, func(tx *Tx) error { return insertDocs(tx, doc(int32(i), "x")) })
	}
	b, _ := d2.branch(ctx, DefaultBranch)
	if n := len(b.hist.states()); n != historyMaxStates {
		t.Fatalf("kept %d states, want %d", n, historyMaxStates)
	}
}

// TestHistoryDropsLargeEditsAtCheckpoint: a checkpoint of more edits than
// the history may keep drops the states before it.
func TestHistoryDropsLargeEditsAtCheckpoint(t *testing.T) {
	e := openEngine(t, t.TempDir(), Options{CacheBytes: 1}) // every write checkpoints
	t.Cleanup(func() { e.Close() })
	clock := testClock(e)
	d, _ := e.Database(ctx, "db", true)
	mustWrite(t, d, func(tx *Tx) error { return insertDocs(tx, doc(1, "a")) })
	t1 := clock.Load() - 1 // before the write's checkpoint: the state with edits
	mustWrite(t, d, func(tx *Tx) error { return insertDocs(tx, doc(2, "b")) })
	if _, err := d.BranchSnapshotAt(ctx, DefaultBranch, t1); !errors.Is(err, ErrSnapshotTooOld) {
		t.Fatalf("a state whose edits a checkpoint folded away: %v", err)
	}
	if _, err := d.BranchSnapshotAt(ctx, DefaultBranch, clock.Load()); err != nil {
		t.Fatal(err)
	}
}

// TestHistoryBoundsSupersededEdits: the states a branch keeps hold the
// edits later writes replaced, which the edit budget no longer counts; a
// branch keeps at most CacheBytes/historyEditShare of them, dropping its
// oldest states past that. Rope versions, which share most of their
// memory, cost little, so updates by field keep their history.
func TestHistoryBoundsSupersededEdits(t *testing.T) {
	const budget = 8 << 20 // the history keeps 1 MB of replaced edits
	e := openEngine(t, t.TempDir(), Options{CacheBytes: budget})
	t.Cleanup(func() { e.Close() })
	clock := testClock(e)
	d, _ := e.Database(ctx, "db", true)
	big := func(v string) string { return strings.Repeat(v, 200<<10) }
	mustWrite(t, d, func(tx *Tx) error { return insertDocs(tx, doc(1, big("a"))) })
	var times []uint64
	for i := range 20 {
		mustWrite(t, d, func(tx *Tx) error { return tx.Replace(ctx, "c", doc(1, big(string(rune('b'+i))))) })
		times = append(times, clock.Load())
	}
	b, _ := d.branch(ctx, DefaultBranch)
	kept := len(b.hist.states())
	if b.hist.held > budget/historyEditShare {
		t.Fatalf("the history holds %d bytes of replaced edits, more than %d", b.hist.held, budget/historyEditShare)
	}
	// Each replaced edit is a 200 KB document: about five fit.
	if kept < 3 || kept > 7 {
		t.Fatalf("kept %d states of 21 with 200 KB replaced at each, want about 5", kept)
	}
	if _, err := d.BranchSnapshotAt(ctx, DefaultBranch, times[0]); !errors.Is(err, ErrSnapshotTooOld) {
		t.Fatalf("the oldest state, past the bound: %v", err)
	}
	for i := len(times) - kept + 1; i < len(times); i++ {
		snap, err := d.BranchSnapshotAt(ctx, DefaultBranch, times[i])
		if err != nil {
			t.Fatalf("state %d of %d (%d kept): %v", i, len(times), kept, err)
		}
		if got := snapContents(t, snap, "c")[1]; got != big(string(rune('b'+i))) {
			t.Fatalf("state %d: %.10q...", i, got)
		}
	}

	// Updates by field of a large stored document: 50 versions, all kept.
	m := &fieldModel{}
	for i := range 2000 {
		m.set(fmt.Sprintf("f%04d", i), strings.Repeat("x", 100))
	}
	mustWrite(t, d, func(tx *Tx) error { return tx.Insert(ctx, "c", m.bytes(2)) })
	if err := d.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	first := clock.Load()
	for i := range 50 {
		mustWrite(t, d, func(tx *Tx) error {
			res, err := tx.UpdateFields(ctx, "c", idValue(2), FieldUpdate{Fields: []string{"f0007"}, MaxSize: 16 << 20,
				Apply: partialSet("f0007", fmt.Sprint(i), false)})
			if err == nil && !res.Changed {
				err = errors.New("not updated by field")
			}
			return err
		})
	}
	if _, err := d.BranchSnapshotAt(ctx, DefaultBranch, first); err != nil {
		t.Fatalf("50 updates by field of a 200 KB document: the first state is gone: %v (held %d)", err, b.hist.held)
	}
}
