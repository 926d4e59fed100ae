// Package plan decides how a command reads its documents and reads them:
// the query planner, the scans that execute a plan, the paths read of
// large documents, and the plan tree that explain reports. It works on a
// storage.Reader (a snapshot or a transaction) and knows nothing of the
// wire or of commands' arguments, which the server parses.
//
// Reading a collection (read.go, read_stages.go): every command that
// reads documents (find, count, distinct, findAndModify, a pipeline's
// leading $match or $geoNear) parses its arguments into a Read (filter,
// sort, projection, skip, limit, hint, find's min/max and returnKey) and
// calls Execute, which plans it, opens the plan and stacks the stages
// the read asks for (sort, skip, limit, projection); Count counts from
// the index entries when the plan's bounds are exact, else runs the read.
//
// Planning (planner.go, intervals.go for index key intervals): Query
// picks, for a filter, sort and hint (Input), the _id look-up, an index
// scan over key intervals (index.EntryIntervals of the bounds from
// query.Predicates) or a collection scan; text (text_scans.go), wildcard
// (wildcard_scans.go) and geo (geo_scans.go: cell ranges for $geoWithin
// and $geoIntersects; near_source.go: the ring search of $near and
// $geoNear) indexes have planners of their own. CheckHint validates a
// hint. Distinct plans distinct from an index (index_scans.go); a find
// answers from index entries when they cover it.
//
// Running a plan (plan_open.go, sources.go): planSource yields a plan's
// matching documents as a Source; Matching plans and opens a filter at
// once (the writes' path). readpaths.go says which paths of large
// documents a scan reads. lookup.go probes indexes for $lookup
// (LookupEqual) and for $merge's target (IndexPoint).
//
// Explain (explain.go): Explain plans an explained command's Read as it
// runs, shows the winning and rejected plans as mongod's stage trees
// built from the same stages Execute stacks, and with executionStats runs
// them through the same code and counts keys and documents examined.
//
// Errors carry MongoDB's codes (mongoerr). The planner's choices are
// tested by data in testdata/planner (an index set, a query, the winning
// and rejected plans with their bounds; planner_datadriven_test.go).
package plan
