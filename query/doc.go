// Package query owns DumboDB's query language evaluated directly on raw BSON:
// MongoDB's value ordering (Compare), filters (CompileFilter), projections,
// sorts and update documents. It knows nothing about storage, indexes or the
// wire protocol, so every layer above can share one definition of "what a
// MongoDB query means". Errors that reach users are *mongoerr.Error values
// carrying mongod's codes and messages.
//
// Each language family lives in its own file (compare.go, path.go,
// filter.go, projection.go, sort.go, update.go) and operators are registered
// in per-family tables so the remaining operators can be added in place.
package query
