package storage

import (
	"errors"
	"sync/atomic"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/index"
	"github.com/dumbodb/dumbodb/value"
)

// Language is what storage needs of the query language: compilers for an
// index's partial filter and for a collection's validator, which a merge
// and a conflict's resolution check documents against. The server hands
// them in (Options.Language) so that storage, the bottom layer, does not
// import the language, as index takes its filter compiler from its
// caller.
type Language struct {
	PartialFilter index.FilterCompiler
	Validator     ValidatorCompiler
}

// ValidatorCompiler compiles a collection's validator under its collation
// (nil: simple); storage only asks whether a document passes.
type ValidatorCompiler func(validator bsoncore.Document, coll *value.Collation) (index.Matcher, error)

// errNoLanguage is what an engine opened without a language answers for
// a partial filter or a validator it cannot compile.
var errNoLanguage = errors.New("storage was opened without the query language (Options.Language): cannot compile a filter")

// language is the process's: the catalog's collections are loaded deep
// below the engine, so the compilers are one per process, set by Open.
// Every engine in a process speaks the same language.
var language atomic.Pointer[Language]

// useLanguage installs l where it has both compilers.
func useLanguage(l Language) {
	if l.PartialFilter != nil && l.Validator != nil {
		language.Store(&l)
	}
}

// compilePartialFilter compiles an index's partial filter with the
// process's language.
func compilePartialFilter(filter bsoncore.Document, coll *value.Collation) (index.Matcher, error) {
	return language.Load().partialFilter(filter, coll)
}

func (l *Language) partialFilter(filter bsoncore.Document, coll *value.Collation) (index.Matcher, error) {
	if l == nil {
		return nil, errNoLanguage
	}
	return l.PartialFilter(filter, coll)
}

// compileValidator compiles a validator with the process's language.
func compileValidator(validator bsoncore.Document, coll *value.Collation) (index.Matcher, error) {
	return language.Load().validator(validator, coll)
}

func (l *Language) validator(validator bsoncore.Document, coll *value.Collation) (index.Matcher, error) {
	if l == nil {
		return nil, errNoLanguage
	}
	return l.Validator(validator, coll)
}
