package server

import (
	"sort"

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
// their own pointing at the same handler. It is filled in init because
// listCommands reads it.
var (
	commandTable   []command
	commandsByName map[string]*command
)

func init() {
	commandTable = []command{
		{name: "aggregate", handler: cmdAggregate, help: "runs an aggregation pipeline ($match, $group, $count, $sort, $skip, $limit, $project)"},
		{name: "buildInfo", handler: cmdBuildInfo, help: "returns the server's version and build information"},
		{name: "buildinfo", handler: cmdBuildInfo, help: "legacy spelling of buildInfo"},
		{name: "collMod", handler: cmdCollMod, help: "changes collection options: an index's hidden flag or TTL"},
		{name: "collStats", handler: cmdCollStats, help: "returns statistics about a collection"},
		{name: "configureFailPoint", handler: cmdConfigureFailPoint, help: "test command: makes chosen commands fail (needs --enableTestCommands)", adminOnly: true},
		{name: "connectionStatus", handler: cmdConnectionStatus, help: "returns the authentication state of the connection"},
		{name: "count", handler: cmdCount, help: "counts the documents that match a query"},
		{name: "currentOp", handler: cmdCurrentOp, help: "lists the operations in progress", adminOnly: true},
		{name: "create", handler: cmdCreate, help: "creates a collection"},
		{name: "createIndexes", handler: cmdCreateIndexes, help: "builds secondary indexes"},
		{name: "dbStats", handler: cmdDBStats, help: "returns statistics about a database"},
		{name: "delete", handler: cmdDelete, help: "deletes documents"},
		{name: "deleteIndexes", handler: cmdDropIndexes, help: "legacy spelling of dropIndexes"},
		{name: "distinct", handler: cmdDistinct, help: "returns the distinct values of a field"},
		{name: "drop", handler: cmdDrop, help: "drops a collection"},
		{name: "dropIndexes", handler: cmdDropIndexes, help: "drops secondary indexes"},
		{name: "dropDatabase", handler: cmdDropDatabase, help: "drops the current database"},
		{name: "endSessions", handler: cmdEndSessions, help: "ends logical sessions"},
		{name: "explain", handler: cmdExplain, help: "describes how a query runs (plan and execution statistics)"},
		{name: "find", handler: cmdFind, help: "queries documents"},
		{name: "findAndModify", handler: cmdFindAndModify, help: "updates or removes one document and returns it"},
		{name: "findandmodify", handler: cmdFindAndModify, help: "legacy spelling of findAndModify"},
		{name: "getCmdLineOpts", handler: cmdGetCmdLineOpts, help: "returns the command line the server started with", adminOnly: true},
		{name: "getLog", handler: cmdGetLog, help: "returns recent log lines", adminOnly: true},
		{name: "getMore", handler: cmdGetMore, help: "returns the next batch of a cursor"},
		{name: "getParameter", handler: cmdGetParameter, help: "returns server parameters", adminOnly: true},
		{name: "hello", handler: cmdHello, help: "describes the server to a connecting client"},
		{name: "hostInfo", handler: cmdHostInfo, help: "returns information about the host"},
		{name: "insert", handler: cmdInsert, help: "inserts documents"},
		{name: "isMaster", handler: cmdHello, help: "legacy spelling of hello"},
		{name: "ismaster", handler: cmdHello, help: "legacy spelling of hello"},
		{name: "killCursors", handler: cmdKillCursors, help: "kills cursors"},
		{name: "killOp", handler: cmdKillOp, help: "interrupts an operation by its opid", adminOnly: true},
		{name: "listCollections", handler: cmdListCollections, help: "lists the collections of a database"},
		{name: "listCommands", handler: cmdListCommands, help: "lists the commands this server knows"},
		{name: "listDatabases", handler: cmdListDatabases, help: "lists databases", adminOnly: true},
		{name: "listIndexes", handler: cmdListIndexesSpecs, help: "lists the indexes of a collection"},
		{name: "ping", handler: cmdPing, help: "checks that the server answers"},
		{name: "renameCollection", handler: cmdRenameCollection, help: "renames a collection", adminOnly: true},
		{name: "serverStatus", handler: cmdServerStatus, help: "returns server counters"},
		{name: "update", handler: cmdUpdate, help: "updates documents"},
		{name: "whatsmyuri", handler: cmdWhatsMyURI, help: "returns the client's address"},
	}
	commandTable = append(commandTable, []command{
		{name: "dumboBranch", handler: cmdDumboBranch, help: "creates, deletes or lists branches"},
		{name: "doltBranch", handler: cmdDumboBranch, help: "alias of dumboBranch"},
		{name: "dumboBranchStatus", handler: cmdDumboBranchStatus, help: "counts commits ahead and behind a base"},
		{name: "doltBranchStatus", handler: cmdDumboBranchStatus, help: "alias of dumboBranchStatus"},
		{name: "dumboCheckout", handler: cmdDumboCheckout, help: "sets this connection's default branch for a database"},
		{name: "doltCheckout", handler: cmdDumboCheckout, help: "alias of dumboCheckout"},
		{name: "dumboCherryPick", handler: cmdDumboCherryPick, help: "applies one commit's change to the branch"},
		{name: "doltCherryPick", handler: cmdDumboCherryPick, help: "alias of dumboCherryPick"},
		{name: "dumboCommit", handler: cmdDumboCommit, help: "commits the branch's working set"},
		{name: "doltCommit", handler: cmdDumboCommit, help: "alias of dumboCommit"},
		{name: "dumboConflicts", handler: cmdDumboConflicts, help: "lists merge conflicts"},
		{name: "doltConflicts", handler: cmdDumboConflicts, help: "alias of dumboConflicts"},
		{name: "dumboDiff", handler: cmdDumboDiff, help: "compares two revisions or the working set"},
		{name: "doltDiff", handler: cmdDumboDiff, help: "alias of dumboDiff"},
		{name: "dumboLog", handler: cmdDumboLog, help: "lists commits, or the history of one document"},
		{name: "doltLog", handler: cmdDumboLog, help: "alias of dumboLog"},
		{name: "dumboMerge", handler: cmdDumboMerge, help: "merges a revision into the branch (continue/abort)"},
		{name: "doltMerge", handler: cmdDumboMerge, help: "alias of dumboMerge"},
		{name: "dumboGC", handler: cmdDumboGC, help: "removes unreachable data and reports bytes before and after"},
		{name: "doltGC", handler: cmdDumboGC, help: "alias of dumboGC"},
		{name: "dumboRebase", handler: cmdDumboRebase, help: "replays the branch's commits onto another revision (continue/abort)"},
		{name: "doltRebase", handler: cmdDumboRebase, help: "alias of dumboRebase"},
		{name: "dumboReset", handler: cmdDumboReset, help: "moves the branch head (soft or hard)"},
		{name: "doltReset", handler: cmdDumboReset, help: "alias of dumboReset"},
		{name: "dumboResolveConflict", handler: cmdDumboResolveConflict, help: "resolves one merge conflict"},
		{name: "doltResolveConflict", handler: cmdDumboResolveConflict, help: "alias of dumboResolveConflict"},
		{name: "dumboRevert", handler: cmdDumboRevert, help: "undoes one commit's change"},
		{name: "doltRevert", handler: cmdDumboRevert, help: "alias of dumboRevert"},
		{name: "dumboStatus", handler: cmdDumboStatus, help: "shows uncommitted changes and any merge in progress"},
		{name: "doltStatus", handler: cmdDumboStatus, help: "alias of dumboStatus"},
		{name: "dumboTag", handler: cmdDumboTag, help: "creates, deletes or lists tags"},
		{name: "doltTag", handler: cmdDumboTag, help: "alias of dumboTag"},
	}...)
	sort.Slice(commandTable, func(i, j int) bool { return commandTable[i].name < commandTable[j].name })
	commandsByName = make(map[string]*command, len(commandTable))
	for i := range commandTable {
		commandsByName[commandTable[i].name] = &commandTable[i]
	}
}

func lookupCommand(name string) *command { return commandsByName[name] }
