package storage

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/dumbodb/dumbodb/internal/durablefile"
	"github.com/dumbodb/dumbodb/storage/wal"
)

// This file owns the databases' directories under the data directory
// (docs/format/root.md, "Data directory"): which directories are
// databases, making a new one, and removing a dropped one so that a crash
// cannot leave half of it looking like a database.

const (
	// manifestName is Dolt's manifest: a database whose store is written.
	manifestName = "manifest"
	// walDirName holds a database's log; with no manifest beside it, the
	// database is new and its store not written yet (birth.go).
	walDirName = "wal"
	// droppedPrefix names a dropped database's directory while it is
	// removed; removeLeftovers finishes the job after a crash.
	droppedPrefix = ".dropped-"
	// clonePrefix names a database being cloned (remote_clone.go): a
	// crash leaves it incomplete, and start removes it.
	clonePrefix = ".clone-"
)

// isDatabaseDir reports whether dir holds a database: its written store,
// or the log of a new one.
func isDatabaseDir(dir string) bool {
	return hasStore(dir) || exists(filepath.Join(dir, walDirName))
}

// hasStore reports whether dir holds a written Dolt store.
func hasStore(dir string) bool { return exists(filepath.Join(dir, manifestName)) }

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// engineEntry reports whether a data directory entry is the engine's own
// (a spare, a dropped database): never a database, whatever it holds.
// Database names cannot start with ".": checkDatabaseName refuses them.
func engineEntry(name string) bool { return strings.HasPrefix(name, ".") }

// create makes d a new database, its directory durable in the data
// directory, and opens it. The directory is a spare (spares.go): its log
// is prepared, so the first write makes no file. The data directory's
// sync, which makes the name durable, runs while the database opens
// (which writes nothing), so a creation waits for the longer of the two,
// not for both. Whatever held the name and is no database (a directory a
// crash left behind) is removed first. Called with e.mu held.
func (e *Engine) create(ctx context.Context, d *Database) error {
	if exists(d.dir) {
		e.log.Warn().Str("c", "STORAGE").Str("dir", d.dir).Msg("removing a directory that is no database, to create one there")
		if err := os.RemoveAll(d.dir); err != nil {
			return fmt.Errorf("create database directory: %w", err)
		}
	}
	synced, err := e.spares.install(d.dir)
	if err != nil {
		return diskFull(err)
	}
	err = d.use(ctx, time.Now())
	serr := <-synced
	// Only now: spares made meanwhile would have shared the disk with the
	// sync (and refillDelay keeps them off the first write).
	e.spares.refill()
	if serr != nil {
		// Its name may not last: no write may be acknowledged in it, and
		// a second try must not find it there and skip the sync.
		if err == nil {
			d.dropping.Store(true)
			d.close(ctx)
		}
		os.RemoveAll(d.dir)
		return diskFull(fmt.Errorf("create database directory: %w", serr))
	}
	return err
}

// walOptions are the options of the databases' logs that shape their
// files.
func (e *Engine) walOptions() wal.Options { return wal.Options{SegmentSize: e.opts.WALSegmentSize} }

// removeDatabaseDir deletes a database's directory. It is renamed out of
// the databases first, and the rename made durable, so that a crash while
// its files go cannot leave its name with a log and no manifest: a new
// database's look, which would bring it back with part of its data.
func (e *Engine) removeDatabaseDir(dir string) error {
	// A name, not a directory made for it: making one costs what the
	// rename saves elsewhere (docs/design/resources.md).
	trash := filepath.Join(e.dir, fmt.Sprintf("%s%d-%d", droppedPrefix, time.Now().UnixNano(), e.dropped.Add(1)))
	if err := os.Rename(dir, trash); err != nil {
		return fmt.Errorf("remove database directory: %w", err)
	}
	if err := durablefile.SyncDir(e.dir); err != nil {
		return fmt.Errorf("remove database directory: %w", err)
	}
	return os.RemoveAll(trash)
}

// removeLeftovers deletes what a crash left of the engine's own entries
// in the data directory: dropped databases not yet removed, clones not
// finished.
func (e *Engine) removeLeftovers() error {
	entries, err := os.ReadDir(e.dir)
	if err != nil {
		return err
	}
	for _, ent := range entries {
		if strings.HasPrefix(ent.Name(), droppedPrefix) || strings.HasPrefix(ent.Name(), clonePrefix) {
			if err := os.RemoveAll(filepath.Join(e.dir, ent.Name())); err != nil {
				return fmt.Errorf("remove a dropped database or an unfinished clone: %w", err)
			}
		}
	}
	return nil
}

// neverWritten reports whether the database in dir is a new one that took
// no write: no store written, and no record in its log. Its creation was
// never acknowledged, so recovery removes it.
func neverWritten(dir string) (bool, error) {
	if hasStore(dir) {
		return false, nil
	}
	written, err := wal.HasRecords(filepath.Join(dir, walDirName))
	return !written, err
}
