// Package query owns DumboDB's query language evaluated directly on raw
// BSON: filters (CompileFilter), aggregation expressions (CompileExpr),
// pipelines (CompilePipelineOpts), projections, sorts and updates. It
// knows nothing about storage, indexes or the wire protocol, so every
// layer above can share one definition of "what a MongoDB query means".
// Errors that reach users are *mongoerr.Error values carrying mongod's
// codes and messages. MongoDB's value order, numbers, collation, paths and
// BSON helpers are in value; text search's words in text;
// geometries (GeoJSON, legacy pairs, S2 cells) in geo; the
// JavaScript engine that $where, $function and $accumulator run in is
// js (docs/design/javascript.md).
//
// # Files
//
// A file is either a core file of one topic or named for the part of the
// language it holds, by prefix:
//
//	filter_*  filter operators: field operators (filter_ops.go, bits in
//	          filter_ops_bits.go), $regex (filter_regex.go), $expr,
//	          $jsonSchema, $text, $where (filter_where.go, with
//	          CompileQueryFilter, the one place $where is allowed), the geo
//	          operators (filter_geo.go: their geometry is geo's) and
//	          the predicates a planner can use (filter_predicates.go)
//	expr_*    expression operators by family: arith, array, set, object,
//	          string, regex, date, convert, logic (comparison, boolean,
//	          conditional, $let), meta ($meta, $rand), function
//	          ($function), the compiler of named arguments
//	          (expr_named.go) and the memory and time an evaluation may
//	          take (expr_budget.go)
//	stage_*   aggregation stages, one file per stage or family ($geoNear
//	          in stage_geonear.go: the server reads its input nearest
//	          first through the planner; $_internalUnpackBucket in
//	          stage_unpackbucket.go: a time-series collection's buckets
//	          as measurements, through package timeseries),
//	          and what stages share: the memory budget and spill files
//	          (stage_memory.go) and the reading of other collections
//	          (stage_foreign.go)
//	acc_*     $group accumulators: of one value (acc_basic.go), of several
//	          (acc_n.go), in JavaScript ($accumulator, acc_javascript.go:
//	          not acc_js.go, which Go would build only for GOOS=js)
//	window_*  $setWindowFields (window_fields.go), its order-based window
//	          functions (window_funcs.go) and $covariancePop/Samp
//	update_*  update operators (update_ops.go), positional paths, the
//	          mutable document they edit (update_doc.go), and
//	          pipeline-style updates
//
// The core files: doc.go; filter.go (Filter: compiling and matching a
// filter document); expr.go (Expr, Env, compiling and evaluating an
// expression); pipeline.go (Pipeline, Stream, compiling a stage list and
// running it); projection.go; sort.go; update.go (Update: compiling and
// applying an update); registry.go (what the operator tables share).
// Long loops look at the command's context through package interrupt.
//
// # Registries
//
// Every operator is a row of one table, in groups by topic, each group
// sorted by name, in the *_registry.go file of its kind: exprTable
// (expr_registry.go), accTable (acc_registry.go), windowTable
// (window_registry.go), stageTable (stage_registry.go), filterTopTable,
// filterOpTable and schemaTable (filter_registry.go) and updateTable
// (update_registry.go). A row names the operator and what compiles it;
// operators MongoDB has and DumboDB refuses are rows too, marked so, and
// answer with their own error; the JavaScript rows (jsOp, accEntry.js)
// compile, and are what validators and $setWindowFields refuse. A map by
// name is built from each table once; registry_test.go checks that the groups are sorted, that no name
// is listed twice and that the refused rows answer as they always have.
package query
