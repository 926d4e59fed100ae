package server

import (
	"sort"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/auth"
)

// command is one entry of the command table.
type command struct {
	family  family
	name    string
	handler func(*request) (bsoncore.Document, error)
	access  access
	need    requirement // what authorization it takes (authz.go)
	help    string
	// canonical, for another spelling of a command, is the command's own
	// name: fail points and logs name the command, whatever its spelling.
	canonical string
	// apiV1: the command is in the Stable API's version 1 (MongoDB 8.0's
	// list, which names spellings, not commands), so apiStrict allows it.
	apiV1 bool
	// inTransaction: the command may run in a multi-document transaction
	// (mongod 8's list).
	inTransaction bool
	// retryableWrite: the command takes a txnNumber outside a
	// transaction, and a retry answers from the statements' outcomes.
	retryableWrite bool
	// snapshotRead: the command takes readConcern level snapshot outside
	// a transaction, as on mongod.
	snapshotRead bool
	// first is what the command's first value (under its name) is.
	first firstValue
}

// firstValue is what a command's first value is: tests that run every
// command (TestCommandArgumentsWalk) give it one of the kind.
type firstValue string

const (
	// firstAny: a collection's name, a value the command does not read,
	// or for a version-control command the ref it acts on (optional).
	firstAny       firstValue = ""
	firstBranch    firstValue = "branch"     // a branch's name, needed
	firstColl      firstValue = "collection" // a collection, for a dumbo command that needs one
	firstLevel     firstValue = "level"      // a number: profile's level
	firstFailPoint firstValue = "failPoint"  // a fail point's name
	firstList      firstValue = "list"       // sessions, users or patterns
	firstCommand   firstValue = "command"    // the document of the command explained
	firstCursorID  firstValue = "cursorID"   // a cursor's id
)

// family is what a command is for; listCommands shows it.
type family string

const (
	reads          family = "reads"
	writes         family = "writes"
	indexes        family = "indexes"
	operations     family = "cursors and operations"
	namespaces     family = "collections and databases"
	connections    family = "connections"
	sessions       family = "sessions"
	replication    family = "replication"
	diagnostics    family = "diagnostics"
	testOnly       family = "testing"
	versionControl family = "version control"
	authentication family = "authentication and users"
)

// access says where a command may run: adminOnly ones only on "admin".
type access bool

const (
	anyDatabase access = false
	adminOnly   access = true
)

// canonicalCommand is the name of the command a spelling invokes.
func canonicalCommand(name string) string {
	if c := commandsByName[name]; c != nil && c.canonical != "" {
		return c.canonical
	}
	return name
}

// commandTable lists every command, sorted by name once init has run.
// Aliases are entries of their own pointing at the same handler, and each
// version-control command also answers to a dolt* name (doltAliases).
// init fills it: an initializer would be a cycle, as listCommands reads it.
var (
	commandTable   []command
	commandsByName map[string]*command
)

func init() {
	commandTable = []command{
		{family: reads, name: "aggregate", handler: cmdAggregate, access: anyDatabase, need: needs(auth.Find), apiV1: true, inTransaction: true, snapshotRead: true, help: "runs an aggregation pipeline, a change stream ($changeStream) or a view's"},
		{family: reads, name: "count", handler: cmdCount, access: anyDatabase, need: needs(auth.Find), apiV1: true, help: "counts the documents that match a query"},
		{family: reads, name: "mapReduce", handler: cmdMapReduce, access: anyDatabase, need: needs(auth.Find), help: "runs JavaScript map, reduce and finalize functions over a collection's documents, returning the results or writing them to a collection"},
		{family: reads, name: "mapreduce", handler: cmdMapReduce, access: anyDatabase, need: needs(auth.Find), help: "alias of mapReduce"},
		{family: reads, name: "distinct", handler: cmdDistinct, access: anyDatabase, need: needs(auth.Find), inTransaction: true, snapshotRead: true, help: "returns the distinct values of a field"},
		{family: reads, name: "explain", handler: cmdExplain, access: anyDatabase, need: needs(auth.Find), apiV1: true, first: firstCommand, help: "describes how a query runs (plan and execution statistics)"},
		{family: reads, name: "find", handler: cmdFind, access: anyDatabase, need: needs(auth.Find), apiV1: true, inTransaction: true, snapshotRead: true, help: "queries documents (of a collection or a view)"},
		{family: writes, name: "delete", handler: cmdDelete, access: anyDatabase, need: needs(auth.Remove), apiV1: true, inTransaction: true, retryableWrite: true, help: "deletes documents"},
		{family: writes, name: "findAndModify", handler: cmdFindAndModify, access: anyDatabase, need: needs(auth.Find | auth.Update), apiV1: true, inTransaction: true, retryableWrite: true, help: "updates or removes one document and returns it"},
		{family: writes, name: "findandmodify", handler: cmdFindAndModify, access: anyDatabase, need: needs(auth.Find | auth.Update), inTransaction: true, retryableWrite: true, help: "legacy spelling of findAndModify", canonical: "findAndModify"},
		{family: indexes, name: "createSearchIndexes", handler: cmdSearchIndexes, access: anyDatabase, need: needs(auth.CreateIndex), help: "Atlas Search indexes: refused as on a community mongod (SearchNotEnabled)"},
		{family: indexes, name: "dropSearchIndex", handler: cmdSearchIndexes, access: anyDatabase, need: needs(auth.DropIndex), help: "Atlas Search indexes: refused as on a community mongod (SearchNotEnabled)"},
		{family: indexes, name: "updateSearchIndex", handler: cmdSearchIndexes, access: anyDatabase, need: needs(auth.CreateIndex), help: "Atlas Search indexes: refused as on a community mongod (SearchNotEnabled)"},
		{family: writes, name: "bulkWrite", handler: cmdBulkWrite, access: adminOnly, need: anyUser, retryableWrite: true, inTransaction: true, help: "runs inserts, updates and deletes over several namespaces (MongoDB 8's client bulkWrite; each op checks its own privileges)"},
		{family: writes, name: "dumboBulkLoad", handler: cmdDumboBulkLoad, access: anyDatabase, need: needs(auth.Insert), first: firstColl, help: "loads many documents into a collection at once, without the write-ahead log (upload, offset, data; finish)"},
		{family: writes, name: "insert", handler: cmdInsert, access: anyDatabase, need: needs(auth.Insert), apiV1: true, inTransaction: true, retryableWrite: true, help: "inserts documents"},
		{family: writes, name: "update", handler: cmdUpdate, access: anyDatabase, need: needs(auth.Update), apiV1: true, inTransaction: true, retryableWrite: true, help: "updates documents"},
		{family: indexes, name: "createIndexes", handler: cmdCreateIndexes, access: anyDatabase, need: needs(auth.CreateIndex), apiV1: true, inTransaction: true, help: "builds secondary indexes"},
		{family: indexes, name: "deleteIndexes", handler: cmdDropIndexes, access: anyDatabase, need: needs(auth.DropIndex), help: "legacy spelling of dropIndexes"},
		{family: indexes, name: "dropIndexes", handler: cmdDropIndexes, access: anyDatabase, need: needs(auth.DropIndex), apiV1: true, help: "drops secondary indexes"},
		{family: indexes, name: "listIndexes", handler: cmdListIndexesSpecs, access: anyDatabase, need: needs(auth.ListIndexes), apiV1: true, help: "lists the indexes of a collection"},
		{family: operations, name: "getMore", handler: cmdGetMore, access: anyDatabase, need: anyUser, apiV1: true, inTransaction: true, first: firstCursorID, help: "returns the next batch of a cursor"},
		{family: operations, name: "killCursors", handler: cmdKillCursors, access: anyDatabase, need: anyUser, apiV1: true, inTransaction: true, help: "kills cursors"},
		{family: operations, name: "currentOp", handler: cmdCurrentOp, access: adminOnly, need: needs(auth.InProg), help: "lists the operations in progress"},
		{family: operations, name: "killOp", handler: cmdKillOp, access: adminOnly, need: needs(auth.KillOp), help: "interrupts an operation by its opid"},
		{family: namespaces, name: "_mergeAuthzCollections", handler: cmdMergeAuthzCollections, access: adminOnly, need: needs(auth.CreateUser), help: "merges users and roles restored into two collections into the server's (mongorestore --restoreDbUsersAndRoles)"},
		{family: namespaces, name: "applyOps", handler: cmdApplyOps, access: adminOnly, need: needs(auth.CreateCollection), first: firstList, help: "applies oplog entries: only those that create a collection, keeping its UUID (mongorestore --preserveUUID)"},
		{family: namespaces, name: "create", handler: cmdCreate, access: anyDatabase, need: needs(auth.CreateCollection), apiV1: true, inTransaction: true, help: "creates a collection, a view, or a clustered collection, with its validator"},
		{family: namespaces, name: "collMod", handler: cmdCollMod, access: anyDatabase, need: needs(auth.CollMod), apiV1: true, help: "changes collection options: a view's definition, the validator, pre- and post-images, an index's hidden flag, TTL, prepareUnique or unique (with dryRun), a capped collection's cappedSize and cappedMax"},
		{family: namespaces, name: "convertToCapped", handler: cmdConvertToCapped, access: anyDatabase, need: needs(auth.CreateCollection), help: "replaces a collection by a capped copy of it"},
		{family: namespaces, name: "cloneCollectionAsCapped", handler: cmdCloneCollectionAsCapped, access: anyDatabase, need: needs(auth.CreateCollection), help: "copies a collection into a new capped collection"},
		{family: namespaces, name: "collStats", handler: cmdCollStats, access: anyDatabase, need: needs(auth.CollStats), help: "returns statistics about a collection"},
		{family: namespaces, name: "drop", handler: cmdDrop, access: anyDatabase, need: needs(auth.DropCollection), apiV1: true, help: "drops a collection"},
		{family: namespaces, name: "listCollections", handler: cmdListCollections, access: anyDatabase, need: needs(auth.ListCollections), apiV1: true, help: "lists the collections of a database"},
		{family: namespaces, name: "renameCollection", handler: cmdRenameCollection, access: adminOnly, need: needs(auth.RenameCollectionSameDB), help: "renames a collection"},
		{family: namespaces, name: "validate", handler: cmdValidate, access: anyDatabase, need: needs(auth.CollMod), help: "checks a collection's documents and index entries"},
		{family: namespaces, name: "dataSize", handler: cmdDataSize, access: anyDatabase, need: needs(auth.CollStats), help: "returns the bytes and count of a collection's documents"},
		{family: namespaces, name: "datasize", handler: cmdDataSize, access: anyDatabase, need: needs(auth.CollStats), help: "lower-case spelling of dataSize", canonical: "dataSize"},
		{family: namespaces, name: "dbHash", handler: cmdDBHash, access: anyDatabase, need: needs(auth.Find), help: "returns an MD5 of each collection's documents"},
		{family: namespaces, name: "compact", handler: cmdCompact, access: anyDatabase, need: needs(auth.CollMod), help: "checkpoints the database and frees the chunks nothing references"},
		{family: namespaces, name: "dbStats", handler: cmdDBStats, access: anyDatabase, need: needs(auth.DBStats), help: "returns statistics about a database"},
		{family: namespaces, name: "dbstats", handler: cmdDBStats, access: anyDatabase, need: needs(auth.DBStats), help: "lower-case spelling of dbStats", canonical: "dbStats"},
		{family: namespaces, name: "dropDatabase", handler: cmdDropDatabase, access: anyDatabase, need: needs(auth.DropDatabase), apiV1: true, help: "drops the current database"},
		{family: namespaces, name: "dumboUndrop", handler: cmdDumboUndrop, access: adminOnly, need: needs(auth.ListDatabases), help: "lists dropped databases kept for undrop, restores one or purges it"},
		{family: namespaces, name: "listDatabases", handler: cmdListDatabases, access: adminOnly, need: anyUser, apiV1: true, help: "lists databases"},
		{family: connections, name: "hello", handler: cmdHello, access: anyDatabase, need: openToAll, apiV1: true, help: "describes the server to a connecting client"},
		{family: connections, name: "isMaster", handler: cmdHello, access: anyDatabase, need: openToAll, help: "legacy spelling of hello"},
		{family: connections, name: "ismaster", handler: cmdHello, access: anyDatabase, need: openToAll, help: "legacy spelling of hello", canonical: "isMaster"},
		{family: connections, name: "ping", handler: cmdPing, access: anyDatabase, need: openToAll, apiV1: true, help: "checks that the server answers"},
		{family: connections, name: "connectionStatus", handler: cmdConnectionStatus, access: anyDatabase, need: openToAll, help: "returns the authentication state of the connection"},
		{family: connections, name: "whatsmyuri", handler: cmdWhatsMyURI, access: anyDatabase, need: openToAll, help: "returns the client's address"},
		{family: sessions, name: "startSession", handler: cmdStartSession, access: anyDatabase, need: anyUser, help: "starts a logical session"},
		{family: sessions, name: "endSessions", handler: cmdEndSessions, access: anyDatabase, need: anyUser, apiV1: true, first: firstList, help: "ends logical sessions and kills their cursors"},
		{family: sessions, name: "refreshSessions", handler: cmdRefreshSessions, access: anyDatabase, need: anyUser, apiV1: true, first: firstList, help: "keeps logical sessions from expiring"},
		{family: sessions, name: "killSessions", handler: cmdKillSessions, access: anyDatabase, need: anyUser, first: firstList, help: "kills sessions, their cursors and operations"},
		{family: sessions, name: "killAllSessions", handler: cmdKillAllSessions, access: anyDatabase, need: needs(auth.KillAnySession), first: firstList, help: "kills the sessions of the users named"},
		{family: sessions, name: "commitTransaction", handler: cmdCommitTransaction, access: adminOnly, need: anyUser, apiV1: true, inTransaction: true, help: "commits the session's transaction"},
		{family: sessions, name: "abortTransaction", handler: cmdAbortTransaction, access: adminOnly, need: anyUser, apiV1: true, inTransaction: true, help: "aborts the session's transaction"},
		{family: sessions, name: "killAllSessionsByPattern", handler: cmdKillAllSessionsByPattern, access: anyDatabase, need: needs(auth.KillAnySession), first: firstList, help: "kills the sessions matching patterns"},
		{family: authentication, name: "saslStart", handler: cmdSaslStart, access: anyDatabase, need: openToAll, apiV1: true, help: "begins a SCRAM authentication"},
		{family: authentication, name: "saslContinue", handler: cmdSaslContinue, access: anyDatabase, need: openToAll, apiV1: true, help: "continues a SCRAM authentication"},
		{family: authentication, name: "authenticate", handler: cmdAuthenticate, access: anyDatabase, need: openToAll, apiV1: true, help: "authenticates with a mechanism that is not SASL (none is enabled)"},
		{family: authentication, name: "logout", handler: cmdLogout, access: anyDatabase, need: openToAll, help: "ends the connection's authentication"},
		{family: authentication, name: "createUser", handler: cmdCreateUser, access: anyDatabase, need: needs(auth.CreateUser), help: "creates a user of the database (granting its roles needs grantRole on their databases)"},
		{family: authentication, name: "updateUser", handler: cmdUpdateUser, access: anyDatabase, need: byArguments, help: "changes a user's password, roles or custom data"},
		{family: authentication, name: "dropUser", handler: cmdDropUser, access: anyDatabase, need: needs(auth.DropUser), help: "removes a user"},
		{family: authentication, name: "dropAllUsersFromDatabase", handler: cmdDropAllUsersFromDatabase, access: anyDatabase, need: needs(auth.DropUser), help: "removes every user of the database"},
		{family: authentication, name: "usersInfo", handler: cmdUsersInfo, access: anyDatabase, need: needs(auth.ViewUser), help: "describes users"},
		{family: authentication, name: "grantRolesToUser", handler: cmdGrantRolesToUser, access: anyDatabase, need: byArguments, help: "gives a user roles"},
		{family: authentication, name: "revokeRolesFromUser", handler: cmdRevokeRolesFromUser, access: anyDatabase, need: byArguments, help: "takes roles from a user"},
		{family: authentication, name: "createRole", handler: cmdCreateRole, access: anyDatabase, need: needs(auth.CreateRole), help: "creates a role of the database (what it holds needs grantRole on those databases)"},
		{family: authentication, name: "updateRole", handler: cmdUpdateRole, access: anyDatabase, need: byArguments, help: "replaces a role's privileges or inherited roles"},
		{family: authentication, name: "dropRole", handler: cmdDropRole, access: anyDatabase, need: needs(auth.DropRole), help: "removes a role, and every grant of it"},
		{family: authentication, name: "dropAllRolesFromDatabase", handler: cmdDropAllRolesFromDatabase, access: anyDatabase, need: needs(auth.DropRole), help: "removes every role of the database"},
		{family: authentication, name: "grantPrivilegesToRole", handler: cmdGrantPrivilegesToRole, access: anyDatabase, need: byArguments, help: "adds privileges to a role"},
		{family: authentication, name: "revokePrivilegesFromRole", handler: cmdRevokePrivilegesFromRole, access: anyDatabase, need: byArguments, help: "takes privileges from a role"},
		{family: authentication, name: "grantRolesToRole", handler: cmdGrantRolesToRole, access: anyDatabase, need: byArguments, help: "makes a role inherit roles"},
		{family: authentication, name: "revokeRolesFromRole", handler: cmdRevokeRolesFromRole, access: anyDatabase, need: byArguments, help: "takes inherited roles from a role"},
		{family: authentication, name: "rolesInfo", handler: cmdRolesInfo, access: anyDatabase, need: needs(auth.ViewRole), help: "describes roles, built in and user-defined"},
		{family: replication, name: "replSetGetStatus", handler: cmdReplSetGetStatus, access: adminOnly, need: needs(auth.ReplSetGetStatus), help: "describes the replica set's one member"},
		{family: replication, name: "replSetGetConfig", handler: cmdReplSetGetConfig, access: adminOnly, need: needs(auth.ReplSetGetConfig), help: "returns the replica set's configuration"},
		{family: replication, name: "replSetInitiate", handler: cmdReplSetInitiate, access: adminOnly, need: needs(auth.ReplSetConfigure), help: "accepts a one-member configuration (the set is initiated already)"},
		{family: diagnostics, name: "convertShardKeyToHashed", handler: cmdConvertShardKeyToHashed, access: anyDatabase, need: anyUser, help: "returns the hash a hashed index stores for a value"},
		{family: diagnostics, name: "buildInfo", handler: cmdBuildInfo, access: anyDatabase, need: openToAll, help: "returns the server's version and build information"},
		{family: diagnostics, name: "buildinfo", handler: cmdBuildInfo, access: anyDatabase, need: openToAll, help: "legacy spelling of buildInfo", canonical: "buildInfo"},
		{family: diagnostics, name: "shutdown", handler: cmdShutdown, access: adminOnly, need: needs(auth.Shutdown), help: "stops the server: {shutdown: 1, force?, timeoutSecs?}"},
		{family: diagnostics, name: "fsync", handler: cmdFsync, access: adminOnly, need: needs(auth.Fsync), help: "checkpoints every database; with lock: true, freezes the data directory for a copy: {fsync: 1, lock?, fsyncLockAcquisitionTimeoutMillis?}"},
		{family: diagnostics, name: "fsyncUnlock", handler: cmdFsyncUnlock, access: adminOnly, need: needs(auth.Unlock), help: "takes one fsync lock away; writes go on when none is left"},
		{family: diagnostics, name: "getDefaultRWConcern", handler: cmdGetDefaultRWConcern, access: adminOnly, need: needs(auth.ServerStatus), help: "returns the implicit default read and write concerns"},
		{family: diagnostics, name: "setDefaultRWConcern", handler: cmdSetDefaultRWConcern, access: adminOnly, need: needs(auth.SetParameter), help: "refused: the defaults stay the implicit ones"},
		{family: diagnostics, name: "logRotate", handler: cmdLogRotate, access: adminOnly, need: needs(auth.LogRotate), help: "rotates the log file (--logpath; --logRotate rename or reopen)"},
		{family: diagnostics, name: "profile", handler: cmdProfile, access: anyDatabase, need: needs(auth.EnableProfiler), first: firstLevel, help: "reads or sets the database's profiling level (0, 1, 2), slowms, sampleRate and filter"},
		{family: diagnostics, name: "top", handler: cmdTop, access: adminOnly, need: needs(auth.Top), help: "time and count of the commands on each collection since the server started"},
		{family: diagnostics, name: "lockInfo", handler: cmdLockInfo, access: adminOnly, need: needs(auth.ServerStatus), help: "lists the locks held: none of mongod's kind"},
		{family: diagnostics, name: "connPoolStats", handler: cmdConnPoolStats, access: anyDatabase, need: needs(auth.ServerStatus), help: "describes the pools of outgoing connections: there are none"},
		{family: diagnostics, name: "hostInfo", handler: cmdHostInfo, access: anyDatabase, need: needs(auth.HostInfo), help: "returns information about the host"},
		{family: diagnostics, name: "serverStatus", handler: cmdServerStatus, access: anyDatabase, need: needs(auth.ServerStatus), help: "returns server counters"},
		{family: diagnostics, name: "listCommands", handler: cmdListCommands, access: anyDatabase, need: openToAll, help: "lists the commands this server knows"},
		{family: diagnostics, name: "getCmdLineOpts", handler: cmdGetCmdLineOpts, access: adminOnly, need: needs(auth.GetCmdLineOpts), help: "returns the command line the server started with"},
		{family: diagnostics, name: "getLog", handler: cmdGetLog, access: adminOnly, need: needs(auth.GetLog), help: "returns recent log lines"},
		{family: diagnostics, name: "setParameter", handler: cmdSetParameter, access: adminOnly, need: needs(auth.SetParameter), help: "sets the runtime parameters (transaction lifetime, snapshot history window, change-stream retention)"},
		{family: diagnostics, name: "getParameter", handler: cmdGetParameter, access: adminOnly, need: needs(auth.GetParameter), help: "returns server parameters"},
		{family: testOnly, name: "testVersion1", handler: cmdTestVersion, access: anyDatabase, need: openToAll, apiV1: true, help: "test command in API version 1 (needs --enableTestCommands)"},
		{family: testOnly, name: "testVersion2", handler: cmdTestVersion, access: anyDatabase, need: openToAll, help: "test command outside API version 1 (needs --enableTestCommands)"},
		{family: testOnly, name: "configureFailPoint", handler: cmdConfigureFailPoint, access: adminOnly, need: needs(auth.SetParameter), first: firstFailPoint, help: "test command: makes chosen commands fail (needs --enableTestCommands)"},
		{family: versionControl, name: "dumboBranch", handler: cmdDumboBranch, access: anyDatabase, need: needs(auth.VCRead), help: "creates, deletes or lists branches"},
		{family: versionControl, name: "dumboBranchStatus", handler: cmdDumboBranchStatus, access: anyDatabase, need: needs(auth.VCRead), help: "counts commits ahead and behind a base"},
		{family: versionControl, name: "dumboCheckout", handler: cmdDumboCheckout, access: anyDatabase, need: needs(auth.VCRead), first: firstBranch, help: "sets this connection's default branch for a database"},
		{family: versionControl, name: "dumboTag", handler: cmdDumboTag, access: anyDatabase, need: needs(auth.VCRead), help: "creates, deletes or lists tags"},
		{family: versionControl, name: "dumboConfig", handler: cmdDumboConfig, access: anyDatabase, need: needs(auth.VCAdmin), help: "reads or sets the database's version-control configuration (autoCommit)"},
		{family: versionControl, name: "dumboCommit", handler: cmdDumboCommit, access: anyDatabase, need: needs(auth.VCWrite), help: "commits the branch's working set"},
		{family: versionControl, name: "dumboStatus", handler: cmdDumboStatus, access: anyDatabase, need: needs(auth.VCRead), help: "shows uncommitted changes and any merge in progress"},
		{family: versionControl, name: "dumboDiff", handler: cmdDumboDiff, access: anyDatabase, need: needs(auth.VCRead), help: "compares two revisions or the working set"},
		{family: versionControl, name: "dumboLog", handler: cmdDumboLog, access: anyDatabase, need: needs(auth.VCRead), help: "lists commits, or the history of one document"},
		{family: versionControl, name: "dumboBlame", handler: cmdDumboBlame, access: anyDatabase, need: needs(auth.VCRead), help: "names, for each field of a document, the commit that last set it"},
		{family: versionControl, name: "dumboReset", handler: cmdDumboReset, access: anyDatabase, need: needs(auth.VCWrite), help: "moves the branch head (soft or hard)"},
		{family: versionControl, name: "dumboGC", handler: cmdDumboGC, access: anyDatabase, need: needs(auth.VCAdmin), help: "removes unreachable data and reports bytes before and after"},
		{family: versionControl, name: "dumboMerge", handler: cmdDumboMerge, access: anyDatabase, need: needs(auth.VCWrite), help: "merges a revision into the branch (continue/abort)"},
		{family: versionControl, name: "dumboRebase", handler: cmdDumboRebase, access: anyDatabase, need: needs(auth.VCWrite), help: "replays the branch's commits onto another revision (continue/abort)"},
		{family: versionControl, name: "dumboCherryPick", handler: cmdDumboCherryPick, access: anyDatabase, need: needs(auth.VCWrite), help: "applies one commit's change to the branch"},
		{family: versionControl, name: "dumboRevert", handler: cmdDumboRevert, access: anyDatabase, need: needs(auth.VCWrite), help: "undoes one commit's change"},
		{family: versionControl, name: "dumboConflicts", handler: cmdDumboConflicts, access: anyDatabase, need: needs(auth.VCRead), help: "lists merge conflicts"},
		{family: versionControl, name: "dumboProtectBranch", handler: cmdDumboProtectBranch, access: anyDatabase, need: needs(auth.VCAdmin), first: firstBranch, help: "sets the roles that alone may write a branch (with --auth), or lifts the rule"},
		{family: versionControl, name: "dumboProtectedBranches", handler: cmdDumboProtectedBranches, access: anyDatabase, need: needs(auth.VCRead), help: "lists the protected branches and their roles"},
		{family: versionControl, name: "dumboRemote", handler: cmdDumboRemote, access: anyDatabase, need: needs(auth.VCAdmin), help: "adds, removes or lists the database's remotes"},
		{family: versionControl, name: "dumboFetch", handler: cmdDumboFetch, access: anyDatabase, need: needs(auth.VCWrite), help: "copies a remote's branches and tags, recorded as <remote>/<branch>"},
		{family: versionControl, name: "dumboPush", handler: cmdDumboPush, access: anyDatabase, need: needs(auth.VCWrite), help: "copies the branch's head to a remote branch (fast-forward unless force; delete)"},
		{family: versionControl, name: "dumboPull", handler: cmdDumboPull, access: anyDatabase, need: needs(auth.VCWrite), help: "fetches a remote branch and merges it into the branch (ffOnly, noFF, rebase)"},
		{family: versionControl, name: "dumboClone", handler: cmdDumboClone, access: anyDatabase, need: needs(auth.VCWrite), help: "makes this database a copy of a remote"},
		{family: versionControl, name: "dumboBundleCreate", handler: cmdDumboBundleCreate, access: anyDatabase, need: needs(auth.VCAdmin), help: "streams the database's history as a bundle (since: an earlier bundle's refs)"},
		{family: versionControl, name: "dumboBundleRestore", handler: cmdDumboBundleRestore, access: anyDatabase, need: needs(auth.VCAdmin), help: "restores a bundle into this database, in pieces (upload, offset, finish) or at once"},
		{family: versionControl, name: "dumboResolveConflict", handler: cmdDumboResolveConflict, access: anyDatabase, need: needs(auth.VCWrite), help: "resolves one merge conflict"},
	}
	commandTable = append(commandTable, doltAliases(commandTable)...)
	sort.Slice(commandTable, func(i, j int) bool { return commandTable[i].name < commandTable[j].name })
	commandsByName = make(map[string]*command, len(commandTable))
	for i := range commandTable {
		if commandTable[i].need == (requirement{}) {
			panic("command " + commandTable[i].name + " declares no authorization requirement")
		}
		commandsByName[commandTable[i].name] = &commandTable[i]
	}
}

// doltAliases gives each dumboX command a second name, doltX, with the same
// handler: the name users of Dolt know it by.
func doltAliases(cmds []command) []command {
	var aliases []command
	for _, c := range cmds {
		if c.family == versionControl {
			alias := c
			alias.name = "dolt" + strings.TrimPrefix(c.name, "dumbo")
			alias.help = "alias of " + c.name
			alias.canonical = c.name
			aliases = append(aliases, alias)
		}
	}
	return aliases
}

func lookupCommand(name string) *command { return commandsByName[name] }
