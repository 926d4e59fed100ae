package server

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"time"

	"github.com/dumbodb/dumbodb/auth"
	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/query"
	"github.com/dumbodb/dumbodb/storage"
	"github.com/dumbodb/dumbodb/value"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"golang.org/x/sync/errgroup"
	"golang.org/x/sys/unix"
)

// database opens the request's database; with create it is created if
// missing, otherwise a missing database is nil.
func (r *request) database(create bool) (*storage.Database, error) {
	if create {
		// Only a collection's creation makes a database, and a '$' in
		// its name refuses that (the command's first field names it).
		coll, _ := r.cmd.Index(0).Value().StringValueOK()
		if err := validateCreatableDB(r.db, coll); err != nil {
			return nil, err
		}
	}
	d, err := r.c.s.engine.Database(r.ctx, r.db, create)
	if err == nil && d == nil && r.rev != "" && r.rev != "HEAD" && r.rev != r.currentBranch() {
		// Only the branch a first write would make exists before the
		// database does: any other revision of it names nothing.
		return nil, mongoerr.New(mongoerr.RevisionNotFound, "revision %s of database %s not found: the database does not exist", r.rev, r.db)
	}
	return d, err
}

// snapshot is a consistent view of the request's database at its
// revision (empty if the database does not exist).
func (r *request) snapshot() (*storage.Snapshot, error) {
	if r.txn != nil {
		return r.txnSnapshot()
	}
	d, err := r.database(false)
	if err != nil || d == nil {
		return storage.EmptySnapshot(), err
	}
	rev, err := r.revision(d)
	if err != nil {
		return nil, err
	}
	if !r.readAt.isZero() && !rev.ReadOnly() {
		return d.BranchSnapshotAt(r.ctx, rev.Branch, r.readAt.stamp())
	}
	return d.SnapshotAt(r.ctx, rev)
}

// write runs fn in a write transaction on the request's branch, creating
// the database if needed.
func (r *request) write(fn func(tx *storage.Tx) error) error {
	if r.txn != nil {
		return r.txnWrite(true, fn)
	}
	d, err := r.database(true)
	if err != nil {
		return err
	}
	return r.writeTo(d, fn)
}

// writeExisting is write for commands that never create a database: on a
// missing database it does nothing.
func (r *request) writeExisting(fn func(tx *storage.Tx) error) error {
	if r.txn != nil {
		return r.txnWrite(false, fn)
	}
	d, err := r.database(false)
	if err != nil || d == nil {
		return err
	}
	return r.writeTo(d, fn)
}

func (r *request) writeTo(d *storage.Database, fn func(tx *storage.Tx) error) error {
	rev, err := r.revision(d)
	if err != nil {
		return err
	}
	if rev.ReadOnly() {
		return readOnlyError(r)
	}
	var last *storage.Tx
	note := r.commandNote(d)
	for {
		err = writeWaitingForTransactions(r.ctx, d, rev.Branch, func(tx *storage.Tx) error {
			last = tx
			if note != nil {
				tx.Note(*note)
			}
			return fn(tx)
		})
		if !errors.Is(err, errWriteAgain) {
			break // a unit of work the fail point failed is written again without it
		}
	}
	if err != nil {
		return err
	}
	r.noteWrite(d, rev.Branch)
	// operationTime is the write's own time, its events' clusterTime (as
	// mongod's is its oplog entry's), so that startAtOperationTime from it
	// includes the write.
	if last != nil && last.CommitTime() != 0 {
		r.opTime = stampTime(last.CommitTime())
	} else {
		r.opTime = r.c.s.clock.tickWrite()
	}
	return nil
}

// writeWaitingForTransactions is WriteBranch for every plain write (the
// commands, $out and $merge, TTL deletes), which must wait while an open
// transaction holds a document it changes: it tries again, after a pause
// that grows to 50 ms, until the transaction ends or the command's time
// runs out. fn starts afresh on each try.
func writeWaitingForTransactions(ctx context.Context, d *storage.Database, branch string, fn func(tx *storage.Tx) error) error {
	pause := time.Millisecond
	for {
		err := d.WriteBranch(ctx, branch, fn)
		if !errors.Is(err, storage.ErrWriteConflict) {
			return err
		}
		select {
		case <-ctx.Done():
			return mongoerr.Interruption(ctx.Err())
		case <-time.After(pause):
		}
		pause = min(2*pause, 50*time.Millisecond)
	}
}

func readOnlyError(r *request) error {
	return mongoerr.New(mongoerr.ReadOnlyRevision,
		"cannot write to %s@%s: it is a read-only revision (a tag or a commit); write to a branch", r.db, r.rev)
}

// statsSnapshot is snapshot for monitoring commands: it does not count as
// a use, so that a monitor polling every database keeps none of them open
// (storage.Engine.Visit).
func (r *request) statsSnapshot() (*storage.Snapshot, error) {
	snap := storage.EmptySnapshot()
	err := r.c.s.engine.Visit(r.ctx, r.db, func(d *storage.Database) error {
		rev, err := r.revision(d)
		if err != nil {
			return err
		}
		snap, err = d.SnapshotAt(r.ctx, rev)
		return err
	})
	return snap, err
}

// lacksListDatabases reports an authenticated user without the
// listDatabases action, who sees only the databases its roles grant
// something on (mongod's authorizedDatabases).
func (r *request) lacksListDatabases() bool {
	if !r.c.s.cfg.Auth {
		return false
	}
	a := r.c.authState()
	return a.user != nil && !a.privs.Allows(auth.ListDatabases, "admin")
}

func cmdListDatabases(r *request) (bsoncore.Document, error) {
	var filter bsoncore.Document
	var nameOnly bool
	authorizedOnly := r.lacksListDatabases()
	err := r.parseArgs(map[string]fieldHandler{
		"filter":              r.optDocArg("filter", &filter),
		"nameOnly":            r.boolArg("nameOnly", &nameOnly),
		"authorizedDatabases": r.boolArg("authorizedDatabases", &authorizedOnly),
	})
	if err != nil {
		return nil, err
	}
	if !authorizedOnly && r.lacksListDatabases() {
		return nil, mongoerr.New(mongoerr.Unauthorized, "not authorized on admin to execute command { listDatabases: 1, authorizedDatabases: false }")
	}
	var match *query.Filter
	if filter != nil {
		if match, err = query.CompileFilter(filter); err != nil {
			return nil, err
		}
	}
	names, err := r.c.s.engine.DatabaseNames()
	if err != nil {
		return nil, err
	}
	// mongod lists admin, config and local from its start, standalone or
	// in a replica set: admin holds system.version (here with the users
	// and roles, auth_collections.go), config the sessions, local the
	// startup log and the oplog.
	for _, internal := range []string{"admin", "config", "local"} {
		if !slices.Contains(names, internal) {
			names = append(names, internal)
		}
	}
	slices.Sort(names)
	privs := r.c.authState().privs
	names = slices.DeleteFunc(names, func(name string) bool { return authorizedOnly && !privs.CanUse(name) })
	entries, sizes, err := r.databaseEntries(names, nameOnly)
	if err != nil {
		return nil, err
	}
	var total int64
	arr := bsoncore.NewArrayBuilder()
	for i, entry := range entries {
		if match != nil && !match.Match(entry) {
			continue
		}
		total += sizes[i]
		arr.AppendDocument(entry)
	}
	b := bsoncore.NewDocumentBuilder().AppendArray("databases", arr.Build())
	if !nameOnly {
		b.AppendInt64("totalSize", total).AppendInt64("totalSizeMb", total>>20)
	}
	return b.AppendDouble("ok", 1).Build(), nil
}

// databaseEntries are listDatabases' entries of names, and their sizes.
// Each reads its directory's sizes and its catalog, which wait on the
// file system more than they compute: a few run at once (1,000 databases
// listed in 52-90 ms one by one).
func (r *request) databaseEntries(names []string, nameOnly bool) ([]bsoncore.Document, []int64, error) {
	entries, sizes := make([]bsoncore.Document, len(names)), make([]int64, len(names))
	if nameOnly {
		for i, name := range names {
			entries[i] = bsoncore.NewDocumentBuilder().AppendString("name", name).Build()
		}
		return entries, sizes, nil
	}
	var g errgroup.Group
	g.SetLimit(2 * runtime.GOMAXPROCS(0))
	for i, name := range names {
		g.Go(func() error {
			sizes[i] = r.c.s.engine.SizeOnDisk(name)
			if name == "admin" {
				sizes[i] += r.c.s.users.FileSize() // admin's authorization collections
			}
			var err error
			entries[i], err = r.databaseEntry(name, sizes[i])
			return err
		})
	}
	return entries, sizes, g.Wait()
}

func (r *request) databaseEntry(name string, size int64) (bsoncore.Document, error) {
	b := bsoncore.NewDocumentBuilder().AppendString("name", name)
	empty := true
	// Not a use, and answered from the catalog: listing databases must not
	// reopen the idle ones (storage.Engine.Visit).
	err := r.c.s.engine.Visit(r.ctx, name, func(d *storage.Database) error {
		cat, err := d.Catalog(r.ctx)
		for _, bc := range cat {
			if bc.Branch == storage.DefaultBranch {
				empty = len(bc.Collections) == 0
			}
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if name == "admin" {
		empty = false // system.version is always there
	}
	return b.AppendInt64("sizeOnDisk", size).AppendBoolean("empty", empty).Build(), nil
}

func cmdDropDatabase(r *request) (bsoncore.Document, error) {
	if err := r.parseArgs(nil); err != nil {
		return nil, err
	}
	// Cursors stop reading before the files go.
	r.c.s.cursors.killNamespace(r.db, "", "", cursorKilledError("database dropped"))
	if err := r.c.s.engine.DropDatabaseBy(r.db, r.loggedInUser()); err != nil {
		return nil, err
	}
	r.c.s.forgetCheckouts(r.db)
	r.c.s.profiler.forgetDatabase(r.db)
	return okReply(), nil // mongod 8 answers no more, the database there or not
}

// loggedInUser is the connection's user as "name@db" ("" when none).
func (r *request) loggedInUser() string {
	a := r.c.authState()
	if a.user == nil {
		return ""
	}
	return a.user.Name + "@" + a.user.DB
}

func cmdDBStats(r *request) (bsoncore.Document, error) {
	scale := int64(1)
	var freeStorage bool
	err := r.parseArgs(map[string]fieldHandler{"scale": r.scaleArg(&scale), "freeStorage": r.boolArg("freeStorage", &freeStorage)})
	if err != nil {
		return nil, err
	}
	snap, err := r.statsSnapshot()
	if err != nil {
		return nil, err
	}
	var objects, dataSize, storageSize, indexes, indexSize, views int64
	colls := snap.Collections()
	for _, c := range colls {
		if _, isView := viewOf(c); isView {
			views++
			continue
		}
		st, err := r.collectionStats(snap, c.Name)
		if err != nil {
			return nil, err
		}
		objects += st.count
		dataSize += st.dataSize
		storageSize += st.storageSize
		indexes += int64(len(st.indexSizes)) + 1 // and the _id index
		indexSize += st.indexSize
	}
	// The sizes are the collections' and indexes' as collStats reports
	// them (stats.go), so that they add up; what the database's files hold
	// beyond them (the history of its commits, the collections drop keeps
	// for dumboUndrop, what dumboGC would reclaim) is its free storage.
	total := storageSize + indexSize
	onDisk := r.c.s.engine.SizeOnDisk(r.db)
	free := max(onDisk-total, 0)
	avgObjSize := 0.0
	if objects > 0 {
		avgObjSize = float64(dataSize) / float64(objects)
	}
	// mongod's types: its reply is typed, views and scaleFactor longs.
	b := bsoncore.NewDocumentBuilder().
		AppendString("db", r.db).
		AppendValue("collections", value.Count(int64(len(colls))-views)).
		AppendInt64("views", views).
		AppendValue("objects", value.Count(objects)).
		AppendDouble("avgObjSize", avgObjSize).
		AppendValue("dataSize", value.Count(dataSize/scale)).
		AppendValue("storageSize", value.Count(storageSize/scale))
	if freeStorage {
		b.AppendValue("freeStorageSize", value.Count(free/scale))
	}
	b.AppendValue("indexes", value.Count(indexes)).AppendValue("indexSize", value.Count(indexSize/scale))
	if freeStorage {
		// The files are shared by collections and indexes: their free
		// space is counted once, as the collections'.
		b.AppendValue("indexFreeStorageSize", value.Count(0))
	}
	b.AppendValue("totalSize", value.Count(total/scale))
	if freeStorage {
		b.AppendValue("totalFreeStorageSize", value.Count(free/scale))
	}
	b.AppendInt64("scaleFactor", scale)
	r.appendFilesystemSize(b, scale, onDisk > 0)
	if err := r.droppedStats(b, scale); err != nil {
		return nil, err
	}
	return b.AppendDouble("ok", 1).Build(), nil
}

// appendFilesystemSize adds dbStats' fsUsedSize and fsTotalSize: the
// used and total bytes of the file system that holds the data directory
// (-1 each when it cannot be read; 0 each for a database that does not
// exist, as mongod answers).
func (r *request) appendFilesystemSize(b *bsoncore.DocumentBuilder, scale int64, exists bool) {
	var fs unix.Statfs_t
	if !exists {
		b.AppendValue("fsUsedSize", value.Count(0)).AppendValue("fsTotalSize", value.Count(0))
		return
	}
	if err := unix.Statfs(r.c.s.engine.Dir(), &fs); err != nil {
		b.AppendValue("fsUsedSize", value.Count(-1)).AppendValue("fsTotalSize", value.Count(-1))
		return
	}
	total := int64(fs.Blocks) * int64(fs.Bsize)
	used := total - int64(fs.Bavail)*int64(fs.Bsize)
	b.AppendValue("fsUsedSize", value.Count(used/scale)).AppendValue("fsTotalSize", value.Count(total/scale))
}

// droppedStats adds to dbStats the collections drop keeps for dumboUndrop
// and their size when dropped, when there are any: space the database's
// files hold beyond its collections. Like the rest of dbStats, it is no
// use of the database (Engine.Visit).
func (r *request) droppedStats(b *bsoncore.DocumentBuilder, scale int64) error {
	var kept []storage.DroppedCollection
	err := r.c.s.engine.Visit(r.ctx, r.db, func(d *storage.Database) error {
		var err error
		kept, err = d.DroppedCollections(r.ctx)
		return err
	})
	if err != nil || len(kept) == 0 {
		return err
	}
	var size int64
	for _, dc := range kept {
		size += dc.Bytes
	}
	b.AppendValue("droppedCollections", value.Count(int64(len(kept)))).
		AppendValue("droppedCollectionsSize", value.Count(size/scale))
	return nil
}
