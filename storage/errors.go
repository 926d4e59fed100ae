package storage

import "errors"

// Sentinel errors of the storage package. Callers test them with errors.Is;
// the server maps each to its MongoDB error code.
var (
	// ErrDataDirLocked: another process holds the data directory.
	ErrDataDirLocked = errors.New("data directory is in use by another dumbodb process")
	// ErrDuplicateKey: an insert or rename would give two documents one _id.
	ErrDuplicateKey = errors.New("duplicate key")
	// ErrNamespaceExists: the collection to create (or rename to) exists.
	ErrNamespaceExists = errors.New("collection already exists")
	// ErrNamespaceNotFound: the collection does not exist.
	ErrNamespaceNotFound = errors.New("collection does not exist")
	// ErrKeyTooLong: an encoded _id is longer than index.MaxKeySize.
	ErrKeyTooLong = errors.New("_id key too long")
	// ErrDatabaseDiffersInCase: a database of the same name in another case exists.
	ErrDatabaseDiffersInCase = errors.New("database name differs only in case from an existing database")
	// ErrClosed: the engine or the database was closed (or dropped).
	ErrClosed = errors.New("storage closed")
	// ErrBranchNotFound: no branch has that name.
	ErrBranchNotFound = errors.New("branch not found")
)
