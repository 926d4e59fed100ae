// Package storage owns DumboDB's data on disk. An Engine (engine.go) locks
// a data directory and opens its databases; each Database (database.go) is
// one Dolt chunk store, one write-ahead log and its branches.
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
// log after it. Readers take a Snapshot (snapshot.go) and never wait for
// writers.
//
// Version control runs on Dolt's commits and datasets: commits, branches
// and tags (vc.go, revision.go), history (log.go), diff (diff.go), merge,
// cherry-pick and revert (merge.go, merge_large.go, mergebase.go,
// conflicts.go), rebase (rebase.go) and GC (gc.go, pins.go). Each
// operation checkpoints its branch first.
//
// The byte layouts of what this package writes are in docs/format/root.md,
// docs/format/wal.md and docs/format/doctree.md; the design in
// docs/design/durability.md and docs/design/version-control.md. Only this
// package imports Dolt.
package storage
