package storage

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"

	"github.com/rs/zerolog"
)

// Engine owns a data directory: its lock and the databases under it.
type Engine struct {
	dir  string
	log  zerolog.Logger
	lock *os.File

	mu  sync.Mutex
	dbs map[string]*Database
}

// Open locks dir (creating it if needed) for this process. A second Open of
// the same directory, from any process, fails with ErrDataDirLocked.
func Open(dir string, log zerolog.Logger) (*Engine, error) {
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
	return &Engine{dir: dir, log: log, lock: f, dbs: map[string]*Database{}}, nil
}

// Dir is the data directory.
func (e *Engine) Dir() string { return e.dir }

// Close closes every database and releases the data directory.
func (e *Engine) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	var errs []error
	for name, d := range e.dbs {
		if err := d.close(); err != nil {
			errs = append(errs, fmt.Errorf("close %s: %w", name, err))
		}
	}
	e.dbs = map[string]*Database{}
	if e.lock != nil {
		errs = append(errs, e.lock.Close())
		e.lock = nil
	}
	return errors.Join(errs...)
}

func (e *Engine) dbDir(name string) string { return filepath.Join(e.dir, name) }

// Database returns an open database, or nil if it does not exist and create
// is false. With create, a missing database is created (with its initial
// commit on main).
func (e *Engine) Database(ctx context.Context, name string, create bool) (*Database, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.lock == nil {
		return nil, ErrClosed
	}
	if d, ok := e.dbs[name]; ok {
		return d, nil
	}
	exists := isDatabaseDir(e.dbDir(name))
	if !exists && !create {
		return nil, nil
	}
	if !exists {
		if other := e.caseConflict(name); other != "" {
			return nil, fmt.Errorf("%w: %q and %q", ErrDatabaseDiffersInCase, name, other)
		}
	}
	d, err := openDatabase(ctx, e.dbDir(name), name, e.log)
	if err != nil {
		return nil, err
	}
	e.dbs[name] = d
	return d, nil
}

func (e *Engine) caseConflict(name string) string {
	names, _ := e.databaseNames()
	for _, n := range names {
		if n != name && strings.EqualFold(n, name) {
			return n
		}
	}
	return ""
}

// DatabaseNames lists the databases on disk, sorted.
func (e *Engine) DatabaseNames() ([]string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.databaseNames()
}

func (e *Engine) databaseNames() ([]string, error) {
	entries, err := os.ReadDir(e.dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, ent := range entries {
		if ent.IsDir() && isDatabaseDir(e.dbDir(ent.Name())) {
			names = append(names, ent.Name())
		}
	}
	sort.Strings(names)
	return names, nil
}

// SizeOnDisk is the bytes a database's files take.
func (e *Engine) SizeOnDisk(name string) int64 {
	var total int64
	filepath.WalkDir(e.dbDir(name), func(_ string, d fs.DirEntry, err error) error {
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
func (e *Engine) DropDatabase(name string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if d, ok := e.dbs[name]; ok {
		delete(e.dbs, name)
		if err := d.close(); err != nil {
			return err
		}
	}
	if !isDatabaseDir(e.dbDir(name)) {
		return nil
	}
	return os.RemoveAll(e.dbDir(name))
}

func isDatabaseDir(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "manifest"))
	return err == nil
}
