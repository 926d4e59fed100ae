package auth

import "math/bits"

// Action is a privilege action, as a bit so that a set of them is a mask
// and checking one is an AND (the server checks one per command).
type Action uint64

// The actions, named as mongod names them, plus DumboDB's version control
// (vcRead, vcWrite, vcAdmin). Database actions apply to a database's
// namespaces; cluster actions to the server as a whole.
const (
	Find Action = 1 << iota
	Insert
	Update
	Remove
	CreateCollection
	DropCollection
	CreateIndex
	DropIndex
	CollMod
	CollStats
	DBStats
	ListCollections
	ListIndexes
	DropDatabase
	RenameCollectionSameDB
	KillCursors
	CreateUser
	DropUser
	ViewUser
	GrantRole
	RevokeRole
	ChangePassword
	ChangeCustomData
	CreateRole
	DropRole
	ViewRole
	VCRead
	VCWrite
	VCAdmin
	// BypassDocumentValidation lets a write skip collection validators.
	BypassDocumentValidation
	EnableProfiler

	// Cluster actions.
	ServerStatus
	ListDatabases
	InProg
	KillOp
	ReplSetGetStatus
	ReplSetGetConfig
	ReplSetConfigure
	GetParameter
	SetParameter
	GetCmdLineOpts
	GetLog
	HostInfo
	KillAnySession
	Shutdown
	LogRotate
	Top
	Fsync
	Unlock
)

// clusterActions are the actions on the cluster resource.
const clusterActions = ServerStatus | ListDatabases | InProg | KillOp | ReplSetGetStatus | ReplSetGetConfig |
	ReplSetConfigure | GetParameter | SetParameter | GetCmdLineOpts | GetLog | HostInfo | KillAnySession | Shutdown | LogRotate | Top | Fsync | Unlock

// actionNames is the one table of action names, used both ways.
var actionNames = map[Action]string{
	Find: "find", Insert: "insert", Update: "update", Remove: "remove",
	CreateCollection: "createCollection", DropCollection: "dropCollection", CreateIndex: "createIndex",
	DropIndex: "dropIndex", CollMod: "collMod", CollStats: "collStats", DBStats: "dbStats",
	ListCollections: "listCollections", ListIndexes: "listIndexes", DropDatabase: "dropDatabase",
	RenameCollectionSameDB: "renameCollectionSameDB", KillCursors: "killCursors",
	CreateUser: "createUser", DropUser: "dropUser", ViewUser: "viewUser", GrantRole: "grantRole",
	RevokeRole: "revokeRole", ChangePassword: "changePassword", ChangeCustomData: "changeCustomData",
	CreateRole: "createRole", DropRole: "dropRole", ViewRole: "viewRole",
	VCRead: "dumboVersionRead", VCWrite: "dumboVersionWrite", VCAdmin: "dumboVersionAdmin",
	BypassDocumentValidation: "bypassDocumentValidation", EnableProfiler: "enableProfiler", ServerStatus: "serverStatus",
	ListDatabases: "listDatabases", InProg: "inprog", KillOp: "killop",
	ReplSetGetStatus: "replSetGetStatus", ReplSetGetConfig: "replSetGetConfig", ReplSetConfigure: "replSetConfigure",
	GetParameter: "getParameter", SetParameter: "setParameter", GetCmdLineOpts: "getCmdLineOpts",
	GetLog: "getLog", HostInfo: "hostInfo", KillAnySession: "killAnySession", Shutdown: "shutdown", LogRotate: "logRotate", Top: "top",
	Fsync: "fsync", Unlock: "unlock",
}

// IsCluster reports whether an action is on the cluster resource.
func (a Action) IsCluster() bool { return a&clusterActions != 0 }

// Names lists the actions of a set, in bit order.
func (a Action) Names() []string {
	var out []string
	for a != 0 {
		bit := Action(1) << bits.TrailingZeros64(uint64(a))
		out = append(out, actionNames[bit])
		a &^= bit
	}
	return out
}

// ActionNamed is the action of a name (false: none).
func ActionNamed(name string) (Action, bool) {
	for a, n := range actionNames {
		if n == name {
			return a, true
		}
	}
	return 0, false
}
