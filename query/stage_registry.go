package query

import "go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

// The stage table: every aggregation stage compileStages knows, in groups
// by topic, each group sorted by name. The stages MongoDB has and DumboDB
// lacks the means for are rows marked stageUnsupported.
var stageTable = [][]stageEntry{
	{ // documents in and out
		{name: "$limit", compile: compileLimitStage},
		{name: "$match", compile: compileMatchStage, flags: stageAfterChangeStream},
		{name: "$redact", compile: compileRedactStage, flags: stageAfterChangeStream},
		{name: "$sample", compile: compileSampleStage},
		{name: "$skip", compile: compileSkipStage},
		{name: "$sort", compile: compileSortStage},
		{name: "$unwind", compile: compileUnwindStage},
	},
	{ // per-document transforms, which update pipelines may use too
		transformRow("$addFields", compileAddFields, stageAfterChangeStream),
		transformRow("$project", compileProjectTransform, stageAfterChangeStream),
		transformRow("$replaceRoot", compileReplaceRoot, stageAfterChangeStream),
		transformRow("$replaceWith", compileReplaceWith, stageAfterChangeStream),
		transformRow("$set", compileAddFields, stageAfterChangeStream),
		transformRow("$unset", compileUnset, stageAfterChangeStream),
	},
	{ // grouping
		{name: "$bucket", compile: compileBucketStage},
		{name: "$bucketAuto", compile: compileBucketAutoStage},
		{name: "$count", compile: compileCountStage},
		{name: "$group", compile: compileGroupStage},
		{name: "$sortByCount", compile: compileSortByCountStage},
	},
	{ // windows and gaps
		{name: "$densify", compile: compileDensifyStage},
		{name: "$fill", compile: compileFillStage},
		{name: "$setWindowFields", compile: compileSetWindowFieldsStage},
	},
	{ // sub-pipelines and other collections
		{name: "$facet", compile: compileFacetStage, flags: stageNotInFacet},
		{name: "$graphLookup", compile: compileGraphLookupStage},
		{name: "$lookup", compile: compileLookupStage},
		{name: "$unionWith", compile: compileUnionWithStage},
	},
	{ // writing to a collection
		{name: "$merge", compile: compileMergeStage, flags: stageNotInFacet},
		{name: "$out", compile: compileOutStage, flags: stageNotInFacet},
	},
	{ // sources of their own documents
		{name: "$collStats", compile: compileCollStatsStage, flags: stageFirst | stageNotInFacet | stageNotInAPIV1},
		{name: "$currentOp", compile: compileCurrentOpStage, flags: stageFirst | stageNotInAPIV1},
		{name: "$documents", compile: compileDocumentsStage, flags: stageFirst | stageNotInFacet},
		{name: "$indexStats", compile: compileIndexStatsStage, flags: stageFirst | stageNotInFacet | stageNotInAPIV1},
		{name: "$listLocalSessions", compile: compileListSessionsStage("$listLocalSessions"), flags: stageFirst | stageNotInAPIV1},
		{name: "$listSessions", compile: compileListSessionsStage("$listSessions"), flags: stageFirst | stageNotInAPIV1},
	},
	{ // time series: the read of a time-series collection from its buckets
		{name: "$_internalUnpackBucket", compile: compileUnpackBucketStage},
	},
	{ // geospatial: the server reads the collection nearest first
		{name: "$geoNear", compile: compileGeoNearStage, flags: stageNotInFacet},
	},
	{ // unsupported: search indexes
		{name: "$listSearchIndexes", flags: stageUnsupported | stageSearch},
		{name: "$search", flags: stageUnsupported | stageSearch},
		{name: "$searchMeta", flags: stageUnsupported | stageSearch},
		{name: "$vectorSearch", flags: stageUnsupported | stageSearch},
	},
	{ // change streams' own stages, which the server runs (server/changestream*.go)
		{name: "$changeStreamSplitLargeEvent", flags: stageOnlyInChangeStream},
	},
	{ // unsupported: change streams, sessions and the server's state
		{name: "$changeStream", flags: stageUnsupported},
		{name: "$listSampledQueries", flags: stageUnsupported},
		{name: "$planCacheStats", flags: stageUnsupported | stageNotInAPIV1},
		{name: "$querySettings", flags: stageUnsupported},
		{name: "$shardedDataDistribution", flags: stageUnsupported},
	},
}

// stageEntry is one row of stageTable: how the stage compiles, for a
// per-document transform also how an update pipeline compiles it, and
// its flags.
type stageEntry struct {
	name      string
	compile   stageCompiler
	transform transformCompiler
	flags     stageFlags
}

type stageCompiler func(spec bsoncore.Value, pc *pipeCtx) (stage, error)

type stageFlags uint8

const (
	// stageFirst: the stage produces its own documents, so it must come
	// first (and is what {aggregate: 1} must start with).
	stageFirst stageFlags = 1 << iota
	// stageNotInFacet: a $facet sub-pipeline may not contain it.
	stageNotInFacet
	// stageUnsupported: MongoDB has the stage, DumboDB refuses it.
	stageUnsupported
	// stageSearch: an Atlas Search stage, which a community mongod
	// refuses with SearchNotEnabled, as DumboDB does.
	stageSearch
	// stageNotInAPIV1: the Stable API's version 1 leaves the stage out,
	// so apiStrict refuses it.
	stageNotInAPIV1
	// stageAfterChangeStream: the stage may follow $changeStream (a
	// per-document filter or transform of the events).
	stageAfterChangeStream
	// stageOnlyInChangeStream: the stage exists only in a $changeStream
	// pipeline, where the server runs it; any other pipeline refuses it.
	stageOnlyInChangeStream
)

func (e stageEntry) has(f stageFlags) bool { return e.flags&f != 0 }

// StageOutsideAPIV1 reports a stage the Stable API's version 1 leaves
// out; a name that is no stage is not one (compiling refuses it).
func StageOutsideAPIV1(name string) bool { return stages[name].has(stageNotInAPIV1) }

// StageAfterChangeStream reports a stage that may follow $changeStream.
func StageAfterChangeStream(name string) bool { return stages[name].has(stageAfterChangeStream) }

func (e stageEntry) rowName() string { return e.name }

// stages finds stageTable's rows by name. It is filled in init because the
// compile functions recurse into it (sub-pipelines).
var stages map[string]stageEntry

func init() { stages = indexTable(stageTable) }
