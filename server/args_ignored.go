package server

// ignoredArgs are the command fields DumboDB accepts on purpose and does
// not use, "command.field" to why each changes no result here. ignoredArg
// declares one; a declared field without a row here answers InternalError,
// and a row no command declares fails TestCommandArgumentsWalk.
var ignoredArgs = map[string]string{
	"abortTransaction.recoveryToken":               "for routers of sharded clusters, which find a transaction's shards by it",
	"commitTransaction.recoveryToken":              "for routers of sharded clusters, which find a transaction's shards by it",
	"collStats.verbose":                            "it adds storage-engine details, of which there are none beyond what collStats shows",
	"count.fields":                                 "mongod's count takes it and ignores it too",
	"createIndexes.commitQuorum":                   "one node builds and commits every index, whatever quorum is asked",
	"find.allowDiskUse":                            "a find's sort has no memory limit here, so nothing would spill",
	"find.allowPartialResults":                     "for sharded clusters: every result here comes from one node",
	"find.oplogReplay":                             "deprecated: mongod 4.4+ ignores it too",
	"find.readOnce":                                "an internal hint about caching that changes no result",
	"getMore.lastKnownCommittedOpTime":             "sent by secondaries tailing an oplog, of which there is none",
	"getMore.term":                                 "sent by secondaries tailing an oplog, of which there is none",
	"listCollections.authorizedCollections":        "listCollections needs a privilege that shows every collection; without it the command is refused, not narrowed",
	"listCollections.includePendingDrops":          "a drop completes in its own write: no drop is ever pending",
	"renameCollection.stayTemp":                    "no collection is temporary here",
	"replSetGetConfig.$_internalIncludeNewlyAdded": "the set has one member, and none is being added",
	"saslStart.autoAuthorize":                      "a successful conversation always authorizes the connection, as on mongod 4.4+",
	"usersInfo.showAuthenticationRestrictions":     "no user has authentication restrictions to show",
	"validate.scandata":                            "legacy: validate reads every record anyway",
}
