package storage

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dumbodb/dumbodb/internal/durablefile"
	"github.com/dumbodb/dumbodb/storage/wal"

	"golang.org/x/sync/errgroup"
)

// This file owns the spare databases (docs/design/resources.md, "Creating
// a database"): directories made ahead, each with an empty log whose first
// segment is written, so that creating a database makes no file. Making a
// file can cost far more than writing one (about a millisecond each on
// this machine's ext4 without a journal, after deletions nearby), and a
// new database needs three: its directory, wal/ and the segment.

const (
	// spareDatabases is how many spares an engine keeps ready once it
	// has created a database. Their syncs overlap when made together, so
	// a few refill faster than one at a time; more would only serve
	// longer bursts of creations.
	spareDatabases = 4
	// sparePrefix names a ready spare; spareTmpPrefix one being made,
	// renamed to a ready name only once complete and durable, so that a
	// crash leaves no half-made spare under a ready name.
	sparePrefix    = ".newdb-"
	spareTmpPrefix = ".newdb-tmp-"
	// refillDelay is how long a refill waits before making spares while
	// some are still ready: the creation that took one writes its first
	// record within a millisecond or two, and spares made meanwhile share
	// the disk's flushes with it (the first write's median went from 0.25
	// to 2 ms when the refill started with the creation). The next
	// creation ends the wait: creations back to back need the spares more
	// than any one of them its quiet disk.
	refillDelay = 10 * time.Millisecond
)

// spares are an engine's spare databases.
type spares struct {
	dataDir string
	walOpts wal.Options
	engine  *Engine // for its log
	gen     atomic.Int64

	mu      sync.Mutex
	changed *sync.Cond    // signalled when a spare is made and when a refill ends
	hurry   chan struct{} // ends a refill's delay: a creation waits, or the engine closes
	ready   []string      // paths of ready spares
	filling bool          // a refill is running
	closed  bool
}

func newSpares(e *Engine) *spares {
	s := &spares{dataDir: e.dir, walOpts: e.walOptions(), engine: e, hurry: make(chan struct{}, 1)}
	s.changed = sync.NewCond(&s.mu)
	return s
}

// hasten ends a refill's delay. Called with s.mu held.
func (s *spares) hasten() {
	select {
	case s.hurry <- struct{}{}:
	default:
	}
}

// load removes the spares a previous run left, ready or half made: while
// no engine runs, the data directory holds databases only (close removes
// its spares too), and this run makes its own once it creates a database.
// Called by Open.
func (s *spares) load() error {
	return removeSpares(s.dataDir)
}

// removeSpares removes every spare in dataDir, ready or being made.
func removeSpares(dataDir string) error {
	entries, err := os.ReadDir(dataDir)
	if err != nil {
		return err
	}
	for _, ent := range entries {
		if strings.HasPrefix(ent.Name(), sparePrefix) { // spareTmpPrefix too
			if err := os.RemoveAll(filepath.Join(dataDir, ent.Name())); err != nil {
				return fmt.Errorf("remove a spare database: %w", err)
			}
		}
	}
	return nil
}

// install makes dir, which must not exist, a new database's directory: a
// ready spare renamed to it, or one made now if none is ready. The name is
// durable once the data directory is synced, which runs meanwhile: synced
// delivers its outcome. The caller then refills the spares.
func (s *spares) install(dir string) (synced <-chan error, err error) {
	spare := s.take()
	if spare == "" {
		if spare, err = s.make(); err != nil {
			return nil, err
		}
	}
	if err := os.Rename(spare, dir); err != nil {
		// The file system refused the name (one too long, say): the spare
		// is out of the ready ones, so nothing else would remove it.
		os.RemoveAll(spare)
		return nil, fmt.Errorf("create database directory: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- durablefile.SyncDir(s.dataDir) }()
	return done, nil
}

// take returns a ready spare's path, "" if there is none. While a refill
// runs it waits for the refill's first spare: making one more meanwhile
// would only slow the others down.
func (s *spares) take() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.filling {
		s.hasten()
	}
	for len(s.ready) == 0 && s.filling {
		s.changed.Wait()
	}
	n := len(s.ready)
	if n == 0 {
		return ""
	}
	spare := s.ready[n-1]
	s.ready = s.ready[:n-1]
	return spare
}

// make makes a spare and returns its path: the directory, its log
// prepared, the directory synced, then renamed to a ready name.
func (s *spares) make() (string, error) {
	suffix := fmt.Sprintf("%d-%d", time.Now().UnixNano(), s.gen.Add(1))
	tmp := filepath.Join(s.dataDir, spareTmpPrefix+suffix)
	if err := s.prepare(tmp); err != nil {
		os.RemoveAll(tmp)
		return "", fmt.Errorf("make a spare database: %w", err)
	}
	ready := filepath.Join(s.dataDir, sparePrefix+suffix)
	if err := os.Rename(tmp, ready); err != nil {
		os.RemoveAll(tmp)
		return "", fmt.Errorf("make a spare database: %w", err)
	}
	return ready, nil
}

func (s *spares) prepare(dir string) error {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return err
	}
	if err := wal.Prepare(filepath.Join(dir, walDirName), s.walOpts); err != nil {
		return err
	}
	return durablefile.SyncDir(dir)
}

// refill makes spares in the background until spareDatabases are ready,
// unless a refill is running already.
func (s *spares) refill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.filling || s.closed || len(s.ready) >= spareDatabases {
		return
	}
	s.filling = true
	go s.fill()
}

// fill makes the missing spares, all at once so that their syncs overlap,
// until none is missing or making one fails (the next creation makes its
// own, and tries refilling again). While spares are ready it first waits
// refillDelay, out of the way of the creation that started it.
func (s *spares) fill() {
	defer func() {
		s.mu.Lock()
		s.filling = false
		s.changed.Broadcast()
		s.mu.Unlock()
	}()
	s.mu.Lock()
	someReady := len(s.ready) > 0
	s.mu.Unlock()
	if someReady {
		select {
		case <-time.After(refillDelay):
		case <-s.hurry:
		}
	}
	for {
		s.mu.Lock()
		missing := spareDatabases - len(s.ready)
		// While the data directory is frozen, or about to be, no spare is
		// made: a creation that waits for one inside the write gate would
		// hold the freeze. It makes its directory itself (take finds
		// none); spares started just before the gate closed are made
		// before the freeze returns (flushFrozen waits for them).
		if s.closed || missing <= 0 || s.engine.gate.closedNow() {
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		var g errgroup.Group
		for range missing {
			g.Go(func() error {
				spare, err := s.make()
				if err == nil {
					s.mu.Lock()
					s.ready = append(s.ready, spare)
					s.changed.Broadcast()
					s.mu.Unlock()
				}
				return err
			})
		}
		if err := g.Wait(); err != nil {
			s.engine.log.Warn().Str("c", "STORAGE").Err(err).Msg("making spare databases failed")
			return
		}
	}
}

// wait returns once no refill is running.
func (s *spares) wait() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.filling {
		s.changed.Wait()
	}
}

// close stops refilling, waits for a refill running and removes the
// spares, so that a clean shutdown leaves only databases behind.
func (s *spares) close() {
	s.mu.Lock()
	s.closed = true
	s.hasten()
	s.mu.Unlock()
	s.wait()
	s.mu.Lock()
	s.ready = nil
	s.mu.Unlock()
	if err := removeSpares(s.dataDir); err != nil {
		s.engine.log.Warn().Str("c", "STORAGE").Err(err).Msg("removing the spare databases failed")
	}
}
