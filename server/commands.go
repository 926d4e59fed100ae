package server

import (
	"slices"
	"sort"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// command is one entry of the command table.
type command struct {
	name      string
	handler   func(*request) (bsoncore.Document, error)
	help      string
	adminOnly bool
}

// commandTable lists every command, sorted by name. Aliases are entries of
// their own pointing at the same handler. init fills it from the groups
// below: an initializer would be a cycle, as listCommands reads it.
var (
	commandTable   []command
	commandsByName map[string]*command
)

// The groups below make up the table; their order does not matter, as init
// sorts the table by name.

// readCommands query documents, and explain describes how they run.
var readCommands = []command{
	{name: "aggregate", handler: cmdAggregate, help: "runs an aggregation pipeline ($match, $group, $count, $sort, $skip, $limit, $project)"},
	{name: "count", handler: cmdCount, help: "counts the documents that match a query"},
	{name: "distinct", handler: cmdDistinct, help: "returns the distinct values of a field"},
	{name: "explain", handler: cmdExplain, help: "describes how a query runs (plan and execution statistics)"},
	{name: "find", handler: cmdFind, help: "queries documents"},
}

var writeCommands = []command{
	{name: "delete", handler: cmdDelete, help: "deletes documents"},
	{name: "findAndModify", handler: cmdFindAndModify, help: "updates or removes one document and returns it"},
	{name: "findandmodify", handler: cmdFindAndModify, help: "legacy spelling of findAndModify"},
	{name: "insert", handler: cmdInsert, help: "inserts documents"},
	{name: "update", handler: cmdUpdate, help: "updates documents"},
}

var indexCommands = []command{
	{name: "createIndexes", handler: cmdCreateIndexes, help: "builds secondary indexes"},
	{name: "deleteIndexes", handler: cmdDropIndexes, help: "legacy spelling of dropIndexes"},
	{name: "dropIndexes", handler: cmdDropIndexes, help: "drops secondary indexes"},
	{name: "listIndexes", handler: cmdListIndexesSpecs, help: "lists the indexes of a collection"},
}

// cursorAndOperationCommands continue or stop what is in progress.
var cursorAndOperationCommands = []command{
	{name: "getMore", handler: cmdGetMore, help: "returns the next batch of a cursor"},
	{name: "killCursors", handler: cmdKillCursors, help: "kills cursors"},
	{name: "currentOp", handler: cmdCurrentOp, help: "lists the operations in progress", adminOnly: true},
	{name: "killOp", handler: cmdKillOp, help: "interrupts an operation by its opid", adminOnly: true},
}

var collectionAndDatabaseCommands = []command{
	{name: "create", handler: cmdCreate, help: "creates a collection"},
	{name: "collMod", handler: cmdCollMod, help: "changes collection options: an index's hidden flag or TTL"},
	{name: "collStats", handler: cmdCollStats, help: "returns statistics about a collection"},
	{name: "drop", handler: cmdDrop, help: "drops a collection"},
	{name: "listCollections", handler: cmdListCollections, help: "lists the collections of a database"},
	{name: "renameCollection", handler: cmdRenameCollection, help: "renames a collection", adminOnly: true},
	{name: "dbStats", handler: cmdDBStats, help: "returns statistics about a database"},
	{name: "dropDatabase", handler: cmdDropDatabase, help: "drops the current database"},
	{name: "listDatabases", handler: cmdListDatabases, help: "lists databases", adminOnly: true},
}

// connectionCommands are what drivers send to open, check and close a
// connection and its sessions.
var connectionCommands = []command{
	{name: "hello", handler: cmdHello, help: "describes the server to a connecting client"},
	{name: "isMaster", handler: cmdHello, help: "legacy spelling of hello"},
	{name: "ismaster", handler: cmdHello, help: "legacy spelling of hello"},
	{name: "ping", handler: cmdPing, help: "checks that the server answers"},
	{name: "connectionStatus", handler: cmdConnectionStatus, help: "returns the authentication state of the connection"},
	{name: "whatsmyuri", handler: cmdWhatsMyURI, help: "returns the client's address"},
}

// sessionCommands manage logical sessions.
var sessionCommands = []command{
	{name: "startSession", handler: cmdStartSession, help: "starts a logical session"},
	{name: "endSessions", handler: cmdEndSessions, help: "ends logical sessions and kills their cursors"},
	{name: "refreshSessions", handler: cmdRefreshSessions, help: "keeps logical sessions from expiring"},
	{name: "killSessions", handler: cmdKillSessions, help: "kills sessions, their cursors and operations"},
	{name: "killAllSessions", handler: cmdKillAllSessions, help: "kills the sessions of the users named"},
	{name: "killAllSessionsByPattern", handler: cmdKillAllSessionsByPattern, help: "kills the sessions matching patterns"},
}

// replSetCommands describe the one-member replica set.
var replSetCommands = []command{
	{name: "replSetGetStatus", handler: cmdReplSetGetStatus, help: "describes the replica set's one member", adminOnly: true},
	{name: "replSetGetConfig", handler: cmdReplSetGetConfig, help: "returns the replica set's configuration", adminOnly: true},
	{name: "replSetInitiate", handler: cmdReplSetInitiate, help: "accepts a one-member configuration (the set is initiated already)", adminOnly: true},
}

// diagnosticCommands describe the server, its host and its state.
var diagnosticCommands = []command{
	{name: "buildInfo", handler: cmdBuildInfo, help: "returns the server's version and build information"},
	{name: "buildinfo", handler: cmdBuildInfo, help: "legacy spelling of buildInfo"},
	{name: "hostInfo", handler: cmdHostInfo, help: "returns information about the host"},
	{name: "serverStatus", handler: cmdServerStatus, help: "returns server counters"},
	{name: "listCommands", handler: cmdListCommands, help: "lists the commands this server knows"},
	{name: "getCmdLineOpts", handler: cmdGetCmdLineOpts, help: "returns the command line the server started with", adminOnly: true},
	{name: "getLog", handler: cmdGetLog, help: "returns recent log lines", adminOnly: true},
	{name: "getParameter", handler: cmdGetParameter, help: "returns server parameters", adminOnly: true},
}

// testCommands are refused unless the server runs with --enableTestCommands.
var testCommands = []command{
	{name: "configureFailPoint", handler: cmdConfigureFailPoint, help: "test command: makes chosen commands fail (needs --enableTestCommands)", adminOnly: true},
}

// Version control, in three groups; each command also answers to a dolt*
// name (doltAliases).

// refCommands manage branches and tags and choose the connection's branch.
var refCommands = []command{
	{name: "dumboBranch", handler: cmdDumboBranch, help: "creates, deletes or lists branches"},
	{name: "dumboBranchStatus", handler: cmdDumboBranchStatus, help: "counts commits ahead and behind a base"},
	{name: "dumboCheckout", handler: cmdDumboCheckout, help: "sets this connection's default branch for a database"},
	{name: "dumboTag", handler: cmdDumboTag, help: "creates, deletes or lists tags"},
}

// historyCommands write and read a branch's commits.
var historyCommands = []command{
	{name: "dumboCommit", handler: cmdDumboCommit, help: "commits the branch's working set"},
	{name: "dumboStatus", handler: cmdDumboStatus, help: "shows uncommitted changes and any merge in progress"},
	{name: "dumboDiff", handler: cmdDumboDiff, help: "compares two revisions or the working set"},
	{name: "dumboLog", handler: cmdDumboLog, help: "lists commits, or the history of one document"},
	{name: "dumboReset", handler: cmdDumboReset, help: "moves the branch head (soft or hard)"},
	{name: "dumboGC", handler: cmdDumboGC, help: "removes unreachable data and reports bytes before and after"},
}

// mergeCommands bring changes from other commits into the branch, and
// settle the conflicts they leave.
var mergeCommands = []command{
	{name: "dumboMerge", handler: cmdDumboMerge, help: "merges a revision into the branch (continue/abort)"},
	{name: "dumboRebase", handler: cmdDumboRebase, help: "replays the branch's commits onto another revision (continue/abort)"},
	{name: "dumboCherryPick", handler: cmdDumboCherryPick, help: "applies one commit's change to the branch"},
	{name: "dumboRevert", handler: cmdDumboRevert, help: "undoes one commit's change"},
	{name: "dumboConflicts", handler: cmdDumboConflicts, help: "lists merge conflicts"},
	{name: "dumboResolveConflict", handler: cmdDumboResolveConflict, help: "resolves one merge conflict"},
}

func init() {
	versionControl := slices.Concat(refCommands, historyCommands, mergeCommands)
	commandTable = slices.Concat(readCommands, writeCommands, indexCommands, cursorAndOperationCommands,
		collectionAndDatabaseCommands, connectionCommands, sessionCommands, replSetCommands, diagnosticCommands, testCommands,
		versionControl, doltAliases(versionControl))
	sort.Slice(commandTable, func(i, j int) bool { return commandTable[i].name < commandTable[j].name })
	commandsByName = make(map[string]*command, len(commandTable))
	for i := range commandTable {
		commandsByName[commandTable[i].name] = &commandTable[i]
	}
}

// doltAliases gives each dumboX command a second name, doltX, with the same
// handler: the name users of Dolt know it by.
func doltAliases(cmds []command) []command {
	aliases := make([]command, len(cmds))
	for i, c := range cmds {
		c.name = "dolt" + strings.TrimPrefix(c.name, "dumbo")
		c.help = "alias of " + cmds[i].name
		aliases[i] = c
	}
	return aliases
}

func lookupCommand(name string) *command { return commandsByName[name] }
