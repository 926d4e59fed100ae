// Package value owns what MongoDB's query language, its indexes and its
// version control agree on about single BSON values: the cross-type order
// and comparison (compare.go, with collations in collation.go), number
// arithmetic and conversions (numbers.go), the mongod-style formatting of
// values and type names used in error messages (format.go), dotted paths
// and MongoDB's array rules for walking them (path.go), and small BSON
// helpers (bsonutil.go). It imports nothing of DumboDB but mongoerr,
// so that index and storage can use it without the query language.
package value
