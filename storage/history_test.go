package storage

import (
	"errors"
	"fmt"
	"runtime"
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
	if !slices.Contains(d.historyRoots(), at1.st.colls.get("c").base.HashOf()) {
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

// TestHistoryShareIsEngineWide: the replaced edits all branches' histories
// hold stay within one share of the budget together, the branch writing
// giving way, and every way a history leaves memory (a branch deleted,
// its database closed for idleness, dropped, or the engine closed) gives
// its bytes back, so that the budget, which counts them, does not drift.
func TestHistoryShareIsEngineWide(t *testing.T) {
	const budget = 8 << 20 // the histories keep 1 MB of replaced edits
	opts := idleOpts
	opts.CacheBytes = budget
	e := openEngine(t, t.TempDir(), opts)
	t.Cleanup(func() { e.Close() })
	testClock(e)
	big := func(i int) string { return strings.Repeat(string(rune('a'+i%26)), 200<<10) }
	heldByBranches := func() (sum int64) {
		for _, d := range e.handles() {
			if d.isOpen() {
				for _, b := range d.branchList() {
					sum += b.hist.held
				}
			}
		}
		return sum
	}
	check := func(when string) {
		t.Helper()
		got := e.historyBytes.Load()
		if got > e.historyShare() {
			t.Fatalf("%s: the histories hold %d bytes, more than the share %d", when, got, e.historyShare())
		}
		if sum := heldByBranches(); sum != got {
			t.Fatalf("%s: the branches hold %d bytes, the engine counts %d", when, sum, got)
		}
	}
	replaceOften := func(d *Database, branch string) {
		t.Helper()
		for i := range 8 {
			err := d.WriteBranch(ctx, branch, func(tx *Tx) error { return tx.Replace(ctx, "c", doc(1, big(i))) })
			if err != nil {
				t.Fatal(err)
			}
			check(fmt.Sprintf("%s/%s write %d", d.name, branch, i))
		}
	}
	dbs := make([]*Database, 3)
	for i := range dbs {
		dbs[i], _ = e.Database(ctx, fmt.Sprintf("db%d", i), true)
		mustWrite(t, dbs[i], func(tx *Tx) error { return insertDocs(tx, doc(1, big(0))) })
		replaceOften(dbs[i], DefaultBranch)
	}
	// Each database alone would keep about five of its replaced 200 KB
	// documents; all three together keep about as many.
	if n := e.historyBytes.Load(); n < e.historyShare()/2 {
		t.Fatalf("the histories hold %d bytes, want near the share %d", n, e.historyShare())
	}

	// Each way out gives back what that history held: the branch that
	// wrote last holds most of the share, so each goes after writing.
	givesBack := func(what string, held int64, leave func() error) {
		t.Helper()
		before := e.historyBytes.Load()
		if held == 0 {
			t.Fatalf("%s: its history holds nothing to give back", what)
		}
		if err := leave(); err != nil {
			t.Fatal(err)
		}
		if after := e.historyBytes.Load(); after != before-held {
			t.Fatalf("%s: the histories held %d, %d of them its, and hold %d after", what, before, held, after)
		}
		check(what)
	}
	dbHeld := func(d *Database) (sum int64) {
		for _, b := range d.branchList() {
			sum += b.hist.held
		}
		return sum
	}
	givesBack("db0 dropped", dbHeld(dbs[0]), func() error { return e.DropDatabase("db0") })

	if _, err := dbs[1].Commit(ctx, DefaultBranch, CommitOptions{Message: "the document"}); err != nil {
		t.Fatal(err)
	}
	if _, err := dbs[1].CreateBranch(ctx, "feature", Revision{Branch: DefaultBranch}); err != nil {
		t.Fatal(err)
	}
	replaceOften(dbs[1], "feature")
	feature, _ := dbs[1].branch(ctx, "feature")
	givesBack("feature deleted", feature.hist.held, func() error {
		return dbs[1].DeleteBranch(ctx, "feature", DefaultBranch, true)
	})

	replaceOften(dbs[1], DefaultBranch)
	keep := mainSnapshot(t, dbs[2]) // keeps db2 open while db1 closes
	givesBack("db1 closed for idleness", dbHeld(dbs[1]), func() error {
		closeWhenReleased(t, e, dbs[1])
		return nil
	})
	runtime.KeepAlive(keep)

	replaceOften(dbs[2], DefaultBranch)
	if e.historyBytes.Load() == 0 {
		t.Fatal("db2's history holds nothing for the engine's close to give back")
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if n := e.historyBytes.Load(); n != 0 {
		t.Fatalf("the closed engine's histories still count %d bytes", n)
	}
}

// TestHistoryAcrossIdleClose: a database closed for idleness and reopened
// remembers since when each branch's state is current, so a read at an
// earlier time gets SnapshotTooOld and never the later state; the closed
// database's history gives its memory back all the same.
func TestHistoryAcrossIdleClose(t *testing.T) {
	e := openClosing(t, t.TempDir(), idleOpts)
	clock := testClock(e)
	d, _ := e.Database(ctx, "db", true)
	mustWrite(t, d, func(tx *Tx) error { return insertDocs(tx, doc(1, "before")) })
	before := clock.Load()
	mustWrite(t, d, func(tx *Tx) error { return tx.Replace(ctx, "c", doc(1, "after")) })
	closeWhenReleased(t, e, d)
	if n := e.historyBytes.Load(); n != 0 {
		t.Fatalf("the closed database's history still counts %d bytes", n)
	}
	snap, err := d.BranchSnapshotAt(ctx, DefaultBranch, before)
	if err == nil {
		t.Fatalf("read at a time before the current state, after reopening: %q, want SnapshotTooOld", snapContents(t, snap, "c")[1])
	}
	if !errors.Is(err, ErrSnapshotTooOld) {
		t.Fatal(err)
	}
	snap, err = d.BranchSnapshotAt(ctx, DefaultBranch, clock.Load())
	if err != nil {
		t.Fatal(err)
	}
	if got := snapContents(t, snap, "c")[1]; got != "after" {
		t.Fatalf("read now after reopening: %q", got)
	}
}
