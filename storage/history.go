package storage

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dolthub/dolt/go/store/hash"
)

// Branch states by cluster time (docs/design/transactions.md,
// "Snapshots"): each branch keeps the states it published within the
// history window, each stamped with the engine clock's time when it was
// published, so that a read at a past time (readConcern atClusterTime, a
// transaction's later participants) sees the state that was current then.
// A state is current from its stamp until the next state's.

// Clock hands out increasing times (the server's cluster time as
// seconds<<32 | increment); Engine.SetClock installs it.
type Clock func() uint64

// Defaults of the history window (both bounds apply).
const (
	// DefaultHistoryWindow is mongod's minSnapshotHistoryWindowInSeconds.
	DefaultHistoryWindow = 300 * time.Second
	// historyMaxStates bounds what a branch keeps: a busy branch keeps
	// less than the window rather than its memory growing with the rate.
	historyMaxStates = 1024
	// historyEditShare: the states before a newer one hold the edits it
	// replaced or removed, and those before a checkpoint the edits it
	// folded away, none of which the current states' edits count any
	// more. So the branches of all databases keep at most
	// CacheBytes/historyEditShare of such edits (Engine.historyBytes, which
	// the edit budget counts too): past that the writing branch's oldest
	// states go (reads at their times get SnapshotTooOld) rather than keep
	// that memory for the window. Without the bound, 200 findAndModify
	// updates of one 8 MB document held 1.7 GB; with a bound per branch,
	// a thousand databases could each hold the share.
	historyEditShare = 8
)

type stampedState struct {
	at   uint64
	when time.Time // wall-clock time of at, for the window
	st   *rootState
	// superseded is the memory of the edits st's publish (or the
	// checkpoint that made it) replaced, removed or folded away, which
	// only the entries before it hold.
	superseded int64
}

// history is one branch's recent states, oldest first; the last is the
// branch's current state. Empty until the branch's first state after its
// database opened (replayed states are not history: they were all current
// before this process started).
type history struct {
	mu      sync.Mutex
	entries []stampedState
	// held is the superseded memory of every entry but the oldest: what
	// the entries keep alive beyond the current state's edits. Changed
	// only by addHeld, which keeps Engine.historyBytes its sum.
	held int64
}

// addHeld changes h.held and the engine's sum of them by n. Called with
// h.mu held.
func (h *history) addHeld(e *Engine, n int64) {
	h.held += n
	e.historyBytes.Add(n)
}

// release drops every entry, when the branch leaves memory (its database
// closed or dropped, the branch deleted or reloaded) and gives its held
// memory back to the engine's sum. The history stays empty: later records
// are ignored, as before it started.
func (h *history) release(e *Engine) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.addHeld(e, -h.held)
	clear(h.entries)
	h.entries = h.entries[:0]
}

// engineClock is the engine's clock and the time it was installed: before
// it, no state of this process was current.
type engineClock struct {
	fn    atomic.Pointer[Clock]
	start atomic.Uint64
}

// SetClock installs the clock that stamps published states. Without one,
// no history is kept and reads at a time fail with ErrSnapshotTooOld.
func (e *Engine) SetClock(fn Clock) {
	e.clock.start.Store(fn())
	e.clock.fn.Store(&fn)
	for _, d := range e.handles() { // opened before the clock was set
		if d.holdIfOpen() {
			d.startHistories()
			d.release()
		}
	}
}

// SetHistoryWindow changes how long branches keep their published states
// (minSnapshotHistoryWindowInSeconds); it applies from each branch's next
// write.
func (e *Engine) SetHistoryWindow(d time.Duration) { e.historyWindow.Store(int64(d)) }

// HistoryWindow is how long branches keep their published states.
func (e *Engine) HistoryWindow() time.Duration { return time.Duration(e.historyWindow.Load()) }

func (e *Engine) now() (uint64, bool) {
	fn := e.clock.fn.Load()
	if fn == nil {
		return 0, false
	}
	return (*fn)(), true
}

// startHistory makes st the first entry of b's history, current since
// from (the time the branch's state was last changed in this process, or
// the engine clock's start).
func (h *history) start(e *Engine, st *rootState, from uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.entries = append(h.entries[:0], stampedState{at: from, when: time.Now(), st: st})
	h.addHeld(e, -h.held)
}

// record appends a newly published state, dropping what the window no
// longer needs. Called under the branch's writer lock.
func (h *history) record(e *Engine, st *rootState) {
	at, ok := e.now()
	if ok {
		h.recordAt(e, st, at)
	}
}

// recordAt is record with the time the caller took from the engine's
// clock (0: the clock is not set).
func (h *history) recordAt(e *Engine, st *rootState, at uint64) {
	if at == 0 {
		return
	}
	now := time.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.entries) == 0 {
		return // not started: the database is still replaying its log
	}
	h.entries = append(h.entries, stampedState{at: at, when: now, st: st, superseded: st.superseded})
	h.addHeld(e, st.superseded)
	h.trim(e, now)
}

// trim drops the entries no longer current anywhere in the window, those
// past historyMaxStates, and the oldest while all histories hold more
// than their share of the edit budget in superseded edits (those of other
// branches included: the one writing gives way, and so the sum stays
// within the share). Called with h.mu held.
func (h *history) trim(e *Engine, now time.Time) {
	window := time.Duration(e.historyWindow.Load())
	maxHeld := e.historyShare()
	drop := 0
	for drop < len(h.entries)-1 && (len(h.entries)-drop > historyMaxStates ||
		now.Sub(h.entries[drop+1].when) > window || e.historyBytes.Load() > maxHeld) {
		drop++ // entry drop is no longer current, or costs too much
		h.addHeld(e, -h.entries[drop].superseded)
	}
	if drop > 0 {
		// Resliced, not shifted: a busy branch drops one entry per write,
		// and moving a thousand entries each time was a tenth of an
		// insert's CPU. The next append that outgrows the array copies the
		// live entries once.
		clear(h.entries[:drop])
		h.entries = h.entries[drop:]
	}
}

// supersede notes that the entries before st's hold n more bytes of
// edits that st does not (a checkpoint's folded edits), and trims.
func (h *history) supersede(e *Engine, st *rootState, n int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i := range h.entries {
		if h.entries[i].st == st {
			h.entries[i].superseded += n
			if i > 0 {
				h.addHeld(e, n)
			}
			h.trim(e, time.Now())
			return
		}
	}
}

// forget drops the entries of states a failed log write took back: they
// were never acknowledged, so no read may see them.
func (h *history) forget(e *Engine, dropped map[*rootState]bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	keep := h.entries[:0]
	h.addHeld(e, -h.held)
	for _, s := range h.entries {
		if !dropped[s.st] {
			if len(keep) > 0 {
				h.addHeld(e, s.superseded)
			}
			keep = append(keep, s)
		}
	}
	clear(h.entries[len(keep):])
	h.entries = keep
}

// at is the state current at time t.
func (h *history) at(t uint64) (*rootState, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.entries) == 0 || t < h.entries[0].at {
		return nil, fmt.Errorf("%w: the branch's states before that time are no longer kept", ErrSnapshotTooOld)
	}
	for i := len(h.entries) - 1; ; i-- {
		if h.entries[i].at <= t {
			return h.entries[i].st, nil
		}
	}
}

// latest is the stamp of the current state (0: none).
func (h *history) latest() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.entries) == 0 {
		return 0
	}
	return h.entries[len(h.entries)-1].at
}

// states are the states kept, for GC's roots.
func (h *history) states() []*rootState {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]*rootState, len(h.entries))
	for i, e := range h.entries {
		out[i] = e.st
	}
	return out
}

// BranchSnapshotAt is a snapshot of a branch as it was at time t (of the
// engine's clock), or ErrSnapshotTooOld when that state is no longer kept.
func (d *Database) BranchSnapshotAt(ctx context.Context, branchName string, t uint64) (*Snapshot, error) {
	if err := d.hold(ctx); err != nil {
		return nil, err
	}
	defer d.release()
	b, err := d.branch(ctx, branchName)
	if err != nil {
		return nil, err
	}
	st, err := d.stateAt(ctx, b, t)
	if err != nil {
		return nil, err
	}
	return d.newSnapshot(st), nil
}

// startHistories starts the history of every loaded branch, once the log
// is replayed.
func (d *Database) startHistories() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.replayed = true
	for _, b := range d.branches {
		d.startHistoryLocked(b)
	}
}

// startHistoryLocked starts b's history with its current state. Called
// with d.mu held.
func (d *Database) startHistoryLocked(b *branch) {
	if d.engine.clock.fn.Load() == nil || b.hist.latest() != 0 {
		return
	}
	from := d.engine.clock.start.Load()
	if t, ok := d.currentSince[b.name]; ok {
		from = t
	}
	b.hist.start(d.engine, b.state.Load(), from)
}

// releaseHistories gives back the memory every loaded branch's history
// holds, when the database closes, is dropped or forgets its branches.
func (d *Database) releaseHistories() {
	for _, b := range d.branchList() {
		b.hist.release(d.engine)
	}
}

// historyShare is the most all branches' histories hold in superseded
// edits.
func (e *Engine) historyShare() int64 { return e.opts.CacheBytes / historyEditShare }

// rememberHistories keeps, across an idle close, when each branch's state
// became current: nothing changes it while the database is closed.
func (d *Database) rememberHistories() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.currentSince == nil {
		d.currentSince = map[string]uint64{}
	}
	for name, b := range d.branches {
		if t := b.hist.latest(); t != 0 {
			d.currentSince[name] = t
		}
	}
}

// historyRoots are the trees every branch's kept states read: GC keeps
// them so that a read at a past time still finds its chunks.
func (d *Database) historyRoots() []hash.Hash {
	var states []*rootState
	for _, b := range d.branchList() {
		states = append(states, b.hist.states()...)
	}
	return treeRoots(states)
}

// stateAt is the state of b current at time t, once every transaction over
// several databases stamped at or before t has published all its parts
// (commit_times.go): a read at t then sees each of them whole.
func (d *Database) stateAt(ctx context.Context, b *branch, t uint64) (*rootState, error) {
	if err := d.engine.commitTimes.wait(ctx, t); err != nil {
		return nil, err
	}
	return b.hist.at(t)
}
