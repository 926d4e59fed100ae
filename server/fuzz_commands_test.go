package server_test

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// One fuzz target per command family; the seeds are typical commands of
// the family and the client mistakes fixed so far.

func FuzzCRUDCommands(f *testing.F) {
	fuzzCommands(f, []string{"find", "insert", "update", "delete", "findAndModify", "count", "distinct", "getMore", "killCursors"},
		d("find", "c", "filter", d("a", d("$gt", 1)), "sort", d("b", -1), "projection", d("a", 1), "limit", 2, "batchSize", 1),
		d("find", "c", "filter", d("b", "ABC"), "collation", d("locale", "en", "strength", 2), "hint", "a_1"),
		d("find", "c", "filter", d("$expr", d("$gt", a("$a", "$$x"))), "let", d("x", 1), "skip", 1, "singleBatch", true),
		d("insert", "c", "documents", a(d("_id", 10, "a", 1), d("a", a(1, 2))), "ordered", false),
		d("update", "c", "updates", a(d("q", d("_id", 1), "u", d("$inc", d("a", 1)), "upsert", true),
			d("q", d(), "u", a(d("$set", d("z", "$a"))), "multi", true))),
		d("update", "c", "updates", a(d("q", d("e.x", 1), "u", d("$set", d("e.$[i].x", 2)), "arrayFilters", a(d("i.x", 1))))),
		d("delete", "c", "deletes", a(d("q", d("a", 5), "limit", 1))),
		d("findAndModify", "c", "query", d("_id", 2), "update", d("$set", d("b", "y")), "new", true, "fields", d("b", 1)),
		d("findAndModify", "c", "query", d("_id", 99), "remove", true),
		d("count", "c", "query", d("a", d("$exists", true)), "limit", 5),
		d("distinct", "c", "key", "a.b", "query", d()),
		d("getMore", int64(12345), "collection", "c"),
		d("killCursors", "c", "cursors", a(int64(1))),
		d("find", "ts", "filter", d("t", d("$gte", bson.DateTime(-5000), "$lt", bson.DateTime(5000)), "m", 1)),
		d("insert", "ts", "documents", a(d("t", bson.DateTime(7), "m", d("x", 1)), d("m", 1))),
		d("update", "ts", "updates", a(d("q", d("m", 1), "u", d("$set", d("m", 3, "t", bson.DateTime(9))), "multi", true))),
		d("delete", "ts", "deletes", a(d("q", d("v", d("$exists", true)), "limit", 1))),
	)
}

func FuzzAggregateCommands(f *testing.F) {
	fuzzCommands(f, []string{"aggregate", "explain"},
		d("aggregate", "c", "pipeline", a(d("$match", d("a", d("$gte", 1))), d("$group", d("_id", "$b", "n", d("$sum", 1)))), "cursor", d()),
		d("aggregate", "c", "pipeline", a(d("$lookup", d("from", "c", "localField", "a", "foreignField", "_id", "as", "j")), d("$unwind", "$j")), "cursor", d("batchSize", 1)),
		d("aggregate", "c", "pipeline", a(d("$facet", d("x", a(d("$count", "n")))), d("$out", "o")), "cursor", d()),
		d("aggregate", "c", "pipeline", a(d("$merge", d("into", "m", "whenMatched", "merge"))), "cursor", d()),
		d("aggregate", 1, "pipeline", a(d("$documents", a(d("a", 1))), d("$unionWith", "c")), "cursor", d()),
		d("aggregate", "c", "pipeline", a(d("$graphLookup", d("from", "c", "startWith", "$a", "connectFromField", "a", "connectToField", "_id", "as", "g"))), "cursor", d()),
		d("aggregate", "c", "pipeline", a(d("$collStats", d("count", d())), d("$indexStats", d())), "cursor", d()),
		d("aggregate", "c", "pipeline", a(d("$sort", d("a", 1))), "allowDiskUse", true, "cursor", d(), "explain", true),
		d("explain", d("find", "c", "filter", d("a", 5)), "verbosity", "executionStats"),
		d("explain", d("aggregate", "c", "pipeline", a(d("$match", d("a", 5))), "cursor", d())),
		d("aggregate", "ts", "pipeline", a(d("$match", d("t", d("$lte", bson.DateTime(1)), "m.x", 1)), d("$lookup", d("from", "ts", "localField", "m", "foreignField", "m", "as", "j"))), "cursor", d()),
		d("explain", d("find", "ts", "filter", d("$and", a(d("t", bson.DateTime(0)), d("m", d("$in", a(1, 2))))))),
		d("aggregate", "ts", "pipeline", a(d("$out", d("db", fuzzDB, "coll", "o2", "timeseries", d("timeField", "t", "metaField", "m")))), "cursor", d()),
	)
}

func FuzzIndexCommands(f *testing.F) {
	fuzzCommands(f, []string{"createIndexes", "dropIndexes", "listIndexes", "collMod"},
		d("createIndexes", "c", "indexes", a(d("key", d("b", -1, "a", 1), "name", "b_a", "unique", true, "sparse", true))),
		d("createIndexes", "c", "indexes", a(d("key", d("a", 1), "name", "p", "partialFilterExpression", d("a", d("$gt", 1))))),
		d("createIndexes", "c", "indexes", a(d("key", d("b", "text"), "name", "t", "weights", d("b", 2), "default_language", "en"))),
		d("createIndexes", "c", "indexes", a(d("key", d("$**", 1), "name", "w"), d("key", d("t", 1), "name", "ttl", "expireAfterSeconds", 60))),
		d("createIndexes", "c", "indexes", a(d("key", d("b", 1), "name", "bc", "collation", d("locale", "fr", "strength", 1)))),
		d("dropIndexes", "c", "index", "a_1"),
		d("createIndexes", "ts", "indexes", a(d("key", d("m.x", 1, "v", -1), "name", "m_v"), d("key", d("m", "hashed"), "name", "h"))),
		d("dropIndexes", "ts", "index", d("m", 1, "t", 1)),
		d("collMod", "ts", "expireAfterSeconds", 5, "timeseries", d("granularity", "minutes")),
		d("dropIndexes", "c", "index", a("b_a", "p")),
		d("listIndexes", "c", "cursor", d("batchSize", 1)),
		d("collMod", "c", "index", d("name", "a_1", "hidden", true)),
		d("collMod", "c", "index", d("keyPattern", d("t", 1), "expireAfterSeconds", 10)),
		d("collMod", "c", "index", d("name", "a_1", "prepareUnique", true)),
		d("collMod", "c", "index", d("keyPattern", d("a", 1), "unique", true), "dryRun", true),
		d("collMod", "c", "index", d("name", "b_a", "forceNonUnique", true)),
		d("createIndexes", "c", "indexes", a(d("key", d("u", 1), "name", "u_1", "prepareUnique", true))),
	)
}

func FuzzAdminCommands(f *testing.F) {
	fuzzCommands(f, []string{"create", "drop", "dropDatabase", "listCollections", "listDatabases", "renameCollection",
		"collStats", "dbStats", "serverStatus", "hello", "buildInfo", "getParameter", "getCmdLineOpts", "getLog",
		"hostInfo", "connectionStatus", "endSessions", "listCommands", "whatsmyuri", "configureFailPoint"},
		d("create", "v", "collation", d("locale", "en"), "validator", d("a", d("$type", "int"))),
		d("create", "capped", "capped", true, "size", 4096),
		d("create", "ts", "timeseries", d("timeField", "t", "metaField", "m", "granularity", "hours"), "expireAfterSeconds", 60),
		d("listCollections", 1, "filter", d("name", "c"), "nameOnly", true),
		d("listDatabases", 1, "$db", "admin", "nameOnly", true),
		d("renameCollection", "test.v", "to", "test.w", "dropTarget", true, "$db", "admin"),
		d("collStats", "c", "scale", 1024),
		d("dbStats", 1, "scale", 2),
		d("drop", "w"),
		d("getParameter", "*", "$db", "admin"),
		d("getLog", "global", "$db", "admin"),
		d("endSessions", a(d("id", bson.Binary{Subtype: 4, Data: make([]byte, 16)}))),
		d("hello", 1, "client", d("driver", d("name", "fuzz")), "compression", a("zstd")),
		d("create", "z", "$db", "d\u200bb"),
		d("dropDatabase", 1, "$db", "other"),
	)
}

func FuzzVersionControlCommands(f *testing.F) {
	fuzzCommands(f, []string{"dumboBranch", "dumboBranchStatus", "dumboCheckout", "dumboCherryPick", "dumboCommit",
		"dumboConflicts", "dumboDiff", "dumboLog", "dumboMerge", "dumboGC", "dumboRebase", "dumboReset",
		"dumboResolveConflict", "dumboRevert", "dumboStatus", "dumboTag"},
		d("dumboBranch", "f2"),
		d("dumboBranch", 1),
		d("dumboBranch", 1, "branch", "f2", "delete", true, "forceDelete", true),
		d("dumboBranch", 1, "branch", "refs/heads/../../x"),
		d("dumboBranchStatus", 1, "base", "main", "targets", a("feature", "v1")),
		d("dumboCheckout", 1, "branch", "feature"),
		d("dumboCommit", 1, "message", "m", "author", "Name <name@example.com>", "timestamp", bson.DateTime(0)),
		d("dumboCommit", 1, "message", "m", "author", "Name"),
		d("dumboDiff", 1, "from", "v1", "to", "HEAD", "collection", "c"),
		d("dumboLog", 1, "limit", 3, "from", "HEAD~1", "collection", "c"),
		d("dumboMerge", 1, "mergeIn", "feature", "message", "merge", "noFF", true),
		d("dumboMerge", 1, "abort", true),
		d("dumboConflicts", 1, "collection", "c"),
		d("dumboResolveConflict", 1, "collection", "c", "_id", 1, "resolution", "ours"),
		d("dumboRevert", 1, "commit", "HEAD"),
		d("dumboCherryPick", 1, "commit", "v1"),
		d("dumboReset", 1, "to", "HEAD~1", "hard", true),
		d("dumboRebase", 1, "onto", "main"),
		d("dumboStatus", 1, "$db", "test@feature"),
		d("dumboTag", 1),
		d("dumboTag", 1, "name", "v2", "commit", "main", "message", "t"),
		d("dumboLog", 1, "$db", "test@refs/heads/../../x"),
		d("dumboGC", 1),
	)
}
