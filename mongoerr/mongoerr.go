// Package mongoerr owns the MongoDB error vocabulary shared by every layer:
// the numeric codes, their codeName strings, and the Error type that carries
// both to the wire. It sits at the bottom of the import graph so that query,
// index, storage and server can all return errors in MongoDB's shape without
// importing each other.
package mongoerr

import (
	"context"
	"errors"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Code is a MongoDB server error code (src/mongo/base/error_codes.yml).
//
// The constants of type Code are the one table of codes: each is named as
// mongod names its code (the reply's codeName), and a code that mongod
// knows only by its number, one of its assertions, is Location<code>.
// code_string.go, which `go generate` writes from the constants, holds
// the names that Name and CodeNamed look up, so no list of names is kept
// by hand; a test fails when it is older than the constants.
//
//go:generate go tool stringer -type=Code
type Code int32

// The codes DumboDB returns.
const (
	InternalError                      Code = 1
	BadValue                           Code = 2
	NoSuchKey                          Code = 4
	Unauthorized                       Code = 13
	AuthenticationFailed               Code = 18
	UserNotFound                       Code = 11
	RoleNotFound                       Code = 31
	MechanismUnavailable               Code = 334
	Location51003                      Code = 51003   // createUser of a user that exists
	Location51002                      Code = 51002   // createRole of a role that exists
	Location4886600                    Code = 4886600 // apiStrict or apiDeprecationErrors without apiVersion
	APIVersionError                    Code = 322
	APIStrictError                     Code = 323
	InvalidRoleModification            Code = 49
	TypeMismatch                       Code = 14
	Overflow                           Code = 15
	InvalidLength                      Code = 16
	IllegalOperation                   Code = 20
	EmptyArrayOperation                Code = 21
	InvalidBSON                        Code = 22
	LockTimeout                        Code = 24
	NamespaceNotFound                  Code = 26
	IndexNotFound                      Code = 27
	PathNotViable                      Code = 28
	ConflictingUpdateOperators         Code = 40
	CursorNotFound                     Code = 43
	NamespaceExists                    Code = 48
	MaxTimeMSExpired                   Code = 50
	DollarPrefixedFieldName            Code = 52
	InvalidIdField                     Code = 53
	NotSingleValueField                Code = 54
	CommandNotFound                    Code = 59
	ImmutableField                     Code = 66
	InvalidOptions                     Code = 72
	InvalidNamespace                   Code = 73
	IndexAlreadyExists                 Code = 68 // a createIndexes spec identical to an earlier one of the same command
	IndexOptionsConflict               Code = 85
	IndexKeySpecsConflict              Code = 86
	OperationFailed                    Code = 96
	DocumentValidationFailure          Code = 121
	NotImplemented                     Code = 238
	CommandNotSupported                Code = 115
	InvalidUUID                        Code = 207
	ProtocolError                      Code = 17
	BSONObjectTooLarge                 Code = 10334
	DuplicateKey                       Code = 11000
	Interrupted                        Code = 11601
	ExceededMemoryLimit                Code = 146
	QueryPlanKilled                    Code = 175
	CappedPositionLost                 Code = 136
	CursorKilled                       Code = 237
	InvalidPipelineOperator            Code = 168
	FailedToParse                      Code = 9
	UnknownError                       Code = 8
	NotWritablePrimary                 Code = 10107
	OutOfDiskSpace                     Code = 14031
	OperationNotSupportedInTransaction Code = 263
	NoQueryExecutionPlans              Code = 291
	NoReplicationEnabled               Code = 76
	ShutdownInProgress                 Code = 91
	InvalidReplicaSetConfig            Code = 93
	NoSuchSession                      Code = 206
	WriteConflict                      Code = 112
	ConflictingOperationInProgress     Code = 117
	NoSuchTransaction                  Code = 251
	TransactionCommitted               Code = 256
	TransactionTooOld                  Code = 225
	SnapshotTooOld                     Code = 239
	Location31368                      Code = 31368 // awaitable hello needs both topologyVersion and maxAwaitTimeMS
	Location50768                      Code = 50768 // txnNumber on a command that is not a retryable write
	Location50736                      Code = 50736 // getMore in a session of a cursor opened without one
	Location50737                      Code = 50737 // getMore without a session of a cursor opened in one
	Location50738                      Code = 50738 // getMore in another session than the cursor's
	ClientMetadataCannotBeMutated      Code = 186   // client metadata after a connection's first hello
	// Write concerns a deployment cannot satisfy (writeConcernError).
	UnknownReplWriteConcern   Code = 79
	UnsatisfiableWriteConcern Code = 100
	// Atlas Search, which only Atlas (or its local deployment) has.
	SearchNotEnabled Code = 31082
	// Views.
	ViewDepthLimitExceeded    Code = 165
	CommandNotSupportedOnView Code = 166
	OptionNotSupportedOnView  Code = 167
	GraphContainsCycle        Code = 5
	// Change streams.
	NoMatchingDocument      Code = 47
	InvalidResumeToken      Code = 260
	ChangeStreamFatalError  Code = 280
	ChangeStreamHistoryLost Code = 286
	Location40573           Code = 40573 // $changeStream where the topology cannot stream
	Location40602           Code = 40602 // $changeStream not the first stage
	// DumboDB's own codes, for version control (20000-20099).
	ReadOnlyRevision       Code = 20000 // a write to a tag or commit snapshot
	RevisionNotFound       Code = 20001
	MergeConflict          Code = 20002
	NothingToCommit        Code = 20003
	RefExists              Code = 20004
	BranchUnmerged         Code = 20005
	DirtyWorkingSet        Code = 20006
	MergeInProgress        Code = 20007
	NoMergeInProgress      Code = 20008
	UnresolvedConflicts    Code = 20009
	NotFastForward         Code = 20010
	RemoteNotFound         Code = 20011 // no remote of that name, or no store at its URL
	RemoteExists           Code = 20012
	NoUpstream             Code = 20013 // a pull or push names no remote and the branch has none
	QueryFeatureNotAllowed Code = 224
	Location31249          Code = 31249 // projection path collision
	Location31254          Code = 31254 // cannot do exclusion in inclusion projection
	Location31253          Code = 31253 // cannot do inclusion in exclusion projection
	Location15974          Code = 15974 // bad sort value
	Location15973          Code = 15973 // sort key must be a number or $meta
	Location17276          Code = 17276 // $in needs an array ($nin too)
	// Geo.
	Location16755 Code = 16755 // Can't extract geo keys (a 2dsphere or 2d key of a bad geometry)
	Location13027 Code = 13027 // a point outside a 2d index's [min, max)
	Location16605 Code = 16605 // $geoNear without near
	Location16606 Code = 16606 // $geoNear without a string distanceField
	Location16607 Code = 16607 // $geoNear includeLocs not a string
	Location40227 Code = 40227 // $geoNear with its own collation
	Location40603 Code = 40603 // $geoNear not the first stage
	// Text search.
	CannotCreateIndex Code = 67
	// Codes with names of their own that the layers below return.
	InvalidIndexSpecificationOption Code = 197
	CannotIndexParallelArrays       Code = 171
	ConversionFailure               Code = 241
	IncompatibleCollationVersion    Code = 161
	InterruptedAtShutdown           Code = 11600
	// collMod's index argument.
	CannotConvertIndexToUnique Code = 359
	AmbiguousIndexKeyPattern   Code = 181
	Location17261              Code = 17261 // a document's language override field is not a string
	Location17262              Code = 17262 // a document's language override names an unsupported language
	Location16675              Code = 16675 // an array in a compound text index's prefix or suffix field
	Location17313              Code = 17313 // $match with $text not the first stage
	Location40218              Code = 40218 // text score metadata asked for without a $text
)

// Codes DumboDB does not raise but a fail point can be given, that are
// in the categories below: what drivers retry and resume after.
const (
	HostUnreachable                    Code = 6
	HostNotFound                       Code = 7
	NetworkTimeout                     Code = 89
	FailedToSatisfyReadPreference      Code = 133
	ReadConcernMajorityNotAvailableYet Code = 134
	StaleEpoch                         Code = 150
	PrimarySteppedDown                 Code = 189
	RetryChangeStream                  Code = 234
	ExceededTimeLimit                  Code = 262
	SocketException                    Code = 9001
	InterruptedDueToReplStateChange    Code = 11602
	StaleConfig                        Code = 13388
	NotPrimaryNoSecondaryOk            Code = 13435
	NotPrimaryOrSecondary              Code = 13436
	// Codes mongod labels TransientTransactionError in a transaction.
	SnapshotUnavailable              Code = 246
	StaleDbVersion                   Code = 249
	StaleChunkHistory                Code = 250
	PreparedTransactionInProgress    Code = 267
	MigrationConflict                Code = 272
	ShardCannotRefreshDueToLocksHeld Code = 343
	InternalTransactionNotSupported  Code = 358
)

// Category is a set of mongod's error categories (error_codes.yml's
// error_categories), the ones that decide the error labels mongod gives:
// whether a driver retries a write or resumes a change stream, and
// whether the error carries the server's topologyVersion.
type Category uint8

const (
	NetworkError Category = 1 << iota
	RetriableError
	NeedRetargettingError
	NonResumableChangeStreamError
	SnapshotError
	NotPrimaryError
)

// categories are each code's categories, as mongod's error_codes.yml
// gives them, for the codes declared here that are in any.
var categories = map[Code]Category{
	HostUnreachable:                    NetworkError | RetriableError,
	HostNotFound:                       NetworkError | RetriableError,
	NetworkTimeout:                     NetworkError | RetriableError,
	ShutdownInProgress:                 RetriableError,
	ReadConcernMajorityNotAvailableYet: RetriableError,
	StaleEpoch:                         NeedRetargettingError,
	PrimarySteppedDown:                 RetriableError | NotPrimaryError,
	ExceededTimeLimit:                  RetriableError,
	ChangeStreamFatalError:             NonResumableChangeStreamError,
	ChangeStreamHistoryLost:            NonResumableChangeStreamError,
	SocketException:                    NetworkError | RetriableError,
	NotWritablePrimary:                 RetriableError | NotPrimaryError,
	InterruptedAtShutdown:              RetriableError,
	InterruptedDueToReplStateChange:    RetriableError | NotPrimaryError,
	StaleConfig:                        NeedRetargettingError,
	NotPrimaryNoSecondaryOk:            RetriableError | NotPrimaryError,
	NotPrimaryOrSecondary:              RetriableError | NotPrimaryError,
	SnapshotTooOld:                     SnapshotError,
	SnapshotUnavailable:                SnapshotError,
	StaleChunkHistory:                  SnapshotError,
	MigrationConflict:                  SnapshotError,
	InternalTransactionNotSupported:    RetriableError,
}

// In reports whether c is in any of the categories of cat.
func (c Code) In(cat Category) bool { return categories[c]&cat != 0 }

// Name is the codeName MongoDB reports for c: the name of its constant. A
// code with no constant (one a fail point was given) is "Location<code>",
// as mongod names the codes of its assertions.
func (c Code) Name() string {
	if name, ok := _Code_map[c]; ok {
		return name
	}
	return fmt.Sprintf("Location%d", int32(c))
}

// CodeNamed is the code Name calls name, if a constant has that name.
func CodeNamed(name string) (Code, bool) {
	c, ok := codesByName[name]
	return c, ok
}

// codesByName is code_string.go's table the other way round.
var codesByName = func() map[string]Code {
	m := make(map[string]Code, len(_Code_map))
	for c, name := range _Code_map {
		m[name] = c
	}
	return m
}()

// Error is a MongoDB command error: what becomes {ok: 0, code, codeName, errmsg}.
type Error struct {
	Code Code
	Msg  string
	// Info holds extra reply fields (e.g. per-collection conflict counts).
	Info bsoncore.Document
}

func (e *Error) Error() string { return e.Msg }

// New returns an *Error with a formatted message.
func New(c Code, format string, args ...any) *Error {
	return &Error{Code: c, Msg: fmt.Sprintf(format, args...)}
}

// As extracts the *Error in err's chain, or wraps err as an InternalError so
// that every failure reaches the client in MongoDB's shape. A context's
// error that arrives unmapped (from a library that checks the context
// itself) becomes Interruption's.
func As(err error) *Error {
	var me *Error
	if errors.As(err, &me) {
		return me
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return Interruption(err)
	}
	return &Error{Code: InternalError, Msg: err.Error()}
}

// Interruption is the error of an operation its context stopped, given the
// context's error: MaxTimeMSExpired once the deadline (maxTimeMS) passed,
// Interrupted when the context was cancelled (the client went away, the
// operation or its cursor was killed).
func Interruption(err error) *Error {
	if errors.Is(err, context.DeadlineExceeded) {
		return New(MaxTimeMSExpired, "operation exceeded time limit")
	}
	return New(Interrupted, "operation was interrupted")
}

// Codes added by the query package. Location codes have no codeName of
// their own, so Name reports "Location<code>" for them.
const (
	EmptyFieldName Code = 56
	Location15975  Code = 15975 // sort direction must be 1 or -1
	Location31250  Code = 31250 // projection path collision (prefix seen later)
	Location51075  Code = 51075 // regex options given twice
	Location51091  Code = 51091 // invalid regular expression
	Location51108  Code = 51108 // invalid regex flag
	Location28724  Code = 28724 // $slice projection limit must be positive
	Location16410  Code = 16410 // field path component starts with '$'
	Location15998  Code = 15998 // field path component is empty
	Location40352  Code = 40352 // field path is empty
)

// Codes of the commands' argument parsing.
const (
	Location40414 Code = 40414 // a required field is missing
	Location40415 Code = 40415 // a field the command does not take
	Location51024 Code = 51024 // a number below the field's minimum
	Location51198 Code = 51198 // constants (c) on an update that is not a pipeline
)

// Codes of capped collections.
const (
	Location6127800 Code = 6127800 // a clustered capped collection outside test commands
	Location17152   Code = 17152   // $out to a capped collection
)

// Codes of OP_MSG parsing that a client's message can earn.
const (
	Location40431 Code = 40431 // two document sequences with one identifier
	Location40433 Code = 40433 // a document sequence named like a body field
)

// Codes of the aggregation stages' memory limits.
const (
	QueryExceededMemoryLimitNoDiskUseAllowed Code = 292     // a blocking stage without allowDiskUse
	Location4568                             Code = 4568    // $lookup's matches for one document
	Location40099                            Code = 40099   // $graphLookup's search
	Location4031700                          Code = 4031700 // $facet's output document
)

// Codes of server-side JavaScript ($where, $function, $accumulator,
// mapReduce).
const (
	JSInterpreterFailure Code = 139
	Location6108304      Code = 6108304 // $where without a script engine (--noscripting)
	Location31264        Code = 31264   // $function or $accumulator without a script engine
	Location31246        Code = 31246   // mapReduce's emit without a script engine
	Location31241        Code = 31241   // mapReduce's reduce without a script engine
	Location31292        Code = 31292   // mapReduce's emits past internalQueryMaxJsEmitBytes
	Location31392        Code = 31392   // mapReduce: one value too large to reduce
	Location31220        Code = 31220   // emit not given exactly 2 arguments
	Location31319        Code = 31319   // mapReduce output to a system collection
	Location15958        Code = 15958   // mapReduce limit not positive
	Location15976        Code = 15976   // mapReduce sort without a key
	// $function's arguments
	Location31260 Code = 31260 // not an object
	Location31261 Code = 31261 // no body
	Location31262 Code = 31262 // body neither string nor code
	Location31263 Code = 31263 // no args
	Location31266 Code = 31266 // args not an array
	Location31418 Code = 31418 // no lang
	Location31419 Code = 31419 // lang not "js"
	Location31422 Code = 31422 // _internalSetObjToThis with other than one argument
	Location31432 Code = 31432 // body not a constant
	// $accumulator's arguments
	Location4544701 Code = 4544701 // a function not constant
	Location4544702 Code = 4544702 // a function neither string nor code
	Location4544703 Code = 4544703 // not an object
	Location4544704 Code = 4544704 // lang not a string
	Location4544705 Code = 4544705 // lang not "js"
	Location4544706 Code = 4544706 // an unexpected field
	Location4544707 Code = 4544707 // no init
	Location4544708 Code = 4544708 // no accumulate
	Location4544709 Code = 4544709 // no merge
	Location4544710 Code = 4544710 // no accumulateArgs
	Location4544711 Code = 4544711 // initArgs not an array
	Location4544712 Code = 4544712 // accumulateArgs not an array
	Location4545000 Code = 4545000 // one document's arguments past the BSON limit
)

// SearchNotEnabledError is a community mongod's answer to the Atlas
// Search commands and stages.
func SearchNotEnabledError() *Error {
	return New(SearchNotEnabled, "Using Atlas Search Database Commands and the $listSearchIndexes aggregation stage requires additional configuration. Please connect to Atlas or an AtlasCLI local deployment to enable. For more information on how to connect, see https://dochub.mongodb.org/core/atlas-cli-deploy-local-reqs")
}
