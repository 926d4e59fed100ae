package storage

import (
	"context"
	"errors"
	"fmt"
	"github.com/dumbodb/dumbodb/internal/formatversion"
	"github.com/dumbodb/dumbodb/storage/wal"
	"os"
	"path/filepath"
	"sort"
	"syscall"

	"github.com/dolthub/dolt/go/store/datas"
	"github.com/dolthub/dolt/go/store/types"
	"github.com/rs/zerolog"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Inspect reads a data directory as a server left it, without a server
// and without recovering anything: what `dumbodb inspect` prints
// (docs/format/versions.md, "Reading a data directory offline").

// InspectOptions say what Inspect does beyond listing.
type InspectOptions struct {
	// Check walks every chunk reachable from every ref and working set.
	Check bool
	// Language compiles the partial filters and validators of the
	// catalog, as Options.Language does for the engine.
	Language Language
}

// DirReport is what Inspect found in a data directory.
type DirReport struct {
	Files     []FileReport
	Databases []DatabaseReport
}

// FileReport is one file with a format header and the version it holds.
type FileReport struct {
	Path    string // relative to the data directory
	Format  string
	Version uint32
	Err     error // a header missing or of a version this build cannot read
}

// DatabaseReport is one database.
type DatabaseReport struct {
	Name     string
	Store    string // "table files", "chunk journal" or "not written"
	Branches []BranchReport
	Tags     []TagReport
	WAL      []wal.SegmentInfo
	Records  []RecordReport
	Check    *CheckReport // nil without InspectOptions.Check
	Err      error        // what stopped the database's inspection
}

// BranchReport is one branch: its head commit and its working root.
type BranchReport struct {
	Name        string
	Head        string
	WorkingLSN  uint64 // the last log record the working root includes
	RootVersion uint32
	Merging     bool // a merge, cherry-pick, revert or rebase stopped at conflicts
	Collections []CollectionReport
}

// TagReport is one tag and the commit it names.
type TagReport struct{ Name, Commit string }

// CollectionReport is one collection of a branch's working root.
type CollectionReport struct {
	Name      string
	Kind      string // "collection", "view" (views and time-series collections) or "capped"
	Documents int
	Map       string // the document map's address
	Indexes   []IndexReport
}

// IndexReport is one secondary index map.
type IndexReport struct {
	Name    string
	Key     bsoncore.Document
	Entries int
	Map     string
}

// RecordReport is one write-ahead log record.
type RecordReport struct {
	LSN     uint64
	Bytes   int
	Summary string // the branch and operations, or why it does not decode
}

// ErrNoDataDirectory is a directory Inspect finds nothing of DumboDB's in.
var ErrNoDataDirectory = errors.New("not a DumboDB data directory")

// Inspect reads the data directory at dir. It refuses a directory a
// running server holds (ErrDataDirLocked).
func Inspect(ctx context.Context, dir string, opts InspectOptions) (*DirReport, error) {
	unlock, err := lockToInspect(dir)
	if err != nil {
		return nil, err
	}
	defer unlock()
	useLanguage(opts.Language)
	names, err := databaseDirs(dir)
	if err != nil {
		return nil, err
	}
	rep := &DirReport{Files: inspectFiles(dir)}
	for _, name := range names {
		rep.Databases = append(rep.Databases, inspectDatabase(ctx, dir, name, opts))
	}
	return rep, nil
}

// lockToInspect takes the data directory's lock, so that no server starts
// while Inspect reads; a directory without the lock file was never a
// running server's, and is read without it.
func lockToInspect(dir string) (func(), error) {
	if _, err := os.Stat(dir); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, "mongod.lock"), os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		return func() {}, nil
	}
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("%w: %s: a server is running on it", ErrDataDirLocked, dir)
	}
	return func() { f.Close() }, nil
}

// databaseDirs lists the databases in dir, sorted.
func databaseDirs(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, ent := range entries {
		if ent.IsDir() && !engineEntry(ent.Name()) && isDatabaseDir(filepath.Join(dir, ent.Name())) {
			names = append(names, ent.Name())
		}
	}
	sort.Strings(names)
	return names, nil
}

// inspectFiles reads the headers of the server-wide files and change-log
// segments there are.
func inspectFiles(dir string) []FileReport {
	paths := []struct {
		rel string
		f   *formatversion.Format
	}{{"users.auth", formatversion.Users}, {decisionLogName, formatversion.DecisionLog}}
	segs, _ := filepath.Glob(filepath.Join(dir, "changes", "*.chg"))
	sort.Strings(segs)
	for _, s := range segs {
		rel, _ := filepath.Rel(dir, s)
		paths = append(paths, struct {
			rel string
			f   *formatversion.Format
		}{rel, formatversion.ChangeLog})
	}
	var out []FileReport
	for _, p := range paths {
		head, err := readHead(filepath.Join(dir, p.rel))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		r := FileReport{Path: p.rel, Format: p.f.Name, Err: err}
		if err == nil {
			r.Version, r.Err = p.f.ReadHeader(head)
		}
		out = append(out, r)
	}
	return out
}

// readHead reads the first bytes of a file, where its format header is.
func readHead(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	head := make([]byte, formatversion.HeaderSize)
	n, err := f.Read(head)
	if n == len(head) {
		err = nil
	}
	return head[:n], err
}

// inspectDatabase reads one database: its store's refs and working roots,
// then its log.
func inspectDatabase(ctx context.Context, dataDir, name string, opts InspectOptions) DatabaseReport {
	d := &Database{name: name, dir: filepath.Join(dataDir, name), log: zerolog.Nop(),
		engine: &Engine{dir: dataDir, nodes: newNodeCache(defaultNodeCacheBytes)}}
	rep := DatabaseReport{Name: name, Store: "not written"}
	if hasStore(d.dir) {
		rep.Err = d.inspectStore(ctx, &rep, opts.Check)
	}
	if err := d.inspectLog(&rep); err != nil && rep.Err == nil {
		rep.Err = err
	}
	return rep
}

// inspectStore opens the database's Dolt store as the server does (which
// writes nothing to a store a clean shutdown or a crash left) and reads
// its refs.
func (d *Database) inspectStore(ctx context.Context, rep *DatabaseReport, check bool) error {
	cs, tables, err := d.openChunkStore(ctx)
	if err != nil {
		return fmt.Errorf("open chunk store: %w", err)
	}
	rep.Store = map[bool]string{true: "table files", false: "chunk journal"}[tables]
	ns, err := newNodeStore(cs, d.engine.nodes)
	if err != nil {
		cs.Close()
		return err
	}
	d.cs, d.vs, d.ns = cs, types.NewValueStore(cs), ns
	d.db = datas.NewTypesDatabase(d.vs, d.ns)
	defer d.db.Close()
	d.born.Store(true)
	if check {
		if rep.Check, err = checkChunks(ctx, cs); err != nil {
			return err
		}
	}
	if err := d.inspectBranches(ctx, rep); err != nil {
		return err
	}
	return d.inspectTags(ctx, rep)
}
