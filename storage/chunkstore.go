package storage

import (
	"cmp"
	"context"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/dolthub/dolt/go/store/hash"
	"github.com/dolthub/dolt/go/store/nbs"
	"github.com/dolthub/dolt/go/store/types"
	"github.com/dolthub/dolt/go/store/util/tempfiles"
)

// A database's Dolt store keeps its chunks in table files only
// (docs/design/resources.md, "The chunk store"): Dolt's chunk journal
// costs about 7 MB of memory and 2 ms of CPU per open store, fixed, which
// made every database, however small, expensive. Our own log makes writes
// durable; the store is written only by checkpoints, which become one
// table file each, and compactTables keeps the number of files small.
// Databases created before this change keep their journal and open as
// they always did.
const (
	// memTableBytes is how many bytes of chunks a checkpoint gathers before
	// Dolt writes them out as a table file of their own.
	memTableBytes = 16 << 20
	// maxTableFiles is how many table files a store may have before a
	// checkpoint compacts them; keepTableFiles how many of the largest
	// files a compaction leaves as they are.
	maxTableFiles  = 8
	keepTableFiles = 3
)

func init() {
	// Dolt takes a stack trace for every table index it opens, to report
	// indexes never closed; that was a tenth of opening a small database.
	nbs.TableIndexGCFinalizerWithStackTrace = false
	tempfiles.MovableTempFileProvider = unlistedTempFiles{}
}

// unlistedTempFiles is Dolt's provider of temporary files without the
// list of every name it made, kept for a Clean at exit that the server
// never calls. A chunk store writes each table file and each manifest as
// a temporary file renamed into place, so the list grew by two or more
// names a checkpoint for as long as the server ran
// (TestCheckpointsKeepNoMemoryEach). Only the list goes: the files are
// made where and as Dolt's provider makes them.
type unlistedTempFiles struct{}

func (unlistedTempFiles) GetTempDir() string { return os.TempDir() }

func (unlistedTempFiles) NewFile(dir, pattern string) (*os.File, error) {
	return os.CreateTemp(cmp.Or(dir, os.TempDir()), pattern)
}

func (unlistedTempFiles) Clean() {}

// chunkStoreLockAttempts bounds openChunkStore's retries.
const chunkStoreLockAttempts = 5

// openChunkStore opens the database's Dolt store and reports whether it
// is a store of table files (true) or one with a chunk journal.
func (d *Database) openChunkStore(ctx context.Context) (*nbs.NomsBlockStore, bool, error) {
	if !hasChunkJournal(d.dir) && !d.engine.opts.journalStores {
		cs, err := nbs.NewLocalStore(ctx, types.Format_DOLT.VersionString(), d.dir, memTableBytes,
			nbs.NewUnlimitedMemQuotaProvider(), false)
		return cs, true, err
	}
	cs, err := d.openJournalStore(ctx)
	return cs, false, err
}

// hasChunkJournal reports whether dir holds a store made with Dolt's chunk
// journal: its journal file exists for as long as the store does.
func hasChunkJournal(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, doltJournalName))
	return err == nil
}

// openJournalStore opens a store with a chunk journal, retrying when Dolt
// reports it locked. Dolt waits only 100 ms for the goroutine that takes
// its lock, which a loaded machine may not run in time, and idle databases
// make opens routine; yet nothing of ours can hold the lock: mongod.lock
// keeps other servers out, and one handle per database keeps this one from
// opening a store twice. Only another program (the dolt CLI) can, and then
// we fail.
func (d *Database) openJournalStore(ctx context.Context) (*nbs.NomsBlockStore, error) {
	for attempt := 1; ; attempt++ {
		cs, err := nbs.NewLocalJournalingStoreWithOptions(ctx, types.Format_DOLT.VersionString(), d.dir,
			nbs.NewUnlimitedMemQuotaProvider(), false,
			func(err error) { d.log.Warn().Str("c", "STORAGE").Err(err).Str("db", d.name).Msg("chunk journal replay") },
			nbs.JournalingStoreOptions{FailOnLockTimeout: true})
		if !errors.Is(err, nbs.ErrDatabaseLocked) || attempt == chunkStoreLockAttempts {
			return cs, err
		}
	}
}

// compactTables conjoins the smaller table files of a store of table files
// into one once it has more than maxTableFiles, so that a database written
// for days holds a few files (and descriptors: Dolt keeps each open), and
// a chunk look-up, which asks every file, stays cheap. The largest files
// are left alone, so each byte is rewritten a few times in its life, not
// at every compaction. Called with d held open; GC does not run meanwhile.
func (d *Database) compactTables(ctx context.Context) error {
	if !d.tables {
		return nil
	}
	d.compactMu.Lock()
	defer d.compactMu.Unlock()
	small, err := d.smallTables(ctx)
	if err != nil || len(small) < 2 {
		return err
	}
	if _, err := d.cs.ConjoinTableFiles(ctx, small); err != nil {
		d.removeFailedTemp(err)
		return err
	}
	d.engine.dbStats.compacted()
	return nil
}

// smallTables returns the table files a compaction conjoins: none while
// the store has at most maxTableFiles, else all but the keepTableFiles
// largest by chunk count.
func (d *Database) smallTables(ctx context.Context) ([]hash.Hash, error) {
	src, err := d.cs.Sources(ctx)
	if err != nil {
		return nil, err
	}
	files := src.TableFiles
	if len(files) <= maxTableFiles {
		return nil, nil
	}
	sort.Slice(files, func(i, j int) bool { return files[i].NumChunks() > files[j].NumChunks() })
	var ids []hash.Hash
	for _, f := range files[keepTableFiles:] {
		// An archive (a zstd file Dolt's copies could write) is left as it
		// is: only table files are conjoined.
		if h, ok := hash.MaybeParse(f.FileID()); ok {
			ids = append(ids, h)
		}
	}
	return ids, nil
}

// manifestLockTimeout is the error Dolt gives when it does not get the
// manifest's file lock within 100 ms. As for opens (openJournalStore),
// nothing of ours holds that lock for long: the wait is the goroutine
// that takes it not being run in time on a loaded machine. The update did
// not happen, so it is tried again, on the same lock: safe only with our
// copy of its package (third_party/fslock), whose timed-out attempt
// releases its own descriptor rather than the retry's.
const manifestLockTimeout = "timed out reading database manifest"

// retryManifestLock runs update, a manifest update, again while it fails
// only because the manifest's lock was not taken in time.
func retryManifestLock(update func() error) error {
	for attempt := 1; ; attempt++ {
		err := update()
		if err == nil || !strings.Contains(err.Error(), manifestLockTimeout) || attempt == chunkStoreLockAttempts {
			return err
		}
	}
}
