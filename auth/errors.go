package auth

import "errors"

// Errors of the user and role commands and of authentication; the server
// maps each to mongod's code.
var (
	// ErrUserExists: createUser of a user the database already has.
	ErrUserExists = errors.New("user already exists")
	// ErrUserNotFound: the user is not in the database.
	ErrUserNotFound = errors.New("user not found")
	// ErrRoleNotFound: a role that is neither built in nor defined.
	ErrRoleNotFound = errors.New("role not found")
	// ErrAuthFailed: wrong password, unknown user or a broken
	// conversation; the client is told only "Authentication failed.".
	ErrAuthFailed = errors.New("authentication failed")
	// ErrMechanism: a mechanism the user has no credentials for, or that
	// is not SCRAM-SHA-1 or SCRAM-SHA-256.
	ErrMechanism = errors.New("mechanism unavailable")
	// ErrBadUserDocument: a restored user or role document that cannot
	// be read, or that is of another database than the one restored.
	ErrBadUserDocument = errors.New("bad user or role document")
)
