package storage

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sync/errgroup"
)

// Options tune the engine; zero values take the defaults.
type Options struct {
	// Language compiles partial filters and validators (language.go); an
	// engine without one refuses collections that have them.
	Language Language
	// CacheBytes bounds the memory held by acknowledged edits that are not
	// yet checkpointed: from half of it a checkpoint folds them beside the
	// writers, and past it writers wait for that checkpoint.
	CacheBytes int64
	// CheckpointInterval is how often changed databases are checkpointed.
	CheckpointInterval time.Duration
	// WALSegmentSize is the size of write-ahead log segment files.
	WALSegmentSize int64
	// Author is the default commit author, "Name <email>".
	Author string
	// LargeDocThreshold is the BSON size from which a document is stored as
	// a path-indexed tree (docs/format/doctree.md); 0 means
	// DefaultLargeDocThreshold and a negative value turns the path index
	// off, so every document is stored whole.
	LargeDocThreshold int
	// IdleDatabaseTimeout is how long a database stays open after its last
	// use (Engine.Database) once nothing reads or writes it; it is then
	// checkpointed and closed, and reopened by its next use. 0 means
	// DefaultIdleDatabaseTimeout and a negative value never closes one.
	IdleDatabaseTimeout time.Duration
	// HistoryWindow is how long a branch keeps the states it published,
	// for reads at a past time (history.go); 0 means DefaultHistoryWindow.
	HistoryWindow time.Duration
	// UndropRetention is how long dropDatabase keeps a database's
	// directory for dumboUndrop (docs/format/undrop.md); 0 removes it at
	// once.
	UndropRetention time.Duration
	// ChangeRetention and ChangeRetentionBytes bound what the change log
	// keeps (docs/format/changes.md, "Retention"); 0 means the defaults.
	ChangeRetention      time.Duration
	ChangeRetentionBytes int64
	// AutoGCMaxBytes is the largest chunk store a database collects on
	// its own after a checkpoint, and AutoGCMinBytes the least it must
	// have grown since its last GC (autogc.go); 0 means the defaults and a
	// negative AutoGCMaxBytes turns automatic GC off.
	AutoGCMaxBytes, AutoGCMinBytes int64

	// journalStores makes new databases as databases made before table-file
	// stores were (chunkstore.go): with Dolt's chunk journal. For the tests
	// of those databases.
	journalStores bool
}

// Defaults.
const (
	DefaultCacheBytes         = 256 << 20
	DefaultCheckpointInterval = 60 * time.Second
	DefaultAuthor             = "dumbodb <dumbodb@localhost>"
	// DefaultLargeDocThreshold: below 64 KiB a whole-document read costs
	// less than a path look-up in a tree (docs/design/large-documents.md).
	DefaultLargeDocThreshold = 64 << 10
	// DefaultIdleDatabaseTimeout: reopening costs tens of milliseconds,
	// once per burst of use; an open database costs megabytes all along
	// (docs/design/resources.md).
	DefaultIdleDatabaseTimeout = 5 * time.Minute
)

// Engine owns a data directory: its lock and the databases under it.
type Engine struct {
	dir  string
	opts Options
	log  zerolog.Logger
	lock *os.File

	editBytes atomic.Int64 // memory of uncheckpointed edits, all databases
	// historyBytes is the memory of the edits only past states hold, all
	// branches' histories (history.go), which the edit budget counts too.
	historyBytes atomic.Int64
	nodes        *nodeCache // decoded tree nodes, all databases (nodecache.go)
	panics       panicPoint
	dbStats      dbStats
	clock        engineClock   // stamps published states (history.go)
	observer     observerSlot  // told of syncs and checkpoints (observer.go)
	rootsSeen    sync.Map      // database name -> its store's root when last read (RefsToken)
	decisions    *decisionLog  // commit points of transactions over several databases
	commitTimes  commitTimes   // their times until every part is published (commit_times.go)
	changes      *ChangeLog    // change events, for change streams (changes.go)
	settings     *settingsFile // server-wide settings (settings.go)
	// historyWindow is Options.HistoryWindow, settable while running.
	historyWindow atomic.Int64

	mu  sync.Mutex
	dbs map[string]*Database // handles, open or closed for idleness
	// onDisk holds the names of the databases on disk, for listings and
	// the case check of a new database without reading the data directory
	// each time; nil until the first of them reads it. Creations and drops
	// keep it up to date (nothing else makes or removes databases).
	onDisk map[string]bool
	// dropped numbers the directories of dropped databases (dbdirs.go).
	dropped atomic.Int64
	spares  *spares       // directories new databases take (spares.go)
	autoGC  chan struct{} // holds the one automatic GC running (autogc.go)
	stop    chan struct{}
	done    chan struct{}
	// gate holds writes while the data directory is frozen (freeze.go);
	// freezeMu serialises Freeze and Thaw.
	gate     writeGate
	freezeMu sync.Mutex
	freezes  atomic.Int64 // fsync locks taken (locks.go)
	// branchLocks counts the branches' writer locks (locks.go).
	branchLocks lockMeter
}

// Open locks dir (creating it if needed) for this process. A second Open of
// the same directory, from any process, fails with ErrDataDirLocked.
func Open(dir string, opts Options, log zerolog.Logger) (*Engine, error) {
	if opts.CacheBytes <= 0 {
		opts.CacheBytes = DefaultCacheBytes
	}
	if opts.CheckpointInterval <= 0 {
		opts.CheckpointInterval = DefaultCheckpointInterval
	}
	if opts.Author == "" {
		opts.Author = DefaultAuthor
	}
	if _, _, ok := splitAuthor(opts.Author); !ok { // else every commit would fail
		return nil, fmt.Errorf("default commit author %q is not of the form \"Name <email>\"", opts.Author)
	}
	if opts.LargeDocThreshold == 0 {
		opts.LargeDocThreshold = DefaultLargeDocThreshold
	}
	if opts.IdleDatabaseTimeout == 0 {
		opts.IdleDatabaseTimeout = DefaultIdleDatabaseTimeout
	}
	if opts.HistoryWindow <= 0 {
		opts.HistoryWindow = DefaultHistoryWindow
	}
	useLanguage(opts.Language)
	opts.AutoGCMaxBytes = cmp.Or(opts.AutoGCMaxBytes, DefaultAutoGCMaxBytes)
	opts.AutoGCMinBytes = cmp.Or(opts.AutoGCMinBytes, DefaultAutoGCMinBytes)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create data directory: %w", err)
	}
	lockPath := filepath.Join(dir, "mongod.lock")
	f, err := os.OpenFile(lockPath, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", lockPath, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("%w: %s", ErrDataDirLocked, dir)
	}
	e := &Engine{dir: dir, opts: opts, log: log, lock: f, dbs: map[string]*Database{},
		nodes: newNodeCache(defaultNodeCacheBytes), autoGC: make(chan struct{}, 1),
		stop: make(chan struct{}), done: make(chan struct{})}
	decisions, read, err := openDecisionLog(dir)
	if err != nil {
		f.Close()
		return nil, err
	}
	e.decisions = decisions
	if e.settings, err = openSettings(dir); err != nil {
		e.closeAll()
		return nil, err
	}
	e.historyWindow.Store(int64(opts.HistoryWindow))
	if err := e.removeLeftovers(); err != nil {
		e.closeAll()
		return nil, err
	}
	if err := useSpillDir(spillPath(dir)); err != nil {
		e.closeAll()
		return nil, err
	}
	e.spares = newSpares(e)
	if err := e.spares.load(); err != nil {
		e.closeAll()
		return nil, err
	}
	if opts.UndropRetention > 0 {
		if err := e.expireDropped(time.Now()); err != nil {
			e.closeAll()
			return nil, err
		}
	}
	if e.changes, err = openChangeLog(filepath.Join(dir, "changes")); err != nil {
		e.closeAll()
		return nil, err
	}
	e.changes.SetRetention(cmp.Or(opts.ChangeRetention, DefaultChangeRetention), cmp.Or(opts.ChangeRetentionBytes, DefaultChangeRetentionBytes))
	if err := e.resolveDecisions(read); err != nil {
		e.closeAll()
		return nil, err
	}
	if err := e.recoverCrashed(); err != nil {
		e.closeAll()
		return nil, err
	}
	go e.backgroundLoop()
	return e, nil
}

func (e *Engine) addEditBytes(n int64) { e.editBytes.Add(n) }

// backgroundLoop checkpoints changed databases every CheckpointInterval
// and closes idle ones.
func (e *Engine) backgroundLoop() {
	defer close(e.done)
	ckpt := time.NewTicker(e.opts.CheckpointInterval)
	defer ckpt.Stop()
	var idle, undrop <-chan time.Time // nil: never
	if every := e.idlePassEvery(); every > 0 {
		t := time.NewTicker(every)
		defer t.Stop()
		idle = t.C
	}
	if e.opts.UndropRetention > 0 {
		t := time.NewTicker(undropExpiryEvery)
		defer t.Stop()
		undrop = t.C
	}
	for {
		select {
		case <-e.stop:
			return
		case <-ckpt.C:
			e.checkpointAll()
		case <-idle:
			e.inGate(func() { e.closeIdleAll(time.Now()) })
		case <-undrop:
			e.inGate(func() {
				if err := e.expireDropped(time.Now()); err != nil {
					e.log.Warn().Str("c", "STORAGE").Err(err).Msg("removing dropped databases past their retention")
				}
			})
		}
	}
}

func (e *Engine) checkpointAll() {
	for _, d := range e.handles() {
		e.guard(d, "periodic checkpoint", func() error { return d.Checkpoint(context.Background()) })
	}
}

// handles are the databases the engine has a handle for.
func (e *Engine) handles() []*Database {
	e.mu.Lock()
	defer e.mu.Unlock()
	dbs := make([]*Database, 0, len(e.dbs))
	for _, d := range e.dbs {
		dbs = append(dbs, d)
	}
	return dbs
}

// Dir is the data directory.
func (e *Engine) Dir() string { return e.dir }

// Close checkpoints and closes every database and releases the data
// directory.
func (e *Engine) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.lock == nil {
		return nil
	}
	close(e.stop)
	e.mu.Unlock()
	e.thawAll() // what waits at the gate finishes before the close
	<-e.done    // a periodic checkpoint may be running; it takes e.mu
	e.mu.Lock()
	return e.closeAllLocked()
}

// closeAll closes what Open opened when Open fails after the lock.
func (e *Engine) closeAll() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.closeAllLocked()
}

// closeAllLocked closes every database, the decision log and the data
// directory's lock. Called with e.mu held.
func (e *Engine) closeAllLocked() error {
	forgetSpillDir(spillPath(e.dir))
	if e.spares != nil {
		e.spares.close()
	}
	var errs []error
	for name, d := range e.dbs {
		if err := d.close(context.Background()); err != nil {
			errs = append(errs, fmt.Errorf("close %s: %w", name, err))
		}
	}
	e.dbs = map[string]*Database{}
	if e.decisions != nil {
		errs = append(errs, e.decisions.close())
	}
	if e.changes != nil {
		errs = append(errs, e.changes.Close())
	}
	if e.lock != nil {
		errs = append(errs, e.lock.Close())
		e.lock = nil
	}
	return errors.Join(errs...)
}

func (e *Engine) dbDir(name string) string { return filepath.Join(e.dir, name) }

// checkDatabaseName makes sure a database's directory is a direct child of
// the data directory, whatever the name: the server validates names with
// mongod's rules, and this check, on the cleaned path rather than on the
// name, holds even if a caller forgets.
func (e *Engine) checkDatabaseName(name string) error {
	dir := e.dbDir(name)
	if name == "" || strings.ContainsAny(name, "/\\\x00") || engineEntry(name) ||
		filepath.Dir(dir) != filepath.Clean(e.dir) || filepath.Base(dir) != name {
		return fmt.Errorf("%w: %q", ErrInvalidDatabaseName, name)
	}
	return nil
}

// Database returns a database, open, or nil if it does not exist and
// create is false. With create, a missing database is created (with its
// initial commit on main). The call counts as a use: the database stays
// open for IdleDatabaseTimeout after it, and the handle stays valid (it
// reopens on its next call) until the database is dropped.
func (e *Engine) Database(ctx context.Context, name string, create bool) (*Database, error) {
	if create { // a creation writes the new database's files
		var leave func()
		var err error
		if ctx, leave, err = e.gate.enter(ctx); err != nil {
			return nil, err
		}
		defer leave()
	}
	d, err := e.handle(ctx, name, create)
	if err != nil || d == nil {
		return nil, err
	}
	if err := d.use(ctx, time.Now()); err != nil {
		return nil, err
	}
	return d, nil
}

// handle returns the database's handle, making one for a database on disk
// (not opened: its first call opens it) or, with create, for a new one,
// created here so that a failed creation leaves no handle behind.
func (e *Engine) handle(ctx context.Context, name string, create bool) (*Database, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.lock == nil {
		return nil, ErrClosed
	}
	if d, ok := e.dbs[name]; ok {
		return d, nil
	}
	if err := e.checkDatabaseName(name); err != nil {
		return nil, err
	}
	d := newDatabase(e, name)
	if !isDatabaseDir(d.dir) {
		if !create {
			return nil, nil
		}
		if other := e.caseConflict(name); other != "" {
			return nil, fmt.Errorf("%w: %q and %q", ErrDatabaseDiffersInCase, name, other)
		}
		if err := e.create(ctx, d); err != nil {
			return nil, err
		}
		if e.onDisk != nil {
			e.onDisk[name] = true
		}
	}
	e.dbs[name] = d
	return d, nil
}

// caseConflict returns the database on disk whose name differs from name
// only in case, or "". Called with e.mu held.
func (e *Engine) caseConflict(name string) string {
	if err := e.loadOnDisk(); err != nil {
		return ""
	}
	for n := range e.onDisk {
		if n != name && strings.EqualFold(n, name) {
			return n
		}
	}
	return ""
}

// loadOnDisk reads the names of the databases on disk once. Called with
// e.mu held.
func (e *Engine) loadOnDisk() error {
	if e.onDisk != nil {
		return nil
	}
	entries, err := os.ReadDir(e.dir)
	if err != nil {
		return err
	}
	e.onDisk = map[string]bool{}
	for _, ent := range entries {
		if ent.IsDir() && !engineEntry(ent.Name()) && isDatabaseDir(e.dbDir(ent.Name())) {
			e.onDisk[ent.Name()] = true
		}
	}
	return nil
}

// DatabaseNames lists the databases on disk, sorted.
func (e *Engine) DatabaseNames() ([]string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.loadOnDisk(); err != nil {
		return nil, err
	}
	names := make([]string, 0, len(e.onDisk))
	for n := range e.onDisk {
		names = append(names, n)
	}
	sort.Strings(names)
	return names, nil
}

// SizeOnDisk is the bytes a database's files take.
func (e *Engine) SizeOnDisk(name string) int64 { return dirSize(e.dbDir(name)) }

// dirSize is the bytes of the files under dir.
func dirSize(dir string) int64 {
	var total int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if info, err := d.Info(); err == nil {
				total += info.Size()
			}
		}
		return nil
	})
	return total
}

// DropDatabase closes a database and deletes its files. Dropping a database
// that does not exist is not an error.
func (e *Engine) DropDatabase(name string) error { return e.DropDatabaseBy(name, "") }

// DropDatabaseBy drops a database, recording who dropped it when the
// engine keeps dropped databases for undrop (Options.UndropRetention).
func (e *Engine) DropDatabaseBy(name, by string) error {
	_, leave, _ := e.gate.enter(context.Background()) // waits while frozen
	defer leave()
	if err := e.checkDatabaseName(name); err != nil {
		return err
	}
	if err := e.emitDropDatabase(name); err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if d, ok := e.dbs[name]; ok {
		delete(e.dbs, name)
		d.dropping.Store(true)
		if err := d.discard(); err != nil {
			e.log.Warn().Str("c", "STORAGE").Err(err).Str("db", name).Msg("closing a dropped database")
		}
	}
	if !isDatabaseDir(e.dbDir(name)) {
		return nil
	}
	remove := func() error { return e.removeDatabaseDir(e.dbDir(name)) }
	if e.opts.UndropRetention > 0 {
		remove = func() error { return e.dropKeeping(name, by) }
	}
	if err := remove(); err != nil {
		return err
	}
	delete(e.onDisk, name)
	return nil
}

// Changes is the server's change log.
func (e *Engine) Changes() *ChangeLog { return e.changes }

// recoverCrashed opens every database that was not closed cleanly (its
// write-ahead log is still there), so that the change events its log
// holds and the change log lacks are back before any stream reads on.
func (e *Engine) recoverCrashed() error {
	names, err := e.DatabaseNames()
	if err != nil {
		return err
	}
	// Recoveries of different databases share nothing but the change log,
	// and each waits on its own syncs: a few at once use both cores and
	// the disk's queue (1,000 databases killed at once: 4.9 s one by one).
	var g errgroup.Group
	g.SetLimit(2 * runtime.GOMAXPROCS(0))
	for _, name := range names {
		if _, err := os.Stat(filepath.Join(e.dbDir(name), walDirName)); err != nil {
			continue
		}
		g.Go(func() error { return e.recoverDatabase(name) })
	}
	return g.Wait()
}

// recoverDatabase opens a database not closed cleanly, which replays its
// log, and closes it again if nothing uses it (Visit: one whose store was
// never written stays open). A new database that took no write is
// removed: its creation was never acknowledged.
func (e *Engine) recoverDatabase(name string) error {
	if empty, err := neverWritten(e.dbDir(name)); err != nil || empty {
		if err == nil {
			err = e.removeNeverWritten(name)
		}
		if err != nil {
			return fmt.Errorf("recover database %s: %w", name, err)
		}
		return nil
	}
	err := e.Visit(context.Background(), name, func(d *Database) error {
		if err := d.hold(context.Background()); err != nil {
			return err
		}
		d.release()
		return nil
	})
	if err != nil {
		return fmt.Errorf("recover database %s: %w", name, err)
	}
	return nil
}

// emitDropDatabase appends the events of dropping a database: a drop of
// each of its collections (on the main branch) and dropDatabase.
func (e *Engine) emitDropDatabase(name string) error {
	if !isDatabaseDir(e.dbDir(name)) {
		return nil
	}
	var evs []ChangeEvent
	// The catalog, not a snapshot: an idle database is not reopened.
	err := e.Visit(context.Background(), name, func(d *Database) error {
		d.settleChanges()
		cat, err := d.Catalog(context.Background())
		for _, bc := range cat {
			if bc.Branch != DefaultBranch {
				continue
			}
			for _, info := range bc.Collections {
				evs = append(evs, ChangeEvent{Op: "drop", Coll: info.Name, UUID: info.UUID})
			}
		}
		return err
	})
	if err != nil {
		return err
	}
	return e.emitEntries(name, DefaultBranch, evs, []ChangeEvent{{Op: "dropDatabase"}})
}

// removeNeverWritten removes a new database that took no write, found at
// start.
func (e *Engine) removeNeverWritten(name string) error {
	e.log.Info().Str("c", "RECOVERY").Str("db", name).Msg("removed a database whose creation was never acknowledged")
	if err := e.removeDatabaseDir(e.dbDir(name)); err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.onDisk, name)
	return nil
}
