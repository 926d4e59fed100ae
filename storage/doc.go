// Package storage owns DumboDB's data on disk: one Dolt chunk store per
// database, the root value that holds a branch's collections and catalog,
// snapshots for readers, serialised write transactions, and (in later work)
// the write-ahead log, commits, branches, diff and merge.
//
// The byte layout of what this package writes is in docs/format/root.md.
// Only this package imports Dolt.
package storage
