package server

import (
	"sort"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// command is one entry of the command table.
type command struct {
	family  family
	name    string
	handler func(*request) (bsoncore.Document, error)
	access  access
	help    string
}

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
)

// access says where a command may run: adminOnly ones only on "admin".
type access bool

const (
	anyDatabase access = false
	adminOnly   access = true
)

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
		{family: reads, name: "aggregate", handler: cmdAggregate, access: anyDatabase, help: "runs an aggregation pipeline ($match, $group, $count, $sort, $skip, $limit, $project)"},
		{family: reads, name: "count", handler: cmdCount, access: anyDatabase, help: "counts the documents that match a query"},
		{family: reads, name: "distinct", handler: cmdDistinct, access: anyDatabase, help: "returns the distinct values of a field"},
		{family: reads, name: "explain", handler: cmdExplain, access: anyDatabase, help: "describes how a query runs (plan and execution statistics)"},
		{family: reads, name: "find", handler: cmdFind, access: anyDatabase, help: "queries documents"},
		{family: writes, name: "delete", handler: cmdDelete, access: anyDatabase, help: "deletes documents"},
		{family: writes, name: "findAndModify", handler: cmdFindAndModify, access: anyDatabase, help: "updates or removes one document and returns it"},
		{family: writes, name: "findandmodify", handler: cmdFindAndModify, access: anyDatabase, help: "legacy spelling of findAndModify"},
		{family: writes, name: "insert", handler: cmdInsert, access: anyDatabase, help: "inserts documents"},
		{family: writes, name: "update", handler: cmdUpdate, access: anyDatabase, help: "updates documents"},
		{family: indexes, name: "createIndexes", handler: cmdCreateIndexes, access: anyDatabase, help: "builds secondary indexes"},
		{family: indexes, name: "deleteIndexes", handler: cmdDropIndexes, access: anyDatabase, help: "legacy spelling of dropIndexes"},
		{family: indexes, name: "dropIndexes", handler: cmdDropIndexes, access: anyDatabase, help: "drops secondary indexes"},
		{family: indexes, name: "listIndexes", handler: cmdListIndexesSpecs, access: anyDatabase, help: "lists the indexes of a collection"},
		{family: operations, name: "getMore", handler: cmdGetMore, access: anyDatabase, help: "returns the next batch of a cursor"},
		{family: operations, name: "killCursors", handler: cmdKillCursors, access: anyDatabase, help: "kills cursors"},
		{family: operations, name: "currentOp", handler: cmdCurrentOp, access: adminOnly, help: "lists the operations in progress"},
		{family: operations, name: "killOp", handler: cmdKillOp, access: adminOnly, help: "interrupts an operation by its opid"},
		{family: namespaces, name: "create", handler: cmdCreate, access: anyDatabase, help: "creates a collection"},
		{family: namespaces, name: "collMod", handler: cmdCollMod, access: anyDatabase, help: "changes collection options: an index's hidden flag or TTL"},
		{family: namespaces, name: "collStats", handler: cmdCollStats, access: anyDatabase, help: "returns statistics about a collection"},
		{family: namespaces, name: "drop", handler: cmdDrop, access: anyDatabase, help: "drops a collection"},
		{family: namespaces, name: "listCollections", handler: cmdListCollections, access: anyDatabase, help: "lists the collections of a database"},
		{family: namespaces, name: "renameCollection", handler: cmdRenameCollection, access: adminOnly, help: "renames a collection"},
		{family: namespaces, name: "dbStats", handler: cmdDBStats, access: anyDatabase, help: "returns statistics about a database"},
		{family: namespaces, name: "dropDatabase", handler: cmdDropDatabase, access: anyDatabase, help: "drops the current database"},
		{family: namespaces, name: "listDatabases", handler: cmdListDatabases, access: adminOnly, help: "lists databases"},
		{family: connections, name: "hello", handler: cmdHello, access: anyDatabase, help: "describes the server to a connecting client"},
		{family: connections, name: "isMaster", handler: cmdHello, access: anyDatabase, help: "legacy spelling of hello"},
		{family: connections, name: "ismaster", handler: cmdHello, access: anyDatabase, help: "legacy spelling of hello"},
		{family: connections, name: "ping", handler: cmdPing, access: anyDatabase, help: "checks that the server answers"},
		{family: connections, name: "connectionStatus", handler: cmdConnectionStatus, access: anyDatabase, help: "returns the authentication state of the connection"},
		{family: connections, name: "whatsmyuri", handler: cmdWhatsMyURI, access: anyDatabase, help: "returns the client's address"},
		{family: sessions, name: "startSession", handler: cmdStartSession, access: anyDatabase, help: "starts a logical session"},
		{family: sessions, name: "endSessions", handler: cmdEndSessions, access: anyDatabase, help: "ends logical sessions and kills their cursors"},
		{family: sessions, name: "refreshSessions", handler: cmdRefreshSessions, access: anyDatabase, help: "keeps logical sessions from expiring"},
		{family: sessions, name: "killSessions", handler: cmdKillSessions, access: anyDatabase, help: "kills sessions, their cursors and operations"},
		{family: sessions, name: "killAllSessions", handler: cmdKillAllSessions, access: anyDatabase, help: "kills the sessions of the users named"},
		{family: sessions, name: "commitTransaction", handler: cmdCommitTransaction, access: adminOnly, help: "commits the session's transaction"},
		{family: sessions, name: "abortTransaction", handler: cmdAbortTransaction, access: adminOnly, help: "aborts the session's transaction"},
		{family: sessions, name: "killAllSessionsByPattern", handler: cmdKillAllSessionsByPattern, access: anyDatabase, help: "kills the sessions matching patterns"},
		{family: replication, name: "replSetGetStatus", handler: cmdReplSetGetStatus, access: adminOnly, help: "describes the replica set's one member"},
		{family: replication, name: "replSetGetConfig", handler: cmdReplSetGetConfig, access: adminOnly, help: "returns the replica set's configuration"},
		{family: replication, name: "replSetInitiate", handler: cmdReplSetInitiate, access: adminOnly, help: "accepts a one-member configuration (the set is initiated already)"},
		{family: diagnostics, name: "buildInfo", handler: cmdBuildInfo, access: anyDatabase, help: "returns the server's version and build information"},
		{family: diagnostics, name: "buildinfo", handler: cmdBuildInfo, access: anyDatabase, help: "legacy spelling of buildInfo"},
		{family: diagnostics, name: "hostInfo", handler: cmdHostInfo, access: anyDatabase, help: "returns information about the host"},
		{family: diagnostics, name: "serverStatus", handler: cmdServerStatus, access: anyDatabase, help: "returns server counters"},
		{family: diagnostics, name: "listCommands", handler: cmdListCommands, access: anyDatabase, help: "lists the commands this server knows"},
		{family: diagnostics, name: "getCmdLineOpts", handler: cmdGetCmdLineOpts, access: adminOnly, help: "returns the command line the server started with"},
		{family: diagnostics, name: "getLog", handler: cmdGetLog, access: adminOnly, help: "returns recent log lines"},
		{family: diagnostics, name: "setParameter", handler: cmdSetParameter, access: adminOnly, help: "sets transactionLifetimeLimitSeconds"},
		{family: diagnostics, name: "getParameter", handler: cmdGetParameter, access: adminOnly, help: "returns server parameters"},
		{family: testOnly, name: "configureFailPoint", handler: cmdConfigureFailPoint, access: adminOnly, help: "test command: makes chosen commands fail (needs --enableTestCommands)"},
		{family: versionControl, name: "dumboBranch", handler: cmdDumboBranch, access: anyDatabase, help: "creates, deletes or lists branches"},
		{family: versionControl, name: "dumboBranchStatus", handler: cmdDumboBranchStatus, access: anyDatabase, help: "counts commits ahead and behind a base"},
		{family: versionControl, name: "dumboCheckout", handler: cmdDumboCheckout, access: anyDatabase, help: "sets this connection's default branch for a database"},
		{family: versionControl, name: "dumboTag", handler: cmdDumboTag, access: anyDatabase, help: "creates, deletes or lists tags"},
		{family: versionControl, name: "dumboCommit", handler: cmdDumboCommit, access: anyDatabase, help: "commits the branch's working set"},
		{family: versionControl, name: "dumboStatus", handler: cmdDumboStatus, access: anyDatabase, help: "shows uncommitted changes and any merge in progress"},
		{family: versionControl, name: "dumboDiff", handler: cmdDumboDiff, access: anyDatabase, help: "compares two revisions or the working set"},
		{family: versionControl, name: "dumboLog", handler: cmdDumboLog, access: anyDatabase, help: "lists commits, or the history of one document"},
		{family: versionControl, name: "dumboReset", handler: cmdDumboReset, access: anyDatabase, help: "moves the branch head (soft or hard)"},
		{family: versionControl, name: "dumboGC", handler: cmdDumboGC, access: anyDatabase, help: "removes unreachable data and reports bytes before and after"},
		{family: versionControl, name: "dumboMerge", handler: cmdDumboMerge, access: anyDatabase, help: "merges a revision into the branch (continue/abort)"},
		{family: versionControl, name: "dumboRebase", handler: cmdDumboRebase, access: anyDatabase, help: "replays the branch's commits onto another revision (continue/abort)"},
		{family: versionControl, name: "dumboCherryPick", handler: cmdDumboCherryPick, access: anyDatabase, help: "applies one commit's change to the branch"},
		{family: versionControl, name: "dumboRevert", handler: cmdDumboRevert, access: anyDatabase, help: "undoes one commit's change"},
		{family: versionControl, name: "dumboConflicts", handler: cmdDumboConflicts, access: anyDatabase, help: "lists merge conflicts"},
		{family: versionControl, name: "dumboResolveConflict", handler: cmdDumboResolveConflict, access: anyDatabase, help: "resolves one merge conflict"},
	}
	commandTable = append(commandTable, doltAliases(commandTable)...)
	sort.Slice(commandTable, func(i, j int) bool { return commandTable[i].name < commandTable[j].name })
	commandsByName = make(map[string]*command, len(commandTable))
	for i := range commandTable {
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
			aliases = append(aliases, alias)
		}
	}
	return aliases
}

func lookupCommand(name string) *command { return commandsByName[name] }
