// Package plan decides how a command reads its documents and reads them:
// the query planner, the scans that execute a plan, the paths read of
// large documents, and the plan tree that explain reports. It works on a
// storage.Reader (a snapshot or a transaction) and knows nothing of the
// wire or of commands' arguments, which the server parses.
//
// Planning (planner.go, intervals.go for index key intervals): Query picks, for a filter, sort and hint (Input),
// the _id look-up, an index scan over key intervals (index.EntryIntervals
// of the bounds from query.Predicates) or a collection scan; text
// (text_scans.go), wildcard (wildcard_scans.go) and geo (geo_scans.go:
// cell ranges for $geoWithin and $geoIntersects; near_source.go: the
// ring search of $near and $geoNear) indexes have planners of their own. CheckHint validates a hint. Distinct plans distinct from an
// index (index_scans.go), as Exact and Count do count; Cover lets a find
// answer from index entries.
//
// Reading (sources.go, plan_open.go): Plan.Open yields a plan's matching
// documents as a Source; Matching plans and opens a filter at once (the
// writes' path). Sort, SortScan, Reverse, SkipLimit and Project shape a
// find's result. readpaths.go says which paths of large documents a scan
// reads (ReadForFind, ReadForCount, ReadForPipeline). lookup.go probes
// indexes for $lookup (LookupEqual).
//
// Explain (explain.go): Explain plans an explained command as it would
// run, describes the winning and rejected plans as mongod's stage trees,
// and with executionStats runs them and counts keys and documents
// examined.
//
// Errors carry MongoDB's codes (mongoerr). The planner's choices are
// tested by data in testdata/planner (an index set, a query, the winning
// and rejected plans with their bounds; planner_datadriven_test.go).
package plan
