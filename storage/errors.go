package storage

import (
	"errors"
	"fmt"
	"syscall"
)

// Sentinel errors of the storage package. Callers test them with errors.Is;
// the server maps each to its MongoDB error code.
var (
	// ErrDataDirLocked: another process holds the data directory.
	ErrDataDirLocked = errors.New("data directory is in use by another dumbodb process")
	// ErrDuplicateKey: an insert or rename would give two documents one _id.
	ErrDuplicateKey = errors.New("duplicate key")
	// ErrNamespaceExists: the collection to create (or rename to) exists.
	ErrNamespaceExists = errors.New("collection already exists")
	// ErrIsView: a document or index write to a view (its catalog
	// options hold viewOn); views are read-only.
	ErrIsView = errors.New("is a view, not a collection")
	// ErrNamespaceNotFound: the collection does not exist.
	ErrNamespaceNotFound = errors.New("collection does not exist")
	// ErrInvalidDatabaseName: the name would not be a directory directly
	// inside the data directory.
	ErrInvalidDatabaseName = errors.New("invalid database name")
	// ErrDatabaseDiffersInCase: a database of the same name in another case exists.
	ErrDatabaseDiffersInCase = errors.New("database name differs only in case from an existing database")
	// ErrClosed: the engine or the database was closed (or dropped).
	ErrClosed = errors.New("storage closed")
	// ErrBranchNotFound: no branch has that name.
	ErrBranchNotFound = errors.New("branch not found")

	// ErrDocumentValidation: a conflict's resolution is a document the
	// collection's validator refuses.
	ErrDocumentValidation = errors.New("Document failed validation") //lint:ignore ST1005 mongod's message, which clients see

	// ErrDocumentTooLarge: an update by field (UpdateFields) would make
	// a document larger than its limit.
	ErrDocumentTooLarge = errors.New("document too large after update")

	// ErrIndexNotFound: no index has that name.
	ErrIndexNotFound = errors.New("index not found")
	// ErrWriteConflict: the document is held by another open transaction,
	// or changed since the transaction's snapshot; a plain write that meets
	// a held document may try again once the transaction ends.
	ErrWriteConflict = errors.New("write conflict")
	// ErrSnapshotTooOld: a read at a past time asks for a state the
	// branch no longer keeps (history.go).
	ErrSnapshotTooOld = errors.New("snapshot too old")
	// ErrTransactionTooOld: a retryable write names a txnNumber below the
	// session's latest.
	ErrTransactionTooOld = errors.New("transaction too old")
	// errBadRetryFile: the retry file is damaged; the database does not
	// open rather than risk running a retried write twice.
	errBadRetryFile = errors.New("damaged retry file")
	// errBadRemotesFile: the remotes file is damaged; the database does
	// not open rather than push to or pull from a guessed remote.
	errBadRemotesFile = errors.New("damaged remotes file")
	// ErrRemoteNotFound: a remote's URL names no store, or a database
	// has no remote of that name.
	ErrRemoteNotFound = errors.New("remote not found")
	// ErrRemoteExists: a remote of that name exists.
	ErrRemoteExists = errors.New("remote already exists")
	// ErrRemoteScheme: a remote URL of a scheme DumboDB does not speak.
	ErrRemoteScheme = errors.New("unsupported remote URL scheme")
	// ErrRemoteUnreachable: a remote server that did not answer (refused,
	// reset, timed out, a TLS handshake that failed).
	ErrRemoteUnreachable = errors.New("remote unreachable")
	// ErrBadRemoteURL: a remote URL that does not parse or name a store.
	ErrBadRemoteURL = errors.New("invalid remote URL")
	// ErrNoUpstream: a pull or push names no remote and its branch has no
	// upstream.
	ErrNoUpstream = errors.New("no upstream")
	// ErrDatabaseExists: a clone into a database that exists.
	ErrDatabaseExists = errors.New("database already exists")
	// ErrOutOfDiskSpace: a write failed because the file system is full.
	// Nothing of it is kept; reads go on, and writes work again once there
	// is space.
	ErrOutOfDiskSpace = errors.New("out of disk space")

	// Version control.

	// ErrRevisionNotFound: no branch, tag or commit answers to the name.
	ErrRevisionNotFound = errors.New("revision not found")
	// ErrTagNotFound: no tag has that name.
	ErrTagNotFound = errors.New("tag not found")
	// ErrDocumentNotFound: the revision has no document with that _id
	// (Blame).
	ErrDocumentNotFound = errors.New("document not found")
	// ErrNothingToCommit: the working set equals the head commit.
	ErrNothingToCommit = errors.New("nothing to commit, working set clean")
	// ErrBranchExists / ErrTagExists: the name is taken.
	ErrBranchExists = errors.New("branch already exists")
	ErrTagExists    = errors.New("tag already exists")
	// ErrBranchUnmerged: deleting would lose commits the current branch lacks.
	ErrBranchUnmerged = errors.New("branch is not fully merged")
	// ErrBranchDirty: the branch has uncommitted changes.
	ErrBranchDirty = errors.New("branch has uncommitted changes")
	// ErrDeleteDefault: main cannot be deleted.
	ErrDeleteDefault = errors.New("cannot delete the default branch")
	// ErrInvalidRefName: the name breaks Git's rules for branch and tag names.
	ErrInvalidRefName = errors.New("invalid branch or tag name")
	// ErrMergeInProgress / ErrNoMergeInProgress: a stopped merge is (not) pending.
	ErrMergeInProgress   = errors.New("a merge is in progress")
	ErrNoMergeInProgress = errors.New("no merge in progress")
	// ErrMergeConflicts: a merge, cherry-pick, revert or rebase stopped at conflicts.
	ErrMergeConflicts = errors.New("merge conflicts")
	// ErrOptionsConflict: a merge found a collection's options (a view's
	// definition, a validator) changed differently on both sides; it
	// changes nothing, so that one side can be made to agree first.
	ErrOptionsConflict = errors.New("merge conflict in collection options")
	// ErrNotFastForward: ffOnly was asked and the histories diverged, or
	// a push's target head is not an ancestor of what would replace it.
	ErrNotFastForward = errors.New("not possible to fast-forward")
	// ErrUnresolved: continuing a merge whose conflicts remain.
	ErrUnresolved = errors.New("conflicts remain unresolved")
	// ErrInvalidCommitMeta: a blank commit message, an author that is not
	// "Name <email>", or metadata too large to store.
	ErrInvalidCommitMeta = errors.New("invalid commit metadata")
	// ErrNotSingleParent: a cherry-pick or revert of a merge commit (or
	// the root commit), whose change has no one parent to be taken from.
	ErrNotSingleParent = errors.New("not a commit with one parent")
	// ErrConflictMissing: no conflict for that document.
	ErrConflictMissing = errors.New("no such conflict")

	// Bundles.

	// ErrBadBundle: a file that is no bundle, or a damaged one.
	ErrBadBundle = errors.New("not a valid bundle")
	// ErrBundleBase: an incremental bundle's base is not where it is
	// made or restored.
	ErrBundleBase = errors.New("the bundle's base is missing")
)

// diskFull marks err as ErrOutOfDiskSpace when the file system ran out of
// room (or quota), keeping the cause.
func diskFull(err error) error {
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return fmt.Errorf("%w: %w", ErrOutOfDiskSpace, err)
	}
	return err
}
