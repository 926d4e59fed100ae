package server

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/index"
	"github.com/dumbodb/dumbodb/query"
	"github.com/dumbodb/dumbodb/storage"
	"github.com/dumbodb/dumbodb/value"
)

// StorageLanguage is the query language as storage needs it: what a
// program that opens an engine for the server passes in storage.Options.
func StorageLanguage() storage.Language {
	return storage.Language{PartialFilter: indexFilters, Validator: storageValidator}
}

// indexFilters compiles an index's partial filter, for every place that
// parses index specs.
func indexFilters(filter bsoncore.Document, coll *value.Collation) (index.Matcher, error) {
	f, err := query.CompilePartialFilter(filter, coll)
	if err != nil {
		return nil, err // not a typed nil
	}
	return f, nil
}

// storageValidator compiles a collection's validator for storage's
// checks of what a merge writes.
func storageValidator(validator bsoncore.Document, coll *value.Collation) (index.Matcher, error) {
	v, err := query.CompileValidator(validator, coll)
	if err != nil {
		return nil, err
	}
	return v, nil
}
