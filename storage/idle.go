package storage

import (
	"context"
	"errors"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// An open database costs memory and file descriptors whether or not it is
// used (docs/design/resources.md), so databases unused for
// Options.IdleDatabaseTimeout are closed and reopened by their next call.
// The *Database handle outlives such closes: every method holds the
// database open for its duration (hold, release) and reopens it if needed,
// and a live snapshot, through its pin, keeps it open too. So a caller may
// keep a handle as long as it likes, and nothing is closed under a call, a
// snapshot or an iterator.

// lifetime is a database's open state and what an idle close looks at.
type lifetime struct {
	mu      sync.Mutex
	open    bool
	active  int       // calls between hold and release
	lastUse time.Time // of the last Engine.Database
	// catalog, while closed for idleness, is the catalog as of closing:
	// nothing can change it before the database is opened again.
	catalog []BranchCatalog
}

// hold keeps d open until release, opening it if it was closed for
// idleness. Every method that reads the chunk store, the log or the
// branches runs between the two.
func (d *Database) hold(ctx context.Context) error {
	d.life.mu.Lock()
	defer d.life.mu.Unlock()
	if err := d.openLocked(ctx); err != nil {
		return err
	}
	d.life.active++
	return nil
}

func (d *Database) release() {
	d.life.mu.Lock()
	defer d.life.mu.Unlock()
	d.life.active--
}

// holdIfOpen is hold for work that has nothing to do on a closed database
// (periodic checkpoints): it never opens one.
func (d *Database) holdIfOpen() bool {
	d.life.mu.Lock()
	defer d.life.mu.Unlock()
	if !d.life.open || d.closed.Load() {
		return false
	}
	d.life.active++
	return true
}

// use opens d if needed and records a use: Engine.Database is what keeps a
// database from being idle.
func (d *Database) use(ctx context.Context, now time.Time) error {
	d.life.mu.Lock()
	defer d.life.mu.Unlock()
	if err := d.openLocked(ctx); err != nil {
		return err
	}
	d.life.lastUse = now
	return nil
}

func (d *Database) openLocked(ctx context.Context) error {
	switch {
	case d.closed.Load():
		return ErrClosed
	case d.life.open:
		return nil
	}
	return d.open(ctx)
}

func (d *Database) isOpen() bool {
	d.life.mu.Lock()
	defer d.life.mu.Unlock()
	return d.life.open
}

// closeIfIdle checkpoints and closes d when nothing uses it: no call holds
// it, no snapshot pins one of its states, and Engine.Database has not
// returned it for timeout (negative: never idle). It reports whether it
// closed d. With no call holding d, no writer holds a branch lock either,
// so the checkpoints do not wait.
func (d *Database) closeIfIdle(ctx context.Context, now time.Time, timeout time.Duration) (bool, error) {
	d.life.mu.Lock()
	defer d.life.mu.Unlock()
	if timeout < 0 || !d.life.open || d.closed.Load() || d.life.active > 0 ||
		now.Sub(d.life.lastUse) < timeout || d.pins.any() {
		return false, nil
	}
	cat, err := d.catalog(ctx)
	if err != nil {
		return false, err // something is wrong: leave it open and say so
	}
	err = d.shut(ctx)
	d.rememberHistories()
	d.forget()
	d.life.open, d.life.catalog = false, cat
	d.engine.dbStats.idleCloses.Add(1)
	return true, err
}

// BranchCatalog is one branch's collections.
type BranchCatalog struct {
	Branch      string
	Collections []CollectionInfo
}

// Catalog lists every branch's collections, sorted by branch. A database
// closed for idleness answers from its catalog as of closing without
// reopening, so that passes over all databases (TTL, listDatabases) can
// skip the ones they have nothing to do in.
func (d *Database) Catalog(ctx context.Context) ([]BranchCatalog, error) {
	if cat := d.closedCatalog(); cat != nil {
		return cat, nil
	}
	if err := d.hold(ctx); err != nil {
		return nil, err
	}
	defer d.release()
	return d.catalog(ctx)
}

func (d *Database) closedCatalog() []BranchCatalog {
	d.life.mu.Lock()
	defer d.life.mu.Unlock()
	if d.life.open || d.closed.Load() {
		return nil
	}
	return d.life.catalog
}

// DefaultCatalog lists the default branch's collections, from memory
// where it can: the catalog as of an idle close, or the loaded branch's
// state, without listing the store's refs (which a table compaction of
// the store may be rewriting).
func (d *Database) DefaultCatalog(ctx context.Context) ([]CollectionInfo, error) {
	if cat := d.closedCatalog(); cat != nil {
		for _, bc := range cat {
			if bc.Branch == DefaultBranch {
				return bc.Collections, nil
			}
		}
		return nil, nil
	}
	if err := d.hold(ctx); err != nil {
		return nil, err
	}
	defer d.release()
	b, err := d.branch(ctx, DefaultBranch)
	if err != nil {
		return nil, err
	}
	infos := b.state.Load().collectionInfos()
	for i := range infos {
		infos[i] = infos[i].clone()
	}
	return infos, nil
}

func (d *Database) catalog(ctx context.Context) ([]BranchCatalog, error) {
	names, err := d.branchNames(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]BranchCatalog, 0, len(names))
	for _, name := range names {
		b, err := d.branch(ctx, name)
		if err != nil {
			return nil, err
		}
		infos := b.state.Load().collectionInfos()
		for i := range infos {
			infos[i] = infos[i].clone() // own bytes: the catalog outlives the states
		}
		out = append(out, BranchCatalog{Branch: name, Collections: infos})
	}
	return out, nil
}

// DatabaseStats count database opens and idle closes, to size
// Options.IdleDatabaseTimeout by.
type DatabaseStats struct {
	Open       int64 // open now
	Opens      int64 // first opens and reopens after idle closes
	IdleCloses int64
	// TableCompactions counts the conjoins of a store's smaller table
	// files (chunkstore.go).
	TableCompactions int64
	// LogRecords and LogBytes count the write records appended to the
	// databases' logs and their payload bytes.
	LogRecords, LogBytes int64
	// FieldUpdates counts the updates logged as field records: applied
	// to a large document's fields alone (fieldupdate.go).
	FieldUpdates int64
	// DeletionCheckpoints counts the early checkpoints asked for
	// because scans stepped over many deletions (tombstones.go); one
	// asked for while the budget's runs is that one (checkpointSoon).
	DeletionCheckpoints int64
	// AutoGCs counts the automatic GCs and AutoGCFreedBytes sums what
	// they freed on disk (autogc.go).
	AutoGCs, AutoGCFreedBytes int64
	// NodeCacheBytes is what the node cache holds (nodecache.go).
	NodeCacheBytes int64
	// EditBytes is the memory of the edits not yet checkpointed, all
	// databases, and HistoryBytes that of the edits only past states
	// hold (history.go): the two parts of the edit budget.
	EditBytes, HistoryBytes int64
}

type dbStats struct {
	open, opens, idleCloses, compactions atomic.Int64
	logRecords, logBytes                 atomic.Int64
	fieldUpdates, deletionCheckpoints    atomic.Int64
	autoGCs, autoGCFreed                 atomic.Int64
}

// autoCollected counts a GC after adding what it freed, so that a reader
// who sees the count (DatabaseStats reads it first) sees the bytes too.
func (s *dbStats) autoCollected(freed int64) {
	s.autoGCFreed.Add(freed)
	s.autoGCs.Add(1)
}

func (s *dbStats) compacted() { s.compactions.Add(1) }

func (s *dbStats) logged(payload []byte) {
	s.logRecords.Add(1)
	s.logBytes.Add(int64(len(payload)))
}

func (s *dbStats) opened() {
	s.open.Add(1)
	s.opens.Add(1)
}

// DatabaseStats reports the engine's database counters.
func (e *Engine) DatabaseStats() DatabaseStats {
	return DatabaseStats{Open: e.dbStats.open.Load(), Opens: e.dbStats.opens.Load(),
		IdleCloses: e.dbStats.idleCloses.Load(), TableCompactions: e.dbStats.compactions.Load(),
		LogRecords: e.dbStats.logRecords.Load(), LogBytes: e.dbStats.logBytes.Load(),
		FieldUpdates: e.dbStats.fieldUpdates.Load(), DeletionCheckpoints: e.dbStats.deletionCheckpoints.Load(),
		AutoGCs: e.dbStats.autoGCs.Load(), AutoGCFreedBytes: e.dbStats.autoGCFreed.Load(),
		NodeCacheBytes: e.nodes.Bytes(), EditBytes: e.editBytes.Load(), HistoryBytes: e.historyBytes.Load()}
}

// Visit runs fn on an existing database (nothing happens when there is
// none) without counting as a use, for work over every database (TTL
// passes, listDatabases, dbStats, recovery) that must not keep them all
// open. A database that is idle after fn is closed at once, not at the
// next idle pass; unless its store was never written (birth.go): it was
// open already, and closing it would write its store, three files and
// their syncs, which a pass over many new databases (the first after a
// restart that followed many creations) would wait for. Its first
// checkpoint writes it, in the background.
func (e *Engine) Visit(ctx context.Context, name string, fn func(d *Database) error) error {
	d, err := e.handle(ctx, name, false)
	if err != nil || d == nil {
		return err
	}
	err = fn(d)
	if d.born.Load() {
		e.closeIfIdle(d, time.Now())
	}
	return err
}

// idlePassEvery is how often the idle pass runs (0: never), so that a
// database closes between one and one and a half timeouts after its use.
func (e *Engine) idlePassEvery() time.Duration {
	if e.opts.IdleDatabaseTimeout < 0 {
		return 0
	}
	return max(e.opts.IdleDatabaseTimeout/2, time.Millisecond)
}

// closeIdleAll closes the databases idle as of now.
func (e *Engine) closeIdleAll(now time.Time) {
	for _, d := range e.handles() {
		e.closeIfIdle(d, now)
	}
}

func (e *Engine) closeIfIdle(d *Database, now time.Time) {
	e.guard(d, "idle close", func() error {
		closed, err := d.closeIfIdle(context.Background(), now, e.opts.IdleDatabaseTimeout)
		if closed {
			e.log.Debug().Str("c", "STORAGE").Str("db", d.name).Msg("closed an idle database")
		}
		return err
	})
}

// guard runs one background step on d, logging its failure or its panic:
// a background loop must outlive both.
func (e *Engine) guard(d *Database, step string, fn func() error) {
	defer func() {
		if p := recover(); p != nil {
			e.log.Error().Str("c", "STORAGE").Str("db", d.name).Interface("panic", p).
				Str("stack", string(debug.Stack())).Msg(step + " panicked")
		}
	}()
	if err := fn(); err != nil && !errors.Is(err, ErrClosed) {
		e.log.Error().Str("c", "STORAGE").Err(err).Str("db", d.name).Msg(step + " failed")
	}
}
