// Package storage owns DumboDB's data on disk. An Engine (engine.go) locks
// a data directory and opens its databases; each Database (database.go) is
// one Dolt chunk store, one write-ahead log and its branches, recovered
// at open (database_recover.go).
//
// A branch's state is a root value (root.go) naming the catalog, one
// prolly map of documents per collection, one map per secondary index
// (index*.go) and, while a merge is stopped at conflicts, the merge state
// and conflict maps. Documents from LargeDocThreshold bytes on are stored
// as path-indexed trees (package storage/doctree).
//
// Writes: a Tx (tx.go) runs on a branch under its writer lock, against the
// published state, and records its changes as edits held in memory over
// the last checkpointed maps (overlay.go). Its logical record
// (walrecord.go) is appended to the write-ahead log (package storage/wal),
// the new state is published to readers at once, and Write returns once
// the log has made the record durable (group commit). If a log write
// fails, every branch goes back to its newest state whose records are
// durable. Checkpoints (checkpoint.go) fold the edits into new prolly maps
// and move the branch's Dolt working set, recording the last log record
// they include; recovery loads each branch's working set and replays the
// log after it. A checkpoint holds the writer lock only to freeze the
// edits it folds and to swap the folded maps in; the edit budget starts
// one in the background (checkpoint_budget.go, running beside the writers:
// docs/design/durability.md). Readers take a Snapshot (snapshot.go) and
// never wait for writers. An update of a large document's top-level fields
// reads and writes those fields alone: its edit holds the document as a
// rope of shared elements and its record is a field record
// (fieldupdate.go, docrope.go, walfields.go; docs/design/large-documents.md).
//
// Creating a database (docs/design/resources.md, "Creating a database"):
// a creation takes a spare directory with its log prepared (spares.go);
// the Dolt store is written by the first checkpoint, with main's initial
// commit (birth.go); which directories are databases, spares or drops
// being removed is in dbdirs.go.
//
// Tree nodes: each database reads and writes prolly tree nodes through a
// node store of ours (nodestore.go), which caches the decoded nodes in the
// engine's node cache (nodecache.go: one for every database, bounded in
// bytes, purged per database by GC and closes). When a branch's durable
// root changes, the nodes of the trees it replaced leave the cache
// (nodeforget.go), so that the cache holds current trees rather than every
// version checkpoints wrote (docs/design/resources.md, "The node cache").
//
// Capped collections (capped.go, capped_rebuild.go, capped_scan.go,
// docs/format/capped.md, docs/design/capped.md): a Tx keeps each capped
// collection's insertion order (record id -> _id key and back) on every
// write, trims the oldest documents when an insert takes the collection
// over its size or count, and every scan of a capped collection yields
// insertion order; checkpoints fold the order map into the root with the
// documents, and a merge writes it anew (ours' order, then theirs' new
// documents).
//
// Retryable writes: the outcomes of their statements travel in the log
// record of their write and are saved to the database's retry file before
// each checkpoint (retry.go, docs/format/retry.md), so that a retry finds
// them after a restart or a crash.
//
// Multi-statement transactions (txn.go): a Txn runs on a private Tx over a
// branch's state, holds the documents it writes field by field (first
// writer wins per top-level field) and commits by checking and replaying
// its changes onto the current state, merging documents others changed
// in other fields. A transaction over several databases commits through
// CommitTxns (txn_multi.go): prepared records in each database's log and
// one decision in the engine's decision log (txnlog.go,
// docs/format/txnlog.md). Each branch keeps its recent states by the
// engine clock's time (history.go), for reads at a past time and for
// transactions that read every database at one point in time.
//
// Change events: a Tx notes each change it makes with the documents before
// and after it; once the write's log record is durable, the events are
// appended to the engine's change log (changes.go, changes_capture.go,
// changes_read.go, changes_codec.go,
// docs/format/changes.md), which change streams read. Recovery rebuilds
// the events the change log lacks from the write-ahead log, so they are
// durable with their writes; version-control operations append the
// document events their state change causes.
//
// Version control runs on Dolt's commits and datasets, in the vc*.go
// files: commits, branches, tags and reset (vc.go, which also holds
// lockedBranch, the checkpoint under the branch's writer lock each
// operation starts with), revisions and their resolution (vc_revision.go,
// with SnapshotAt), commit history (vc_history.go), diff and status
// (vc_diff.go), merge (vc_merge.go, vc_merge_large.go for doctrees,
// vc_merge_indexes.go for index specs, vc_merge_unique.go for unique
// indexes' clashes, vc_mergebase.go for the merge
// bases), conflicts, cherry-pick and revert
// (vc_conflicts.go) and rebase (vc_rebase.go). They are methods of
// Database, sharing its branches, locks and Dolt handles with writes and
// checkpoints. GC (gc.go, pins.go) keeps what any ref or open snapshot
// reaches, and the states kept by time too; a database whose store has
// doubled since its last GC runs one after a checkpoint (autogc.go).
//
// Data in and out: a history bundle (bundle.go, docs/format/bundle.md)
// is a database's refs and the chunks they reach in one file, written
// from and restored into the store with the remotes' chunk records;
// uploads (upload.go) gather what a client sends in pieces. A bulk load
// (bulkload.go, docs/design/bulk-load.md) inserts many documents into a
// branch without the log and folds them in one checkpoint. Dropped
// databases (undrop.go) and collections (undrop_collection.go) are kept
// for undrop, the collections as commits no branch reaches.
//
// The byte layouts of what this package writes are in docs/format/root.md,
// docs/format/wal.md, docs/format/retry.md, docs/format/txnlog.md,
// docs/format/changes.md, docs/format/doctree.md, docs/format/capped.md,
// docs/format/bundle.md and docs/format/undrop.md; the design in
// docs/design/durability.md, docs/design/transactions.md,
// docs/design/change-streams.md and docs/design/version-control.md. Only this
// package imports Dolt.
package storage
