package query

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/value"
)

// Validator is a collection validator: a filter every document written to
// the collection must match, compiled as mongod compiles one (without
// $text, $where, $near or $function), and able to say why a document
// fails it in the shape of mongod's errInfo.details.
type Validator struct {
	doc bsoncore.Document
	env *Env
	f   *Filter
}

// nearOps are the geo operators that need a sort; mongod refuses them in
// validators whatever the geo support.
var nearOps = map[string]bool{"$near": true, "$nearSphere": true, "$geoNear": true}

func nearNotAllowed() error {
	return mongoerr.New(mongoerr.Location5626500, "$geoNear, $near, and $nearSphere are not allowed in this context, "+
		"as these operators require sorting geospatial data. If you do not need sort, consider using $geoWithin instead. "+
		"Check out https://dochub.mongodb.org/core/near-sort-operation and https://dochub.mongodb.org/core/nearSphere-sort-operationfor more details.")
}

// CompileValidator compiles a collection's validator under the
// collection's collation (nil: simple).
func CompileValidator(doc bsoncore.Document, coll *value.Collation) (*Validator, error) {
	env, err := NewEnv(coll, nil)
	if err != nil {
		return nil, err
	}
	f := &Filter{env: env, validator: true}
	root, err := f.parseDoc(doc, true)
	if err != nil {
		return nil, err
	}
	f.root = root
	return &Validator{doc: doc, env: env, f: f}, nil
}

// Match reports whether doc passes. A $expr that fails to evaluate fails
// the document, as on mongod.
func (v *Validator) Match(doc bsoncore.Document) bool { return v.f.Match(doc) }

// Details explains why doc fails the validator: errInfo.details.
func (v *Validator) Details(doc bsoncore.Document) bsoncore.Document {
	x := &explainer{env: v.env}
	d := x.filterDoc(v.doc, doc, false)
	if d == nil {
		// A validator that fails without a clause to blame (cannot happen
		// for a document that failed; kept so that errInfo is never empty).
		return bsoncore.NewDocumentBuilder().AppendString("reason", "document did not match the validator").Build()
	}
	return d
}
