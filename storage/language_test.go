package storage

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/index"
	"github.com/dumbodb/dumbodb/query"
	"github.com/dumbodb/dumbodb/value"
)

// The tests' engines speak the query language, as the server's do.
func init() {
	useLanguage(Language{
		PartialFilter: func(f bsoncore.Document, c *value.Collation) (index.Matcher, error) {
			m, err := query.CompilePartialFilter(f, c)
			if err != nil {
				return nil, err
			}
			return m, nil
		},
		Validator: func(v bsoncore.Document, c *value.Collation) (index.Matcher, error) {
			m, err := query.CompileValidator(v, c)
			if err != nil {
				return nil, err
			}
			return m, nil
		},
	})
}

// TestWithoutLanguageFiltersAreRefused: an engine opened without the
// language refuses to compile a partial filter rather than treating every
// document as matching.
func TestWithoutLanguageFiltersAreRefused(t *testing.T) {
	var none *Language
	filter := bsoncore.NewDocumentBuilder().AppendInt32("a", 1).Build()
	if _, err := none.partialFilter(filter, nil); err != errNoLanguage {
		t.Fatalf("partial filter without a language: %v, want errNoLanguage", err)
	}
	if _, err := none.validator(filter, nil); err != errNoLanguage {
		t.Fatalf("validator without a language: %v, want errNoLanguage", err)
	}
}
